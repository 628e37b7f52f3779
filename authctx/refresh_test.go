package authctx

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
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

	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
)

const (
	rfUserID = "33333333-3333-4333-8333-333333333333"
	rfAPIKey = "sb_publishable_TESTKEY"
	noStore  = "private, no-cache, no-store, must-revalidate, max-age=0"
	rfOldRT  = "oldrefresh01"
	// rfTimeout is the refresh timeout of the failure tests: long enough
	// that a loaded machine still delivers the call to the auth server
	// before it, short enough to keep the "timeout" case quick.
	rfTimeout = time.Second
)

// rfAuthServer is the auth server of the refresh tests: internal/authstub
// with the test user (a@example.com, password "pw") and the session the
// test cookies carry, whose refresh token is rfOldRT; the refresh tokens
// it issues next are newrefresh1, newrefresh2 and so on. It counts the
// refresh grants and keeps the last one; handle, when set, answers them
// (next is the stub's own answer).
type rfAuthServer struct {
	*authstub.Server
	t     testing.TB
	clock *rfClock
	calls atomic.Int64

	mu      sync.Mutex
	handle  authstub.HookFunc
	lastReq *http.Request
	lastRT  string
}

// rfNewAuthServer starts the auth server; bio is the user_metadata.bio of
// the user's sessions (size control).
func rfNewAuthServer(t testing.TB, clock *rfClock, bio string) *rfAuthServer {
	t.Helper()
	var issued atomic.Int64
	cfg := authstub.Config{APIKey: rfAPIKey,
		RefreshTokenFunc: func() string {
			if n := issued.Add(1) - 1; n > 0 {
				return fmt.Sprint("newrefresh", n)
			}
			return rfOldRT
		},
		// A reused refresh token answers the current one however far a
		// test moves the clock: the resolver's caching is under test here,
		// GoTrue's rotation in internal/authstub.
		RefreshReuseInterval: 24 * time.Hour,
	}
	if clock != nil {
		cfg.Now = clock.Now
	}
	s := &rfAuthServer{Server: authstub.Start(t, cfg), t: t, clock: clock}
	s.AddAccount(authstub.Account{Token: keys.TokenSpec{Sub: rfUserID, TTL: time.Hour}, Email: "a@example.com", Password: "pw",
		UserMetadata: map[string]any{"bio": bio, "name": "Zoë <✓>"}})
	s.Hook("/token", func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.URL.Query().Get("grant_type") != "refresh_token" {
			next.ServeHTTP(w, r)
			return
		}
		var in struct {
			RefreshToken string `json:"refresh_token"`
		}
		json.NewDecoder(r.Body).Decode(&in)
		s.calls.Add(1)
		s.mu.Lock()
		s.lastReq, s.lastRT = r.Clone(r.Context()), in.RefreshToken
		h := s.handle
		s.mu.Unlock()
		if h == nil {
			h = func(w http.ResponseWriter, r *http.Request, next http.Handler) { next.ServeHTTP(w, r) }
		}
		h(w, r, next)
	})
	// The session of the test cookies (rfOldRT), signed in with the
	// password like a browser.
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/auth/v1/token?grant_type=password", strings.NewReader(`{"email":"a@example.com","password":"pw"}`))
	req.Header.Set("apikey", rfAPIKey)
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

// setHandler makes h answer the refresh grants; nil: the stub answers.
func (s *rfAuthServer) setHandler(h authstub.HookFunc) {
	s.mu.Lock()
	s.handle = h
	s.mu.Unlock()
}

func (s *rfAuthServer) now() time.Time {
	if s.clock != nil {
		return s.clock.Now()
	}
	return time.Now()
}

// kid is the kid of the server's signing key.
func (s *rfAuthServer) kid() string {
	k, err := s.Keys().Signer()
	if err != nil {
		s.t.Fatal(err)
	}
	return k.Kid
}

