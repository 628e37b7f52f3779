package authflow_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
)

const (
	testUser     = "11111111-1111-4111-8111-111111111111"
	testKey      = "sb_publishable_TESTKEY"
	testPassword = "correct horse battery staple"
	testKid      = "fake-kid"
)

var (
	sessionSeq  atomic.Int64
	fakeKeyOnce sync.Once
	fakeKey     *ecdsa.PrivateKey
)

func signingKey() *ecdsa.PrivateKey {
	fakeKeyOnce.Do(func() {
		var err error
		if fakeKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
	})
	return fakeKey
}

func fakeJWKS() []byte {
	k := signingKey()
	pad := func(b []byte) []byte { out := make([]byte, 32); copy(out[32-len(b):], b); return out }
	b, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": testKid,
		"x": base64.RawURLEncoding.EncodeToString(pad(k.X.Bytes())), "y": base64.RawURLEncoding.EncodeToString(pad(k.Y.Bytes())),
		"use": "sig"}}})
	return b
}

// recorded is one request the fake received.
type recorded struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// fakeGoTrue answers like GoTrue (X-Supabase-Api-Version 2024-01-01
// error bodies) for the calls of the flows. override, when set for a path,
// replaces the default answer (error classes, slowness).
type fakeGoTrue struct {
	*httptest.Server
	t *testing.T

	mu       sync.Mutex
	calls    []recorded
	override map[string]http.HandlerFunc
	// challenges by auth code (PKCE flows started at /authorize or /otp).
	codes    map[string]string
	sessions map[string]bool // live session ids
	lastOTP  struct{ challenge, redirect string }
	ttl      time.Duration
}

func newFakeGoTrue(t *testing.T) *fakeGoTrue {
	t.Helper()
	f := &fakeGoTrue{t: t, override: map[string]http.HandlerFunc{}, codes: map[string]string{}, sessions: map[string]bool{}, ttl: time.Hour}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeGoTrue) set(path string, h http.HandlerFunc) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override[path] = h
}

func (f *fakeGoTrue) last() recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return recorded{}
	}
	return f.calls[len(f.calls)-1]
}

