// Package authstub is a stand-in for GoTrue (Supabase Auth) that runs in
// process: the token endpoint (refresh, password and PKCE grants),
// /authorize, /otp, /verify, /logout and the JWKS, answering with GoTrue's
// statuses, error codes and bodies. "tablegate demo" uses it as its own
// auth server, and tests use it as the auth server of the code under test.
//
// Tokens are minted with a [keys.Set] and refresh tokens rotate as GoTrue
// rotates them: a used token stays valid for the reuse interval (it
// answers with the current token); reused later, it revokes the session.
// Password grants are limited per account, flows and codes are bounded, and
// an account is sent at most one code a minute, so that the demo can face
// a network.
//
// # Scripting it in tests
//
// [Start] serves a Server on a local port for one test. [Server.Hook]
// replaces or wraps the answer of one endpoint (an error class, slowness,
// garbage), [Config.RecordCalls] and [Server.Calls] show what reached it,
// [Config.RefreshTokenFunc] makes refresh tokens predictable, and
// [Server.AddAuthCode] registers an auth code as if a browser had come back
// from /authorize.
package authstub

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/internal/ratelimit"
)

// refreshReuseInterval is GoTrue's refresh-token reuse interval as the
// Supabase CLI configures it.
const refreshReuseInterval = 10 * time.Second

// Config configures a [Server]. Every field is optional.
type Config struct {
	// Keys sign the access tokens; nil: a new ES256 key.
	Keys *keys.Set
	// Issuer is the iss of the tokens (the auth URL, ending in /auth/v1);
	// empty: keys.DefaultIssuer, or with [Start] the URL it serves at.
	Issuer string
	// APIKey is the publishable key every call but /authorize, GET /verify
	// and the JWKS must carry, in the apikey header or query parameter.
	APIKey string
	// SiteURL is where redirects may go (GoTrue's site URL and allow list:
	// redirect_to under it is kept, anything else becomes SiteURL).
	SiteURL string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// OTPInterval is how long an account waits between two codes
	// (GoTrue's SMTP max frequency); 0: 60 s; negative: no wait.
	OTPInterval time.Duration
	// PasswordAttempts is how many password grants may fail per email
	// address or phone number in a minute; 0: 10, as tablegate's own
	// sign-in routes allow; negative: no limit.
	PasswordAttempts int
	// SentFunc receives each code and magic link the server "sends";
	// nil: they are dropped.
	SentFunc func(Sent)
	// RefreshReuseInterval is how long a used refresh token still answers
	// with the session's current one (GoTrue's reuse interval); reused
	// later, it revokes the session. 0: 10 s, as the Supabase CLI
	// configures it; negative: no reuse.
	RefreshReuseInterval time.Duration
	// RefreshTokenFunc returns each new refresh token; nil: 12 random
	// characters of [a-z0-9], as GoTrue's v1 tokens. It must not repeat.
	RefreshTokenFunc func() string
	// RecordCalls keeps every request for [Server.Calls]. For tests: the
	// record grows without bound.
	RecordCalls bool
}

// Sent is a code and magic link the server "sends" for POST /otp.
type Sent struct {
	Email, Code, TokenHash, Link string
}

// Server is the stand-in auth server. Its methods are safe for concurrent
// use; it serves every endpoint as an http.Handler ([Server.ServeHTTP]) or
// registers them on a mux ([Server.Routes]).
type Server struct {
	ks           *keys.Set
	issuer       string
	apikey       string // the publishable key the gateway requires
	now          func() time.Time
	sent         func(Sent)
	refreshToken func() string
	reuse        time.Duration // RefreshReuseInterval
	record       bool
	mux          *http.ServeMux
	url          string // set by Start

	// passwordTries limits password grants per email or phone (flows.go);
	// nil: no limit.
	passwordTries *ratelimit.Limiter

	mu      sync.Mutex
	siteURL string // where redirects may go
	// otpInterval is how long an account waits between two codes; 0: no
	// wait.
	otpInterval time.Duration
	otpSentTo   map[string]time.Time  // when each address was last sent a code (otpWait)
	sessions    map[string]*session   // by refresh token (current and used ones)
	accounts    []*account            // users who can sign in (flows.go)
	flows       map[string]*flowState // PKCE auth codes
	flowsBy     map[string][]string   // codes of s.flows by client address, oldest first
	otps        map[string]*otpState  // by token hash
	tokenTTL    time.Duration         // SetTokenTTL; 0: each session's own
	hooks       map[string]HookFunc   // by path under /auth/v1
	calls       []Call
}