// sign issues an access token of the server for the test user expiring in
// ttl (negative: already expired); over adds claims.
func (s *rfAuthServer) sign(ttl time.Duration, over map[string]any) string {
	// Issued an hour before it expires, so that it may have expired already.
	out, err := keys.Mint(s.Keys(), keys.TokenSpec{Sub: rfUserID, Email: "a@example.com", Issuer: s.Issuer(), TTL: time.Hour,
		SessionID: "44444444-4444-4444-8444-444444444444", Extra: over}, s.now().Add(ttl-time.Hour))
	if err != nil {
		s.t.Fatal(err)
	}
	return out
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

// rfBundle is one refresh scenario: clock, auth server, resolver.
type rfBundle struct {
	t     *testing.T
	clock *rfClock
	auth  *rfAuthServer
	rv    *Resolver
	name  string
}

func rfSetup(t *testing.T, real bool, mod func(*Config)) *rfBundle {
	t.Helper()
	return rfSetupBio(t, real, "", mod)
}

// rfSetupBio is rfSetup with bio as the user_metadata.bio of the user's
// sessions.
func rfSetupBio(t *testing.T, real bool, bio string, mod func(*Config)) *rfBundle {
	t.Helper()
	b := &rfBundle{t: t}
	if !real {
		b.clock = &rfClock{t: time.Unix(1900000000, 0)}
	}
	b.auth = rfNewAuthServer(t, b.clock, bio)
	// The default timeout (5 s) keeps a loaded test machine from turning
	// a slow success into a failure; failure tests shorten it.
	// RefreshWait equal to the timeout: these tests expect a refresh of a
	// still-valid token in the same response (the background path has
	// its own tests in refresh_backoff_test.go).
	cfg := Config{ProjectURL: b.auth.URL(), PublishableKeys: []string{rfAPIKey}, Refresh: true, RefreshWait: DefaultRefreshTimeout}
	if b.clock != nil {
		cfg.Now = b.clock.Now
	}
	if mod != nil {
		mod(&cfg)
	}
	rv, err := New(context.Background(), &cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(rv.Close)
	b.rv = rv
	b.name = rv.CookieName()
	return b
}

// cookieSession is a stored session whose access token expires in ttl
// (negative: already expired), written by ssrcookie like @supabase/ssr.
func (b *rfBundle) cookies(ttl time.Duration, extra ...*http.Cookie) []*http.Cookie {
	b.t.Helper()
	now := b.auth.now()
	raw, err := ssrcookie.EncodeJSON(map[string]any{"access_token": b.auth.sign(ttl, nil), "token_type": "bearer",
		"expires_in": 3600, "expires_at": now.Add(ttl).Unix(), "refresh_token": rfOldRT,
		"user": map[string]any{"id": rfUserID, "user_metadata": map[string]any{"bio": strings.Repeat("b", 3000)}}})
	if err != nil {
		b.t.Fatal(err)
	}
	_, cs := ssrcookie.Write(b.name, raw, nil, ssrcookie.Options{})
	return append(cs, extra...)
}

func rfRequest(cookies []*http.Cookie) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range cookies {
		r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return r
}

// applied runs Result.Apply and returns the response header.
func applied(res Result) http.Header {
	rec := httptest.NewRecorder()
	res.Apply(rec)
	return rec.Header()
}

// parsedSetCookies parses the Set-Cookie lines Apply wrote.
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

// assertNothingWritten checks a response carries no cookie and no cache
// header from resolution.
func assertNothingWritten(t *testing.T, res Result) {
	t.Helper()
	h := applied(res)
	if len(h.Values("Set-Cookie")) != 0 || h.Get("Cache-Control") != "" || res.CookiesChanged || len(res.SetCookies) != 0 {
		t.Fatalf("resolution wrote %v (changed %v)", h, res.CookiesChanged)
	}
}

// assertNewSession checks a successful refresh: user with the new token,
// the new session written in @supabase/ssr format with default options,
// no-store headers, and RequestCookies carrying the new session.
func (b *rfBundle) assertNewSession(res Result, wantRT string) {
	t := b.t
	t.Helper()
	if res.Auth.Kind != KindUser || res.Auth.User.ID != rfUserID {
		t.Fatalf("auth = %+v, want user", res.Auth)
	}
	h := applied(res)
	if h.Get("Cache-Control") != noStore || h.Get("Expires") != "0" || h.Get("Pragma") != "no-cache" {
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

// A burst of 100 requests with one expiring session makes one
// refresh call; a second burst within 10 s makes none; after 10 s, one.
func TestRefreshBurstSharesOneCall(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, nil)
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		time.Sleep(50 * time.Millisecond) // sleep: the auth server answers slowly on purpose (keep the call in flight while the burst joins)
		next.ServeHTTP(w, r)
	})
	cookies := b.cookies(30 * time.Second) // within the 60 s leeway
	burst := func() []Result {
		out := make([]Result, 100)
		var wg sync.WaitGroup
		for i := range out {
			wg.Add(1)
			go func() { defer wg.Done(); out[i] = b.rv.Resolve(rfRequest(cookies)) }()
		}
		wg.Wait()
		return out
	}
	for i, res := range burst() {
		if i < 3 || i == 99 {
			b.assertNewSession(res, "newrefresh1")
		} else if res.Auth.Kind != KindUser {
			t.Fatalf("request %d: %+v", i, res.Auth)
		}
	}
	if n := b.auth.calls.Load(); n != 1 {
		t.Fatalf("first burst made %d refresh calls, want 1", n)
	}
	b.clock.Add(9 * time.Second)
	second := burst()
	if n := b.auth.calls.Load(); n != 1 {
		t.Fatalf("second burst within 10 s made %d more calls, want 0", n-1)
	}
	b.assertNewSession(second[0], "newrefresh1")
	b.clock.Add(1 * time.Second)
	third := burst()
	if n := b.auth.calls.Load(); n != 2 {
		t.Fatalf("after 10 s: %d calls in total, want 2", n)
	}
	// The old token again: the auth server answers its current session
	// (GoTrue within the reuse interval), with a new access token.
	b.assertNewSession(third[0], "newrefresh1")
	if third[0].Auth.User.Token == second[0].Auth.User.Token {
		t.Fatal("the call after 10 s brought no new access token")
	}

	// The request was exactly what auth-js sends.
	b.auth.mu.Lock()
	req, rt := b.auth.lastReq, b.auth.lastRT
	b.auth.mu.Unlock()
	if req.Method != http.MethodPost || req.URL.RawQuery != "grant_type=refresh_token" || rt != rfOldRT ||
		req.Header.Get("Apikey") != rfAPIKey || req.Header.Get("Authorization") != "Bearer "+rfAPIKey ||
		req.Header.Get("Content-Type") != "application/json;charset=UTF-8" || req.Header.Get("X-Supabase-Api-Version") != "2024-01-01" {
		t.Fatalf("refresh request %s %s headers %v", req.Method, req.URL, req.Header)
	}
}

// A valid token outside the leeway: no network call, no cookie.
func TestRefreshValidTokenOutsideLeeway(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, nil)
	res := b.rv.Resolve(rfRequest(b.cookies(61 * time.Second)))
	if res.Auth.Kind != KindUser {
		t.Fatalf("auth %+v", res.Auth)
	}
	assertNothingWritten(t, res)
	if b.auth.calls.Load() != 0 {
		t.Fatal("a valid token caused a refresh call")
	}
}

