// Package ssr_test checks tablegate's session cookies (packages authctx and
// authctx/ssrcookie) against the real @supabase/ssr in node: cookies either
// side writes, the other reads, refreshes included.
package ssr_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
)

const (
	userID = "33333333-3333-4333-8333-333333333333"
	apiKey = "sb_publishable_TESTKEY"
	oldRT  = "oldrefresh01"
)

// authServer is the auth server of the refresh tests: internal/authstub
// with the test user (a@example.com, password "pw") and the session the
// test cookies carry, whose refresh token is oldRT; the refresh tokens it
// issues next are newrefresh1, newrefresh2 and so on. It records every
// call.
type authServer struct {
	*authstub.Server
	t   testing.TB
	now func() time.Time // the clock of issued tokens and sessions
}

// newAuthServer starts the auth server on the clock now; bio is the
// user_metadata.bio of the user's sessions (size control).
func newAuthServer(t testing.TB, now func() time.Time, bio string) *authServer {
	t.Helper()
	var issued atomic.Int64
	s := &authServer{t: t, now: now}
	s.Server = authstub.Start(t, authstub.Config{APIKey: apiKey, Now: now, RecordCalls: true, RefreshTokenFunc: func() string {
		if n := issued.Add(1) - 1; n > 0 {
			return fmt.Sprint("newrefresh", n)
		}
		return oldRT
	}})
	s.AddAccount(authstub.Account{Token: keys.TokenSpec{Sub: userID, TTL: time.Hour}, Email: "a@example.com", Password: "pw",
		UserMetadata: map[string]any{"bio": bio, "name": "Zoë <✓>"}})
	// The session of the test cookies (oldRT), signed in with the
	// password like a browser.
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/auth/v1/token?grant_type=password", strings.NewReader(`{"email":"a@example.com","password":"pw"}`))
	req.Header.Set("apikey", apiKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password sign-in: %d", resp.StatusCode)
	}
	return s
}

// refreshes returns the refresh tokens the refresh grants the server
// received sent, oldest first.
func (s *authServer) refreshes() []string {
	var out []string
	for _, c := range s.Calls() {
		if c.Path != "/token" || c.Query != "grant_type=refresh_token" {
			continue
		}
		var in struct {
			RefreshToken string `json:"refresh_token"`
		}
		if err := json.Unmarshal([]byte(c.Body), &in); err != nil {
			s.t.Fatalf("refresh grant body %q: %v", c.Body, err)
		}
		out = append(out, in.RefreshToken)
	}
	return out
}

// sign issues an access token of the server for the test user, expiring
// in ttl.
func (s *authServer) sign(ttl time.Duration) string {
	tok, err := keys.Mint(s.Keys(), keys.TokenSpec{Sub: userID, Email: "a@example.com", Issuer: s.Issuer(), TTL: ttl,
		SessionID: "44444444-4444-4444-8444-444444444444"}, s.now())
	if err != nil {
		s.t.Fatal(err)
	}
	return tok
}