func (f *fakeGoTrue) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func gotrueErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Supabase-Api-Version", "2024-01-01")
	w.Header().Set("x-sb-error-code", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

// token signs an access token for the test user.
func (f *fakeGoTrue) token(sessionID string, ttl time.Duration) string {
	now := time.Now()
	c := jwt.MapClaims{"iss": f.URL + "/auth/v1", "sub": testUser, "aud": "authenticated", "exp": now.Add(ttl).Unix(),
		"iat": now.Unix(), "email": "a@example.com", "role": "authenticated", "session_id": sessionID, "is_anonymous": false}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = testKid
	s, err := tok.SignedString(signingKey())
	if err != nil {
		panic(err)
	}
	return s
}

func (f *fakeGoTrue) sessionBody() []byte {
	sid := fmt.Sprintf("%08d-2222-4222-8222-222222222222", sessionSeq.Add(1))
	f.mu.Lock()
	f.sessions[sid] = true
	ttl := f.ttl
	f.mu.Unlock()
	// GoTrue's AccessTokenResponse member order.
	b, _ := json.Marshal(struct {
		AccessToken  string         `json:"access_token"`
		TokenType    string         `json:"token_type"`
		ExpiresIn    int            `json:"expires_in"`
		ExpiresAt    int64          `json:"expires_at"`
		RefreshToken string         `json:"refresh_token"`
		User         map[string]any `json:"user"`
	}{f.token(sid, ttl), "bearer", int(ttl.Seconds()), time.Now().Add(ttl).Unix(), "rt-" + sid,
		map[string]any{"id": testUser, "aud": "authenticated", "role": "authenticated", "email": "a@example.com",
			"user_metadata": map[string]any{"name": "Zoë <a&b>"}}})
	return b
}

func (f *fakeGoTrue) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	path := strings.TrimPrefix(r.URL.Path, "/auth/v1")
	f.mu.Lock()
	f.calls = append(f.calls, recorded{r.Method, path, r.URL.RawQuery, r.Header.Clone(), string(body)})
	h := f.override[path]
	f.mu.Unlock()
	if h != nil {
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		h(w, r)
		return
	}
	if path == "/.well-known/jwks.json" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(fakeJWKS())
		return
	}
	if r.Header.Get("apikey") != testKey {
		w.WriteHeader(401)
		_, _ = io.WriteString(w, `{"message":"No API key found in request"}`)
		return
	}
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	ok := func() {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.sessionBody())
	}
	switch path {
	case "/token":
		switch r.URL.Query().Get("grant_type") {
		case "password":
			if (m["email"] == "a@example.com" || m["phone"] == "15550001111") && m["password"] == testPassword {
				ok()
				return
			}
			gotrueErr(w, 400, "invalid_credentials", "Invalid login credentials")
		case "pkce":
			verifier, _ := m["code_verifier"].(string)
			code, _ := m["auth_code"].(string)
			f.mu.Lock()
			ch, found := f.codes[code]
			delete(f.codes, code)
			f.mu.Unlock()
			sum := sha256.Sum256([]byte(verifier))
			switch {
			case !found:
				gotrueErr(w, 404, "flow_state_not_found", "invalid flow state, no valid flow state found")
			case base64.RawURLEncoding.EncodeToString(sum[:]) != ch:
				gotrueErr(w, 400, "bad_code_verifier", "code challenge does not match previously saved code verifier")
			default:
				ok()
			}
		case "refresh_token":
			rt, _ := m["refresh_token"].(string)
			f.mu.Lock()
			live := f.sessions[strings.TrimPrefix(rt, "rt-")]
			delete(f.sessions, strings.TrimPrefix(rt, "rt-"))
			f.mu.Unlock()
			if !live {
				gotrueErr(w, 400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
				return
			}
			ok()
		default:
			gotrueErr(w, 400, "validation_failed", "unsupported grant_type")
		}
	case "/otp":
		f.mu.Lock()
		f.lastOTP.challenge, _ = m["code_challenge"].(string)
		f.lastOTP.redirect = r.URL.Query().Get("redirect_to")
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{}`)
	case "/verify":
		if m["token_hash"] == "good-hash" || m["token"] == "123456" {
			ok()
			return
		}
		gotrueErr(w, 403, "otp_expired", "Token has expired or is invalid")
	case "/logout":
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		p, err := jwt.Parse(tok, func(*jwt.Token) (any, error) { return &signingKey().PublicKey, nil })
		if err != nil {
			gotrueErr(w, 401, "bad_jwt", "invalid JWT")
			return
		}
		sid, _ := p.Claims.(jwt.MapClaims)["session_id"].(string)
		f.mu.Lock()
		live := f.sessions[sid]
		delete(f.sessions, sid)
		f.mu.Unlock()
		if !live {
			gotrueErr(w, 403, "session_not_found", "Session from session_id claim in JWT does not exist")
			return
		}
		w.WriteHeader(204)
	default:
		gotrueErr(w, 404, "not_found", "no route")
	}
}

// addCode registers an auth code the fake will exchange for challenge.
func (f *fakeGoTrue) addCode(code, challenge string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[code] = challenge
}

// bundle is a test setup: the fake auth server, the flows and a resolver
// that reads the cookies they write.
type bundle struct {
	t      *testing.T
	gt     *fakeGoTrue
	flows  *authflow.Flows
	rv     *authctx.Resolver
	site   string
	cookie string
}

func setup(t *testing.T, mod func(*authflow.Config)) *bundle {
	t.Helper()
	gt := newFakeGoTrue(t)
	cfg := &authflow.Config{ProjectURL: gt.URL, PublishableKey: testKey, SiteURL: "https://app.example.com",
		RedirectURLs: []string{"https://admin.example.com/console"}, Timeout: 2 * time.Second}
	if mod != nil {
		mod(cfg)
	}
	f, err := authflow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: gt.URL, VerifierConfig: authctx.VerifierConfig{JWKS: fakeJWKS()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	return &bundle{t: t, gt: gt, flows: f, rv: rv, site: cfg.SiteURL, cookie: f.CookieName()}
}

// req builds a same-origin request carrying cookies.
func (b *bundle) req(method, target string, cookies []*http.Cookie) *http.Request {
	r := httptest.NewRequest(method, b.site+target, nil)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	for _, c := range cookies {
		r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return r
}

// jar applies Set-Cookie lines of w to cookies like a browser.
func jar(cookies []*http.Cookie, w *httptest.ResponseRecorder) []*http.Cookie {
	resp := http.Response{Header: w.Header()}
	for _, sc := range resp.Cookies() {
		out := cookies[:0:0]
		for _, c := range cookies {
			if c.Name != sc.Name {
				out = append(out, c)
			}
		}
		cookies = out
		if sc.MaxAge >= 0 && sc.Value != "" {
			cookies = append(cookies, &http.Cookie{Name: sc.Name, Value: sc.Value})
		}
	}
	return cookies
}

func names(cookies []*http.Cookie) []string {
	var out []string
	for _, c := range cookies {
		out = append(out, c.Name)
	}
	return out
}

// queryOf parses the query of a URL string.
func queryOf(t *testing.T, s string) url.Values {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// resolve resolves a request carrying cookies.
func (b *bundle) resolve(cookies []*http.Cookie) authctx.Auth {
	return b.rv.Resolve(b.req("GET", "/", cookies)).Auth
}

// signedIn returns the cookies of a fresh session.
func (b *bundle) signedIn() []*http.Cookie {
	b.t.Helper()
	w := httptest.NewRecorder()
	if _, err := b.flows.SignInWithPassword(w, b.req("POST", "/", nil), &authflow.PasswordCredentials{Email: "a@example.com", Password: testPassword}); err != nil {
		b.t.Fatal(err)
	}
	return jar(nil, w)
}
