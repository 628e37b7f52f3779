// Package ssr_test checks tablegate's session cookies (packages authctx and
// authctx/ssrcookie) against the real @supabase/ssr in node: cookies either
// side writes, the other reads, refreshes included.
package ssr_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
)

const (
	userID = "33333333-3333-4333-8333-333333333333"
	kid    = "ssr-es256"
	apiKey = "sb_publishable_TESTKEY"
	oldRT  = "oldrefresh01"
)

// newKey generates an ES256 key and returns it with its JWKS.
func newKey(t testing.TB) (*ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
		"x": base64.RawURLEncoding.EncodeToString(key.X.FillBytes(make([]byte, 32))),
		"y": base64.RawURLEncoding.EncodeToString(key.Y.FillBytes(make([]byte, 32))),
	}}})
	return key, jwks
}

// sign issues a GoTrue-shaped ES256 access token for the test user,
// issued by iss, expiring in ttl, with claims overridden by over.
func sign(t testing.TB, key *ecdsa.PrivateKey, iss string, ttl time.Duration, over map[string]any) string {
	t.Helper()
	return signAt(t, key, iss, time.Now(), ttl, over)
}

// signAt is sign with the clock at now.
func signAt(t testing.TB, key *ecdsa.PrivateKey, iss string, now time.Time, ttl time.Duration, over map[string]any) string {
	t.Helper()
	c := jwt.MapClaims{"iss": iss, "sub": userID, "aud": "authenticated", "role": "authenticated",
		"exp": now.Add(ttl).Unix(), "iat": now.Unix(), "email": "a@example.com", "is_anonymous": false,
		"session_id": "44444444-4444-4444-8444-444444444444"}
	for k, v := range over {
		c[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// authServer is a fake Supabase auth server: the JWKS of a key generated
// for the test, and a token endpoint that counts refresh calls and answers
// each with a new session.
type authServer struct {
	*httptest.Server
	t     testing.TB
	key   *ecdsa.PrivateKey
	now   func() time.Time // the clock of issued tokens and sessions
	calls atomic.Int64

	mu     sync.Mutex
	lastRT string
	bio    string // user_metadata.bio of issued sessions (size control)
	fixed  []byte // when set, the answer to every refresh
}

func newAuthServer(t testing.TB) *authServer {
	t.Helper()
	key, jwks := newKey(t)
	s := &authServer{t: t, key: key, now: time.Now}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/auth/v1/.well-known/jwks.json":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(jwks)
		case "/auth/v1/token":
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			var in struct {
				RefreshToken string `json:"refresh_token"`
			}
			_ = json.Unmarshal(body, &in)
			if r.URL.Query().Get("grant_type") == "password" {
				s.session(w, 30*time.Second, "pw") // expires within the leeway
				return
			}
			n := s.calls.Add(1)
			s.mu.Lock()
			s.lastRT = in.RefreshToken
			fixed := s.fixed
			s.mu.Unlock()
			if fixed != nil {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(fixed)
				return
			}
			s.session(w, time.Hour, fmt.Sprint(n))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) setBio(bio string) {
	s.mu.Lock()
	s.bio = bio
	s.mu.Unlock()
}

func (s *authServer) sign(ttl time.Duration) string {
	return signAt(s.t, s.key, s.URL+"/auth/v1", s.now(), ttl, nil)
}

// session writes a GoTrue token response for the test user.
func (s *authServer) session(w http.ResponseWriter, ttl time.Duration, suffix string) {
	s.mu.Lock()
	bio := s.bio
	s.mu.Unlock()
	body := gotrueSession(s.sign(ttl), ttl, s.now(), "newrefresh"+suffix,
		map[string]any{"id": userID, "aud": "authenticated", "role": "authenticated", "email": "a@example.com",
			"user_metadata": map[string]any{"bio": bio, "name": "Zoë <✓>"}, "app_metadata": map[string]any{"provider": "email"}}, true)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// serveFixed makes the server answer every refresh with body.
func (s *authServer) serveFixed(body []byte) {
	s.mu.Lock()
	s.fixed = body
	s.mu.Unlock()
}

// gotrueSession encodes a GoTrue token response in GoTrue's field order;
// escapeHTML escapes <, > and & as Go's encoder (and GoTrue) does.
func gotrueSession(accessToken string, ttl time.Duration, now time.Time, refreshToken string, user map[string]any, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(struct {
		AccessToken  string         `json:"access_token"`
		TokenType    string         `json:"token_type"`
		ExpiresIn    int            `json:"expires_in"`
		ExpiresAt    int64          `json:"expires_at"`
		RefreshToken string         `json:"refresh_token"`
		User         map[string]any `json:"user"`
	}{accessToken, "bearer", int(ttl / time.Second), now.Add(ttl).Unix(), refreshToken, user})
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// refreshBundle is one refresh scenario: the fake auth server and a
// resolver that refreshes against it.
type refreshBundle struct {
	t    *testing.T
	auth *authServer
	rv   *authctx.Resolver
	name string
}

// refreshSetup starts the fake auth server and a refreshing resolver
// against it; mod, when not nil, adjusts the resolver's config.
func refreshSetup(t *testing.T, mod func(*authctx.Config)) *refreshBundle {
	t.Helper()
	return refreshSetupAt(t, nil, mod)
}

// refreshSetupAt is refreshSetup with the auth server and the resolver on
// the clock now (nil: the real one). A clock ahead of the real one makes a
// session the resolver refreshes one that node, on the real clock, keeps.
func refreshSetupAt(t *testing.T, now func() time.Time, mod func(*authctx.Config)) *refreshBundle {
	t.Helper()
	b := &refreshBundle{t: t, auth: newAuthServer(t)}
	if now != nil {
		b.auth.now = now
	}
	// RefreshWait equal to the timeout: a still-valid token inside the
	// leeway is refreshed in the same response.
	cfg := &authctx.Config{ProjectURL: b.auth.URL, PublishableKeys: []string{apiKey},
		Refresh: true, RefreshWait: authctx.DefaultRefreshTimeout}
	if now != nil {
		cfg.Now = now
	}
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
// fake auth server, already in JSON.stringify form (no characters that
// Go's encoder escapes), so the stored cookie value is its plain base64url.
func (b *refreshBundle) fixedSession(bio string) []byte {
	return gotrueSession(b.auth.sign(time.Hour), time.Hour, b.auth.now(), "fixedrefresh",
		map[string]any{"id": userID, "user_metadata": map[string]any{"bio": bio, "name": "Zoë ✓"}}, false)
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