// serveFixed makes the server answer every refresh grant with body.
func (s *authServer) serveFixed(body []byte) {
	s.Hook("/token", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.URL.Query().Get("grant_type") != "refresh_token" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// refreshBundle is one refresh scenario: the auth server and a
// resolver that refreshes against it.
type refreshBundle struct {
	t    *testing.T
	auth *authServer
	rv   *authctx.Resolver
	name string
}

// refreshSetup starts the auth server (bio as the user_metadata.bio of
// the user's sessions) and a refreshing resolver against it; mod, when
// not nil, adjusts the resolver's config.
func refreshSetup(t *testing.T, bio string, mod func(*authctx.Config)) *refreshBundle {
	t.Helper()
	return refreshSetupAt(t, nil, bio, mod)
}

// refreshSetupAt is refreshSetup with the auth server and the resolver on
// the clock now (nil: the real one). A clock ahead of the real one makes a
// session the resolver refreshes one that node, on the real clock, keeps.
func refreshSetupAt(t *testing.T, now func() time.Time, bio string, mod func(*authctx.Config)) *refreshBundle {
	t.Helper()
	if now == nil {
		now = time.Now
	}
	b := &refreshBundle{t: t, auth: newAuthServer(t, now, bio)}
	// RefreshWait equal to the timeout: a still-valid token inside the
	// leeway is refreshed in the same response.
	cfg := &authctx.Config{ProjectURL: b.auth.URL(), PublishableKeys: []string{apiKey},
		Refresh: true, RefreshWait: authctx.DefaultRefreshTimeout, VerifierConfig: authctx.VerifierConfig{Now: now}}
	if mod != nil {
		mod(cfg)
	}
	rv, err := authctx.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(rv.Close)
	b.rv, b.name = rv, rv.CookieName()
	return b
}

// cookies is a stored session whose access token expires in ttl, written
// by ssrcookie as @supabase/ssr writes it, followed by extra.
func (b *refreshBundle) cookies(ttl time.Duration, extra ...*http.Cookie) []*http.Cookie {
	b.t.Helper()
	raw, err := ssrcookie.EncodeJSON(map[string]any{"access_token": b.auth.sign(ttl), "token_type": "bearer",
		"expires_in": 3600, "expires_at": b.auth.now().Add(ttl).Unix(), "refresh_token": oldRT,
		"user": map[string]any{"id": userID, "user_metadata": map[string]any{"bio": strings.Repeat("b", 3000)}}})
	if err != nil {
		b.t.Fatal(err)
	}
	_, cs := ssrcookie.Write(b.name, raw, nil, ssrcookie.Options{})
	return append(cs, extra...)
}

// fixedSession is a GoTrue token response with an access token of the
// auth server, already in JSON.stringify form (no characters that Go's
// encoder escapes), so the stored cookie value is its plain base64url.
func (b *refreshBundle) fixedSession(bio string) []byte {
	body, err := json.Marshal(map[string]any{"access_token": b.auth.sign(time.Hour), "token_type": "bearer", "expires_in": 3600,
		"expires_at": b.auth.now().Add(time.Hour).Unix(), "refresh_token": "fixedrefresh",
		"user": map[string]any{"id": userID, "user_metadata": map[string]any{"bio": bio, "name": "Zoë ✓"}}})
	if err != nil {
		b.t.Fatal(err)
	}
	return body
}

// assertNewSession checks a successful refresh: the user with the new
// token, the new session written in @supabase/ssr's format with default
// options, no-store headers, and RequestCookies carrying the new session.
func (b *refreshBundle) assertNewSession(res authctx.Result, wantRT string) {
	t := b.t
	t.Helper()
	if res.Auth.Kind != authctx.KindUser || res.Auth.User.ID != userID {
		t.Fatalf("auth = %+v, want user", res.Auth)
	}
	h := applied(res)
	if h.Get("Cache-Control") != "private, no-cache, no-store, must-revalidate, max-age=0" || h.Get("Expires") != "0" || h.Get("Pragma") != "no-cache" {
		t.Fatalf("cache headers %v", h)
	}
	var sent []*http.Cookie
	for _, c := range parsedSetCookies(t, h) {
		if c.MaxAge > 0 {
			if c.MaxAge != ssrcookie.MaxAge || c.Path != "/" || c.SameSite != http.SameSiteLaxMode || c.HttpOnly || c.Secure || c.Domain != "" {
				t.Fatalf("cookie options of %s: %+v", c.Name, c)
			}
			sent = append(sent, &http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	raw, err := ssrcookie.Read(sent, b.name)
	if err != nil {
		t.Fatalf("Set-Cookie does not hold a session: %v", err)
	}
	s, err := ssrcookie.ParseSession(raw)
	if err != nil || s.RefreshToken != wantRT || s.AccessToken != res.Auth.User.Token {
		t.Fatalf("written session %v: refresh %q (want %q), access token equal %v", err, s.RefreshToken, wantRT, s.AccessToken == res.Auth.User.Token)
	}
	seen, err := ssrcookie.Read(res.RequestCookies, b.name)
	if err != nil || string(seen) != string(raw) || !res.CookiesChanged {
		t.Fatalf("RequestCookies do not carry the new session: %v", err)
	}
}

// request is a GET carrying cookies.
func request(cookies []*http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range cookies {
		r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return r
}

// applied runs Result.Apply and returns the response header.
func applied(res authctx.Result) http.Header {
	rec := httptest.NewRecorder()
	res.Apply(rec)
	return rec.Header()
}

// parsedSetCookies parses the Set-Cookie lines of h.
func parsedSetCookies(t *testing.T, h http.Header) []*http.Cookie {
	t.Helper()
	var out []*http.Cookie
	for _, line := range h.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil {
			t.Fatalf("bad Set-Cookie %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

// runNode runs a script of integration/node with input as JSON on stdin
// and decodes its output into out.
func runNode(t *testing.T, input, out any, script string) {
	t.Helper()
	nodetest.Run(t, 60*time.Second, script, input, out)
}
