package authctx_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// Example_refresh turns on cookie session refresh: a session cookie whose
// access token has expired is refreshed with the auth server, the handler
// sees the new token, and the response carries the new cookie and no-store
// cache headers. A token that only expires within the leeway is refreshed
// too; its request waits at most Config.RefreshWait for the answer, which
// otherwise reaches the session's next request.
func Example_refresh() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	var issuer string // {project URL}/auth/v1, checked by default
	sign := func(exp time.Duration) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"iss": issuer, "aud": "authenticated",
			"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated",
			"exp": time.Now().Add(exp).Unix(), "iat": time.Now().Unix()})
		tok.Header["kid"] = "k1"
		s, _ := tok.SignedString(key)
		return s
	}
	// A stand-in for the project's auth server: JWKS and token endpoint.
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/auth/v1/.well-known/jwks.json":
			json.NewEncoder(w).Encode(map[string]any{"keys": []any{map[string]any{
				"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": "k1",
				"x": base64.RawURLEncoding.EncodeToString(key.X.FillBytes(make([]byte, 32))),
				"y": base64.RawURLEncoding.EncodeToString(key.Y.FillBytes(make([]byte, 32)))}}})
		case "/auth/v1/token": // grant_type=refresh_token
			json.NewEncoder(w).Encode(map[string]any{"access_token": sign(time.Hour), "token_type": "bearer",
				"expires_in": 3600, "expires_at": time.Now().Add(time.Hour).Unix(), "refresh_token": "new-refresh"})
		}
	}))
	defer auth.Close()
	issuer = auth.URL + "/auth/v1"

	// In production: env, _ := authctx.LoadEnv(nil); cfg := env.Config().
	rv, err := authctx.New(context.Background(), &authctx.Config{
		ProjectURL:      auth.URL,
		PublishableKeys: []string{"sb_publishable_example"},
		Refresh:         true, // Leeway 60 s and RefreshTimeout 5 s by default
	})
	if err != nil {
		panic(err)
	}
	defer rv.Close()

	app := rv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := ssrcookie.Read(r.Cookies(), rv.CookieName())
		s, _ := ssrcookie.ParseSession(raw)
		fmt.Println("caller:", authctx.AuthFrom(r.Context()).Kind, "- handler sees refresh token", s.RefreshToken)
	}))

	// The browser's cookie: a session whose token expired a minute ago, as
	// @supabase/ssr stores it.
	old, _ := ssrcookie.EncodeJSON(map[string]any{"access_token": sign(-time.Minute), "token_type": "bearer",
		"expires_in": 3600, "expires_at": time.Now().Add(-time.Minute).Unix(), "refresh_token": "old-refresh"})
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.AddCookie(&http.Cookie{Name: rv.CookieName(), Value: ssrcookie.Encode(old)})

	rec := httptest.NewRecorder()
	app.ServeHTTP(rec, req)
	fmt.Println("Cache-Control:", rec.Header().Get("Cache-Control"))
	fmt.Println("Set-Cookie lines:", len(rec.Header().Values("Set-Cookie")))
	// Output:
	// caller: user - handler sees refresh token new-refresh
	// Cache-Control: private, no-cache, no-store, must-revalidate, max-age=0
	// Set-Cookie lines: 1
}