// session is one signed-in session.
type session struct {
	spec     keys.TokenSpec
	metadata map[string]any // user_metadata of the user
	current  string
	// used maps refresh tokens already rotated to the time of rotation.
	used    map[string]time.Time
	revoked bool
}

// New returns a server configured by cfg. It fails only when it cannot
// create a signing key.
func New(cfg Config) (*Server, error) {
	s := &Server{ks: cfg.Keys, issuer: cfg.Issuer, apikey: cfg.APIKey, now: cfg.Now, siteURL: cfg.SiteURL,
		sent: cfg.SentFunc, refreshToken: cfg.RefreshTokenFunc, reuse: cfg.RefreshReuseInterval, record: cfg.RecordCalls,
		sessions: map[string]*session{}, flows: map[string]*flowState{}, otps: map[string]*otpState{},
		otpInterval: cfg.OTPInterval, otpSentTo: map[string]time.Time{}, flowsBy: map[string][]string{},
		hooks: map[string]HookFunc{}}
	if s.ks == nil {
		k, err := keys.NewJWK(keys.ES256)
		if err != nil {
			return nil, fmt.Errorf("authstub: %w", err)
		}
		raw, _ := json.Marshal([]keys.JWK{k})
		if s.ks, err = keys.Parse(raw); err != nil {
			return nil, fmt.Errorf("authstub: %w", err)
		}
	}
	if s.issuer == "" {
		s.issuer = keys.DefaultIssuer
	}
	if s.now == nil {
		s.now = time.Now
	}
	switch {
	case s.reuse == 0:
		s.reuse = refreshReuseInterval
	case s.reuse < 0:
		s.reuse = 0
	}
	if s.refreshToken == nil {
		s.refreshToken = newRefreshToken
	}
	switch {
	case s.otpInterval == 0:
		s.otpInterval = defaultOTPInterval
	case s.otpInterval < 0:
		s.otpInterval = 0
	}
	if cfg.PasswordAttempts >= 0 {
		limit := cfg.PasswordAttempts
		if limit == 0 {
			limit = passwordAttempts
		}
		s.passwordTries = ratelimit.New(ratelimit.Config{Limit: limit, Window: passwordWindow, MaxKeys: maxPending,
			Now: func() time.Time { return s.now() }})
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /auth/v1/.well-known/jwks.json", s.hooked("/.well-known/jwks.json", s.jwks))
	s.Routes(s.mux)
	return s, nil
}

// TB is what [Start] needs of a test; a testing.TB is one.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Start serves a new server configured by cfg on a local port until the
// test ends; then it closes the connections and waits for the requests
// being answered. Without cfg.Issuer the issuer is the server's own auth
// URL, [Server.URL] + "/auth/v1"; without cfg.SiteURL redirects may go to
// [Server.URL].
func Start(tb TB, cfg Config) *Server {
	tb.Helper()
	s, err := New(cfg)
	if err != nil {
		tb.Fatalf("%v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("authstub: listen: %v", err)
	}
	// The requests being answered, so that the cleanup can wait for them.
	var mu sync.Mutex
	running := 0
	idle := sync.NewCond(&mu)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		mu.Unlock()
		defer func() {
			mu.Lock()
			running--
			idle.Broadcast()
			mu.Unlock()
		}()
		s.ServeHTTP(w, r)
	}), ReadHeaderTimeout: 10 * time.Second}
	s.url = "http://" + ln.Addr().String()
	if cfg.Issuer == "" {
		s.issuer = s.url + "/auth/v1"
	}
	if cfg.SiteURL == "" {
		s.siteURL = s.url
	}
	go func() { _ = hs.Serve(ln) }()
	tb.Cleanup(func() {
		_ = hs.Close()
		mu.Lock()
		for running > 0 {
			idle.Wait()
		}
		mu.Unlock()
	})
	return s
}

