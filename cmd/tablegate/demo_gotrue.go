package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/tablegate/tablegate/internal/ratelimit"
)

// refreshReuseInterval is GoTrue's refresh-token reuse interval as the
// Supabase CLI configures it.
const refreshReuseInterval = 10 * time.Second

// demoAuthServer is the demo's stand-in for GoTrue's refresh grant
// (POST /auth/v1/token?grant_type=refresh_token), so that cookie sessions
// refresh without a Supabase stack. It issues access tokens with the demo's
// signing keys and rotates refresh tokens like GoTrue: a used token stays
// valid for the reuse interval (it answers with the current token); after
// that, reusing it revokes the session.
type demoAuthServer struct {
	ks     *keySet
	issuer string
	apikey string // the publishable key the gateway requires
	now    func() time.Time

	// siteURL is where redirects may go (GoTrue's site URL and allow list).
	siteURL string
	// sent receives the codes and magic links the demo "sends" (printed).
	sent func(sentOTP)
	// otpInterval is how long an account waits between two codes (GoTrue's
	// SMTP max frequency, 60 s by default); 0: no wait. Read under mu.
	otpInterval time.Duration
	otpSentTo   map[string]time.Time // when each address was last sent a code (otpWait)
	// passwordTries limits password grants per email or phone
	// (demo_gotrue_flows.go).
	passwordTries *ratelimit.Limiter

	mu       sync.Mutex
	sessions map[string]*demoSession // by refresh token (current and used ones)
	accounts []*demoAccount          // users who can sign in (demo_gotrue_flows.go)
	flows    map[string]*flowState   // PKCE auth codes
	flowsBy  map[string][]string     // codes of s.flows by client address, oldest first
	otps     map[string]*otpState    // by token hash
}

// demoSession is one signed-in session.
type demoSession struct {
	spec    tokenSpec
	current string
	// used maps refresh tokens already rotated to the time of rotation.
	used    map[string]time.Time
	revoked bool
}

func newDemoAuthServer(ks *keySet, issuer, apikey string) *demoAuthServer {
	s := &demoAuthServer{ks: ks, issuer: issuer, apikey: apikey, now: time.Now, sessions: map[string]*demoSession{},
		flows: map[string]*flowState{}, otps: map[string]*otpState{}, otpInterval: defaultOTPInterval,
		otpSentTo: map[string]time.Time{}, flowsBy: map[string][]string{}}
	s.passwordTries = ratelimit.New(ratelimit.Config{Limit: passwordAttempts, Window: passwordWindow, MaxKeys: maxPending,
		Now: func() time.Time { return s.now() }})
	return s
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

// signIn starts a session and returns its access and refresh tokens.
func (s *demoAuthServer) signIn(spec tokenSpec) (access, refresh string, err error) {
	spec.Issuer = s.issuer
	if spec.SessionID == "" {
		spec.SessionID = newUUID()
	}
	access, err = mintToken(s.ks, spec, s.now())
	if err != nil {
		return "", "", err
	}
	refresh = newRefreshToken()
	s.mu.Lock()
	s.sessions[refresh] = &demoSession{spec: spec, current: refresh, used: map[string]time.Time{}}
	s.mu.Unlock()
	return access, refresh, nil
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

// ServeHTTP answers POST /auth/v1/token: grant_type refresh_token here,
// password and pkce in demo_gotrue_flows.go.
func (s *demoAuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	var spec tokenSpec
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
		refresh = newRefreshToken()
		sess.used[sess.current] = now
		sess.current = refresh
		s.sessions[refresh] = sess
	default:
		usedAt := sess.used[body.RefreshToken]
		if now.Sub(usedAt) >= refreshReuseInterval {
			sess.revoked = true
			s.mu.Unlock()
			gotrueError(w, http.StatusBadRequest, "refresh_token_already_used", "Invalid Refresh Token: Already Used")
			return
		}
		refresh = sess.current // within the reuse interval: the current token
	}
	spec = sess.spec
	s.mu.Unlock()

	access, err := mintToken(s.ks, spec, now)
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
			"user_metadata": map[string]any{}, "is_anonymous": spec.Anonymous,
		},
	})
}

// requireAPIKey checks the apikey of a request to one of the demo's auth
// endpoints like the Supabase gateway: at least one apikey is required, in
// the apikey header or the apikey query parameter, and every one the
// request carries (headers and query alike) must be the project's
// publishable key. Otherwise it answers 401 in the gateway's shape and
// returns false. Every demo auth endpoint calls it before anything else.
func (s *demoAuthServer) requireAPIKey(w http.ResponseWriter, r *http.Request) bool {
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
