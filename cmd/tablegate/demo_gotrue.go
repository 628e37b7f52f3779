package main

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"sync"
	"time"
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

	mu       sync.Mutex
	sessions map[string]*demoSession // by refresh token (current and used ones)
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
	return &demoAuthServer{ks: ks, issuer: issuer, apikey: apikey, now: time.Now, sessions: map[string]*demoSession{}}
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

// ServeHTTP answers POST /auth/v1/token?grant_type=refresh_token.
func (s *demoAuthServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Like the Supabase gateway: an apikey (header or query) is required.
	if k := r.Header.Get("apikey"); k == "" && r.URL.Query().Get("apikey") == "" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": "No API key found in request", "hint": "No `apikey` request header or url param was found."})
		return
	} else if k != "" && !equalKeys(k, s.apikey) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": "Invalid API key"})
		return
	}
	if r.FormValue("grant_type") != "refresh_token" {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "The demo supports only grant_type=refresh_token")
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

// equalKeys compares two secrets in constant time over their hashes.
func equalKeys(a, b string) bool {
	ha := sha256.Sum256([]byte(a))
	hb := sha256.Sum256([]byte(b))
	return hmac.Equal(ha[:], hb[:])
}
