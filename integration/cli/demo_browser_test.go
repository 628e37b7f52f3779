package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/integration/internal/itest"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
)

// TestDemoBrowserSession: headless Chromium through the demo's /account
// page, against the real "tablegate demo" binary as its own auth server:
// sign in with the printed password, see the user, reload once the access
// token is inside the refresh leeway (the session is refreshed: a later
// exp), sign out, see anon/signed_out (and again after a reload), then
// sign in through the OAuth link (PKCE across real redirects).
func TestDemoBrowserSession(t *testing.T) {
	nodetest.RequireChromium(t)
	nodetest.Require(t)
	const ttl = 63 * time.Second // refresh leeway 60 s: inside it after ~3 s
	p := itest.StartDemo(t, "--refresh", "--token-ttl", ttl.String())
	v := p.Vars
	if v["USER_EMAIL"] == "" || v["USER_PASSWORD"] == "" {
		t.Fatalf("no USER_EMAIL/USER_PASSWORD in the env file: %v", v)
	}
	type view struct {
		URL    string  `json:"url"`
		Kind   string  `json:"kind"`
		Reason *string `json:"reason"`
		UserID *string `json:"userId"`
		Exp    *int64  `json:"exp"`
	}
	var out struct {
		Before, SignedIn, Reloaded, SignedOut, AfterReload, OAuth view
		CookiesAfter, CookiesAfterOAuth                           []string
		Errors                                                    []string
	}
	nodetest.Run(t, 90*time.Second, "browser-demo-session.mjs", map[string]any{
		"base": v["BASE_URL"], "email": v["USER_EMAIL"], "password": v["USER_PASSWORD"], "waitMs": 4500,
	}, &out)
	reason := func(w view) string {
		if w.Reason == nil {
			return ""
		}
		return *w.Reason
	}
	if out.Before.Kind != "anon" || reason(out.Before) != "none" {
		t.Errorf("before sign-in: %+v", out.Before)
	}
	if out.SignedIn.Kind != "user" || out.SignedIn.UserID == nil || *out.SignedIn.UserID != v["USER_ID"] || out.SignedIn.Exp == nil {
		t.Fatalf("after sign-in: %+v", out.SignedIn)
	}
	if out.Reloaded.Kind != "user" || out.Reloaded.Exp == nil || *out.Reloaded.Exp <= *out.SignedIn.Exp {
		t.Errorf("reload inside the leeway did not refresh: exp %v → %v", *out.SignedIn.Exp, out.Reloaded.Exp)
	}
	for _, w := range []view{out.SignedOut, out.AfterReload} {
		if w.Kind != "anon" || reason(w) != "signed_out" || !strings.HasSuffix(w.URL, "/account") {
			t.Errorf("after sign-out: %+v", w)
		}
	}
	if got := strings.Join(out.CookiesAfter, ","); got != v["COOKIE_NAME"]+"-signed-out" {
		t.Errorf("browser cookies after sign-out: %s", got)
	}
	if out.OAuth.Kind != "user" || out.OAuth.UserID == nil || *out.OAuth.UserID != v["USER_ID"] {
		t.Errorf("after the OAuth (PKCE) link: %+v", out.OAuth)
	}
	if got := strings.Join(out.CookiesAfterOAuth, ","); got != v["COOKIE_NAME"] {
		t.Errorf("cookies after the OAuth sign-in: %s (verifier slots and the marker must be gone)", got)
	}
	if len(out.Errors) > 0 {
		t.Errorf("page errors: %v", out.Errors)
	}
	p.Stop(t)
}