// Rejection signs out, clears every chunk (stray .5 included) and
// is reused for 10 s.
func TestRefreshRejectedSignsOut(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, nil)
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("X-Supabase-Api-Version", "2024-01-01")
		w.WriteHeader(400)
		io.WriteString(w, `{"code":"refresh_token_already_used","message":"Invalid Refresh Token: Already Used"}`)
	})
	for _, ttl := range []time.Duration{30 * time.Second, -10 * time.Minute} {
		cookies := b.cookies(ttl, &http.Cookie{Name: b.name + ".5", Value: "stray"}, &http.Cookie{Name: "theme", Value: "dark"})
		res := b.rv.Resolve(rfRequest(cookies))
		if res.Auth.Kind != KindAnon || res.Auth.Reason != ReasonSignedOut {
			t.Fatalf("ttl %v: auth %+v, want anon/signed_out", ttl, res.Auth)
		}
		h := applied(res)
		if h.Get("Cache-Control") != noStore {
			t.Fatalf("Cache-Control %q", h.Get("Cache-Control"))
		}
		var deleted []string
		marker := false
		for _, c := range parsedSetCookies(t, h) {
			if c.Name == SignedOutCookieName(b.name) && c.Value == "1" && c.HttpOnly {
				marker = true // the sign-out marker (signed_out.go)
				continue
			}
			if c.MaxAge >= 0 || c.Value != "" {
				t.Fatalf("not a delete: %+v", c)
			}
			deleted = append(deleted, c.Name)
		}
		if !marker {
			t.Fatalf("no sign-out marker set")
		}
		want := []string{b.name + ".0", b.name + ".1", b.name + ".5"}
		if strings.Join(deleted, ",") != strings.Join(want, ",") {
			t.Fatalf("deleted %v, want %v", deleted, want)
		}
		if len(res.RequestCookies) != 1 || res.RequestCookies[0].Name != "theme" {
			t.Fatalf("RequestCookies %v", res.RequestCookies)
		}
	}
	if n := b.auth.calls.Load(); n != 1 {
		t.Fatalf("%d calls: the rejection was not reused", n)
	}
	b.clock.Add(RefreshResultTTL)
	b.rv.Resolve(rfRequest(b.cookies(-time.Minute)))
	if n := b.auth.calls.Load(); n != 2 {
		t.Fatalf("after 10 s: %d calls, want 2", n)
	}
}

