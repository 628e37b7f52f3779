package ssr_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
)

type ssrOutput struct {
	Cookies []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"cookies"`
	SetCookie []string          `json:"set_cookie"`
	Headers   map[string]string `json:"headers"`
	Requests  []string          `json:"requests"`
}

// writeSSRSession has the real @supabase/ssr server client store a session
// whose access token is tok, and returns the cookies it set.
func writeSSRSession(t *testing.T, projectURL, tok string, exp int64, bio, encoding string) ssrOutput {
	t.Helper()
	var res ssrOutput
	runNode(t, map[string]any{"url": projectURL, "key": "sb_publishable_TESTKEY", "access_token": tok,
		"expires_at": exp, "user_id": userID, "bio": bio, "encoding": encoding}, &res, "ssr-write-session.mjs")
	return res
}

// TestSSRCookieInterop: a session cookie written by the real
// @supabase/ssr 0.12.7 resolves to the right user, single and chunked.
func TestSSRCookieInterop(t *testing.T) {
	t.Parallel()
	// The auth server's keys, not served: the resolver is given its JWKS
	// and issuer (a local Supabase's).
	auth, err := authstub.New(authstub.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const projectURL = "https://abcdefghijklmnopqrst.supabase.co"
	rv, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: projectURL, VerifierConfig: authctx.VerifierConfig{Issuer: auth.Issuer(), JWKS: auth.JWKS()}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if rv.CookieName() != "sb-abcdefghijklmnopqrst-auth-token" {
		t.Fatalf("cookie name %q", rv.CookieName())
	}
	exp := time.Now().Add(time.Hour).Unix()
	for _, tc := range []struct {
		name     string
		bio      string
		encoding string
		chunks   int // exact for 1, minimum otherwise
	}{
		{"single cookie", "", "base64url", 1},
		{"chunked", strings.Repeat("x", 1000), "base64url", 2},
		{"many chunks", strings.Repeat("y", 6000), "base64url", 5},
		{"raw encoding (URI-encoded JSON)", "", "raw", 1},
		{"raw encoding chunked", strings.Repeat("z", 1500), "raw", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The token itself carries the metadata too, as GoTrue's does.
			tok, _, err := auth.SignIn(keys.TokenSpec{Sub: userID, Email: "a@example.com",
				Extra: map[string]any{"exp": exp, "user_metadata": map[string]any{"bio": tc.bio}}})
			if err != nil {
				t.Fatal(err)
			}
			out := writeSSRSession(t, projectURL, tok, exp, tc.bio, tc.encoding)
			if (tc.chunks == 1 && len(out.Cookies) != 1) || len(out.Cookies) < tc.chunks {
				names := []string{}
				for _, c := range out.Cookies {
					names = append(names, c.Name)
				}
				t.Fatalf("@supabase/ssr wrote %d cookies %v, want %d", len(out.Cookies), names, tc.chunks)
			}
			if tc.chunks > 1 {
				t.Logf("@supabase/ssr wrote %d chunks", len(out.Cookies))
			}
			if tc.encoding == "base64url" && !strings.HasPrefix(out.Cookies[0].Value, "base64-") {
				t.Fatalf("first cookie is not base64- encoded")
			}
			// Send back what a browser would: the values of the Set-Cookie
			// lines @supabase/ssr rendered, in one Cookie header.
			r := httptest.NewRequest("GET", "/", nil)
			var pairs []string
			for _, line := range out.SetCookie {
				c, err := http.ParseSetCookie(line)
				if err != nil {
					t.Fatalf("Set-Cookie %q: %v", line, err)
				}
				if c.MaxAge < 0 || c.Value == "" {
					continue
				}
				if tc.chunks > 1 && !strings.HasPrefix(c.Name, rv.CookieName()+".") {
					t.Errorf("chunk name %q", c.Name)
				}
				pairs = append(pairs, c.Name+"="+c.Value)
			}
			r.Header.Set("Cookie", "theme=dark; "+strings.Join(pairs, "; "))
			res := rv.Resolve(r)
			if res.Auth.Kind != authctx.KindUser || res.Source != authctx.SourceCookie {
				t.Fatalf("resolved %s/%s from %s (%v)", res.Auth.Kind, res.Auth.Reason, res.Source, res.Auth.Err)
			}
			if res.Auth.User.ID != userID || res.Auth.User.Token != tok {
				t.Fatalf("user %q, token match %v", res.Auth.User.ID, res.Auth.User.Token == tok)
			}
		})
	}
}