// SetSiteURL changes where redirects may go ([Config.SiteURL]), for a site
// whose address is known only once the server runs.
func (s *Server) SetSiteURL(siteURL string) {
	s.mu.Lock()
	s.siteURL = siteURL
	s.mu.Unlock()
}

// SetTokenTTL sets the lifetime of the access tokens issued from now on,
// by sign-ins and refreshes alike, in place of each account's (GoTrue's
// JWT expiry); 0 restores the accounts' own.
func (s *Server) SetTokenTTL(d time.Duration) {
	s.mu.Lock()
	s.tokenTTL = d
	s.mu.Unlock()
}

// URL is the base URL [Start] serves the server at (the project URL, with
// the endpoints under /auth/v1), or "" for a server from [New].
func (s *Server) URL() string { return s.url }

// Issuer is the iss of the tokens the server issues.
func (s *Server) Issuer() string { return s.issuer }

// Keys are the keys the server signs with.
func (s *Server) Keys() *keys.Set { return s.ks }

// JWKS is the public JWKS document the server publishes.
func (s *Server) JWKS() []byte { return s.ks.PublicJWKS() }

// ServeHTTP answers every endpoint, the JWKS
// (GET /auth/v1/.well-known/jwks.json) included.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// jwks serves the public signing keys as GoTrue does.
func (s *Server) jwks(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=600")
	_, _ = w.Write(s.JWKS())
}

// newRefreshToken returns a GoTrue v1-style refresh token: 12 characters
// of [a-z0-9].
func newRefreshToken() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	var b [12]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}

// SignIn starts a session for spec (its Issuer is the server's) as a
// sign-in would, and returns its access and refresh tokens. The refresh
// grant answers the user of the session with an empty user_metadata.
func (s *Server) SignIn(spec keys.TokenSpec) (access, refresh string, err error) {
	access, refresh, _, err = s.signIn(spec, nil)
	return access, refresh, err
}

// signIn starts a session; ttl is the lifetime of its access token.
func (s *Server) signIn(spec keys.TokenSpec, metadata map[string]any) (access, refresh string, ttl time.Duration, err error) {
	spec.Issuer = s.issuer
	if spec.SessionID == "" {
		spec.SessionID = keys.NewUUID()
	}
	s.mu.Lock()
	stored := spec
	if s.tokenTTL > 0 {
		spec.TTL = s.tokenTTL
	}
	s.mu.Unlock()
	access, err = keys.Mint(s.ks, spec, s.now())
	if err != nil {
		return "", "", 0, err
	}
	ttl = spec.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	refresh = s.refreshToken()
	s.mu.Lock()
	s.sessions[refresh] = &session{spec: stored, metadata: metadata, current: refresh, used: map[string]time.Time{}}
	s.mu.Unlock()
	return access, refresh, ttl, nil
}