// Network failure, 5xx, timeout and bad answers keep the session:
// user while the old token is unexpired, else anon/refresh_failed; no
// cookie, no cache header; each ends within the refresh timeout.
func TestRefreshFailuresKeepSession(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	type handler = authstub.HookFunc
	status := func(code int, body string) handler {
		return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
			w.WriteHeader(code)
			io.WriteString(w, body)
		}
	}
	cases := []struct {
		name    string
		handler func(s *rfAuthServer) handler
		network bool
	}{
		{name: "network failure", network: true},
		{name: "503", handler: func(*rfAuthServer) handler { return status(503, "upstream down") }},
		{name: "500 json", handler: func(*rfAuthServer) handler {
			return status(500, `{"code":500,"error_code":"unexpected_failure","msg":"x"}`)
		}},
		{name: "429", handler: func(*rfAuthServer) handler { return status(429, `{"code":"over_request_rate_limit"}`) }},
		{name: "timeout", handler: func(*rfAuthServer) handler {
			return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
				select {
				case <-r.Context().Done():
				case <-time.After(30 * time.Second): // far beyond rfTimeout + slack
				}
			}
		}},
		{name: "non-JSON 200", handler: func(*rfAuthServer) handler { return status(200, "<html>hello</html>") }},
		{name: "session missing fields", handler: func(*rfAuthServer) handler {
			return status(200, `{"access_token":"x","token_type":"bearer","expires_in":3600}`)
		}},
		{name: "token that does not verify", handler: func(s *rfAuthServer) handler {
			return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
				other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
				tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": rfUserID, "exp": s.now().Add(time.Hour).Unix()})
				tok.Header["kid"] = s.kid()
				signed, _ := tok.SignedString(other)
				fmt.Fprintf(w, `{"access_token":%q,"token_type":"bearer","expires_in":3600,"refresh_token":"newrefreshX"}`, signed)
			}
		}},
		{name: "huge body", handler: func(*rfAuthServer) handler {
			return func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
				io.WriteString(w, `{"access_token":"`)
				chunk := strings.Repeat("a", 64<<10)
				for i := 0; i < 64; i++ { // 4 MiB
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
				io.WriteString(w, `","refresh_token":"r","expires_in":1}`)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := rfSetup(t, false, func(c *Config) {
				c.RefreshTimeout = rfTimeout
				c.RefreshWait = rfTimeout
				if tc.network {
					// The JWKS still comes from the live auth server; only the
					// token endpoint is unreachable.
					c.JWKSURL = c.ProjectURL + "/auth/v1/.well-known/jwks.json"
					c.Issuer = c.ProjectURL + "/auth/v1"
					c.ProjectURL = closedURL
				}
			})
			if !tc.network {
				b.auth.setHandler(tc.handler(b.auth))
			}
			for _, ttl := range []time.Duration{30 * time.Second, -10 * time.Minute} {
				start := time.Now()
				res := b.rv.Resolve(rfRequest(b.cookies(ttl)))
				if d := time.Since(start); d > rfTimeout+3*time.Second {
					t.Fatalf("ttl %v: resolution took %v", ttl, d)
				}
				if ttl > 0 && (res.Auth.Kind != KindUser || res.Auth.User.ID != rfUserID) {
					t.Fatalf("unexpired: auth %+v, want the old user", res.Auth)
				}
				if ttl < 0 && (res.Auth.Kind != KindAnon || res.Auth.Reason != ReasonRefreshFailed) {
					t.Fatalf("expired: auth %+v, want anon/refresh_failed", res.Auth)
				}
				assertNothingWritten(t, res)
			}
			// The failure is remembered: the second resolution, at once,
			// makes no call; after the backoff the next one calls again.
			if !tc.network && b.auth.calls.Load() != 1 {
				t.Fatalf("%d calls: a failure must be remembered for its backoff", b.auth.calls.Load())
			}
			b.clock.Add(RefreshBackoffMax + time.Second)
			b.rv.Resolve(rfRequest(b.cookies(30 * time.Second)))
			if !tc.network {
				// The token is still valid: Resolve waits at most
				// RefreshWait and the call goes on in the background, so
				// it may reach the server after Resolve returned.
				deadline := time.Now().Add(10 * time.Second)
				for b.auth.calls.Load() < 2 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait around it
				}
				if n := b.auth.calls.Load(); n != 2 {
					t.Fatalf("%d calls after the backoff, want 2", n)
				}
			}
		})
	}
}

