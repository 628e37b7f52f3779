package rest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/tablegate/tablegate/authctx"
)

// TestFullStack runs the caller's way through tablegate (token, cookie,
// refusals for a bad token, no session, an anonymous sign-in and a
// cross-site post) through the real authctx resolver, cross-site check and guard in front
// of a resource that reads the caller from the request context (no
// Config.Caller).
func TestFullStack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pad := func(n *big.Int) string {
		buf := make([]byte, 32)
		n.FillBytes(buf)
		return base64.RawURLEncoding.EncodeToString(buf)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
		"x": pad(key.X), "y": pad(key.Y)}}})
	const project = "https://abcdefghijklmnopqrst.supabase.co"
	rv, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: project, VerifierConfig: authctx.VerifierConfig{JWKS: jwks}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	sign := func(sub string, anonymous bool) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"iss": project + "/auth/v1", "aud": "authenticated",
			"sub": sub, "role": "authenticated", "exp": time.Now().Add(time.Hour).Unix(), "is_anonymous": anonymous,
		})
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	res, err := NewResource(t.Context(), b.db, "todos", &Config{Select: []string{"id", "owner_id", "title"}})
	if err != nil {
		t.Fatal(err)
	}
	s := server(t, "todos", rv.Middleware(rv.CrossSite(authctx.Guard(authctx.AllowUser)(res))))
	b.exec(`insert into todos (owner_id, title) values ($1, 'alice 1'), ($2, 'bob 1')`, alice, bob)
	aliceTok, anonTok := sign(alice, false), sign(alice, true)
	cookieName, _ := authctx.CookieNameFor(project)
	sess, _ := json.Marshal(map[string]any{"access_token": aliceTok, "refresh_token": "r", "expires_at": time.Now().Add(time.Hour).Unix()})
	cookie := cookieName + "=base64-" + base64.RawURLEncoding.EncodeToString(sess)

	// Bearer user: RLS from the verified claims.
	r := do(t, s, "GET", "/api/todos", "", "", "Authorization", "Bearer "+aliceTok)
	if r.status != 200 || !strings.Contains(r.body, "alice 1") || strings.Contains(r.body, "bob 1") {
		t.Fatalf("bearer list: %s", r)
	}
	r = do(t, s, "POST", "/api/todos", "", `{"title":"via bearer"}`, "Authorization", "Bearer "+aliceTok)
	if r.status != 201 || !strings.Contains(r.body, alice) {
		t.Fatalf("bearer create: %s", r)
	}
	// Same-origin cookie session works.
	r = do(t, s, "GET", "/api/todos", "", "", "Cookie", cookie, "Sec-Fetch-Site", "same-origin")
	if r.status != 200 || !strings.Contains(r.body, "alice 1") {
		t.Fatalf("cookie list: %s", r)
	}
	// Refusals, each with its status and code.
	m := isProblem(t, do(t, s, "GET", "/api/todos", "", "", "Authorization", "Bearer "+aliceTok+"x"), 401, "unauthorized")
	if m["code"] != "TOKEN_SIGNATURE_INVALID" {
		t.Errorf("invalid token: %v", m)
	}
	m = isProblem(t, do(t, s, "GET", "/api/todos", "", ""), 401, "unauthorized")
	if m["code"] != "AUTH_REQUIRED" {
		t.Errorf("no session: %v", m)
	}
	m = isProblem(t, do(t, s, "GET", "/api/todos", "", "", "Authorization", "Bearer "+anonTok), 403, "forbidden")
	if m["code"] != "ANONYMOUS_USER" {
		t.Errorf("anonymous sign-in: %v", m)
	}
	m = isProblem(t, do(t, s, "POST", "/api/todos", "", "title=x", "Cookie", cookie,
		"Content-Type", "application/x-www-form-urlencoded", "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"), 403, "forbidden")
	if m["code"] != "CROSS_SITE_REQUEST" {
		t.Errorf("cross-site: %v", m)
	}
	_ = http.MethodGet
}