// gotrueError writes an error body in the shape GoTrue sends to clients
// with X-Supabase-Api-Version 2024-01-01.
func gotrueError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Supabase-Api-Version", "2024-01-01")
	w.Header().Set("x-sb-error-code", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

// token answers POST /auth/v1/token: grant_type refresh_token here,
// password and pkce in flows.go.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if !s.requireAPIKey(w, r) {
		return
	}
	switch r.URL.Query().Get("grant_type") {
	case "refresh_token":
	case "password":
		s.passwordGrant(w, r)
		return
	case "pkce":
		s.pkceGrant(w, r)
		return
	default:
		gotrueError(w, http.StatusBadRequest, "validation_failed", "The demo supports grant_type refresh_token, password and pkce")
		return
	}
	var body struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&body); err != nil || body.RefreshToken == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_request", "error_description": "refresh_token required"})
		return
	}
	now := s.now()
	s.mu.Lock()
	sess, ok := s.sessions[body.RefreshToken]
	var refresh string
	var spec keys.TokenSpec
	var metadata map[string]any
	switch {
	case !ok:
		s.mu.Unlock()
		gotrueError(w, http.StatusBadRequest, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
		return
	case sess.revoked:
		s.mu.Unlock()
		gotrueError(w, http.StatusBadRequest, "session_not_found", "Invalid Refresh Token: No Valid Session Found")
		return
	case body.RefreshToken == sess.current:
		refresh = s.refreshToken()
		sess.used[sess.current] = now
		sess.current = refresh
		s.sessions[refresh] = sess
	default:
		usedAt := sess.used[body.RefreshToken]
		if now.Sub(usedAt) >= s.reuse {
			sess.revoked = true
			s.mu.Unlock()
			gotrueError(w, http.StatusBadRequest, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
			return
		}
		refresh = sess.current // within the reuse interval: the current token
	}
	spec, metadata = sess.spec, sess.metadata
	if s.tokenTTL > 0 {
		spec.TTL = s.tokenTTL
	}
	s.mu.Unlock()

	access, err := keys.Mint(s.ks, spec, now)
	if err != nil {
		gotrueError(w, http.StatusInternalServerError, "unexpected_failure", "could not sign the token")
		return
	}
	provider := "email"
	if spec.Anonymous {
		provider = "anonymous"
	}
	ttl := spec.TTL
	if ttl <= 0 {
		ttl = time.Hour
	}
	if metadata == nil {
		metadata = map[string]any{}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token":  access,
		"token_type":    "bearer",
		"expires_in":    int(ttl.Seconds()),
		"expires_at":    now.Add(ttl).Unix(),
		"refresh_token": refresh,
		"user": map[string]any{
			"id": spec.Sub, "aud": "authenticated", "role": "authenticated", "email": spec.Email, "phone": "",
			"app_metadata":  map[string]any{"provider": provider, "providers": []string{provider}},
			"user_metadata": metadata, "is_anonymous": spec.Anonymous,
		},
	})
}

// requireAPIKey checks the apikey of a request to one of the server's
// endpoints like the Supabase gateway: at least one apikey is required, in
// the apikey header or the apikey query parameter, and every one the
// request carries (headers and query alike) must be the project's
// publishable key. Otherwise it answers 401 in the gateway's shape and
// returns false. Every endpoint that needs a key calls it before anything
// else.
func (s *Server) requireAPIKey(w http.ResponseWriter, r *http.Request) bool {
	keys := r.Header.Values("apikey")
	q, err := url.ParseQuery(r.URL.RawQuery) // r.URL.Query() drops malformed pairs silently
	if err != nil {
		apikeyError(w, "Invalid API key", "")
		return false
	}
	keys = append(keys, q["apikey"]...)
	if len(keys) == 0 {
		apikeyError(w, "No API key found in request", "No `apikey` request header or url param was found.")
		return false
	}
	for _, k := range keys {
		if !equalKeys(k, s.apikey) {
			apikeyError(w, "Invalid API key", "")
			return false
		}
	}
	return true
}

// apikeyError writes the gateway's 401 body.
func apikeyError(w http.ResponseWriter, msg, hint string) {
	body := map[string]string{"message": msg}
	if hint != "" {
		body["hint"] = hint
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(body)
}

// equalKeys compares two secrets in constant time over their hashes.
func equalKeys(a, b string) bool {
	ha := sha256.Sum256([]byte(a))
	hb := sha256.Sum256([]byte(b))
	return hmac.Equal(ha[:], hb[:])
}