// rfTenantClaims is a claims schema that the test tokens fail (no tenant_id).
type rfTenantClaims struct {
	TenantID string `json:"tenant_id"`
}

// A verified token whose claims fail the schema is invalid/claims,
// and no refresh is attempted, even within the leeway.
func TestRefreshNotAttemptedOnClaimsFailure(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, func(c *Config) { c.Claims = MustClaimsOf[rfTenantClaims]() })
	res := b.rv.Resolve(rfRequest(b.cookies(30 * time.Second)))
	if res.Auth.Kind != KindInvalid || res.Auth.Reason != ReasonClaims {
		t.Fatalf("auth %+v, want invalid/claims", res.Auth)
	}
	assertNothingWritten(t, res)
	if b.auth.calls.Load() != 0 {
		t.Fatal("refresh attempted for a claims failure")
	}
}

// A new token that verifies but fails the claims schema: invalid/claims;
// the new session is still stored (the old refresh token is spent).
func TestRefreshNewTokenFailsClaims(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, func(c *Config) { c.Claims = MustClaimsOf[rfTenantClaims]() })
	// The auth server's new token has no tenant_id either.
	res := b.rv.Resolve(rfRequest(b.cookies(-10 * time.Minute))) // expired: verification fails first, so refresh runs
	if res.Auth.Kind != KindInvalid || res.Auth.Reason != ReasonClaims {
		t.Fatalf("auth %+v, want invalid/claims", res.Auth)
	}
	if applied(res).Get("Cache-Control") != noStore || len(res.SetCookies) == 0 {
		t.Fatal("the new session was not written")
	}
}

func TestRefreshConfigErrors(t *testing.T) {
	t.Parallel()
	auth := rfNewAuthServer(t, nil, "")
	if _, err := New(context.Background(), &Config{ProjectURL: auth.URL(), Refresh: true}); err == nil || !strings.Contains(err.Error(), "publishable key") {
		t.Fatalf("no key: %v", err)
	}
	rv, err := New(context.Background(), &Config{ProjectURL: auth.URL(), PublishableKeys: []string{"k"}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	// Refresh off: an expired cookie session is anon/expired, no call.
	b := &rfBundle{t: t, auth: auth, rv: rv, name: rv.CookieName()}
	res := rv.Resolve(rfRequest(b.cookies(-10 * time.Minute)))
	if res.Auth.Kind != KindAnon || res.Auth.Reason != ReasonExpired || auth.calls.Load() != 0 {
		t.Fatalf("refresh off: %+v, %d calls", res.Auth, auth.calls.Load())
	}
	assertNothingWritten(t, res)
}

// The middleware hands the handler the refreshed cookies and writes
// Set-Cookie and Cache-Control on the response.
func TestRefreshThroughMiddleware(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, nil)
	var seen []byte
	h := b.rv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = ssrcookie.Read(r.Cookies(), b.name)
		io.WriteString(w, "ok")
	}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, rfRequest(b.cookies(-time.Minute)))
	s, err := ssrcookie.ParseSession(seen)
	if err != nil || s.RefreshToken != "newrefresh1" {
		t.Fatalf("handler saw %v %v", s, err)
	}
	if rec.Header().Get("Cache-Control") != noStore || len(rec.Header().Values("Set-Cookie")) == 0 {
		t.Fatalf("response header %v", rec.Header())
	}
}

// Success: chunks the new value no longer needs are expired (the old
// chunked session and a stray .5), the new session set under the bare
// name, other cookies untouched.
func TestRefreshExpiresStaleChunks(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, nil)
	cookies := b.cookies(-time.Minute, &http.Cookie{Name: b.name + ".5", Value: "stray"}, &http.Cookie{Name: "theme", Value: "dark"})
	res := b.rv.Resolve(rfRequest(cookies))
	b.assertNewSession(res, "newrefresh1")
	var got []string
	for _, c := range parsedSetCookies(t, applied(res)) {
		kind := "set"
		if c.MaxAge < 0 {
			kind = "delete"
		}
		got = append(got, kind+" "+c.Name)
	}
	want := []string{"delete " + b.name + ".0", "delete " + b.name + ".1", "delete " + b.name + ".5", "set " + b.name}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Set-Cookie order %v, want %v", got, want)
	}
	var names []string
	for _, c := range res.RequestCookies {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "theme,"+b.name {
		t.Fatalf("RequestCookies %v", names)
	}
}
