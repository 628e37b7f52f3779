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
)

// Example wires a Resolver in front of a handler: Middleware resolves the
// caller once, CrossSite refuses cross-site cookie form posts, and Guard
// admits signed-in users only.
func Example() {
	// In production: env, _ := authctx.LoadEnv(nil); cfg := env.Config().
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	jwks := inlineJWKS(key, "key-1")

	rv, err := authctx.New(context.Background(), &authctx.Config{
		ProjectURL:     "https://abcdefghijklmnopqrst.supabase.co",
		VerifierConfig: authctx.VerifierConfig{JWKS: jwks},
		// inline keys: no JWKS fetch at all
		Claims: authctx.StandardClaimsSchema(),
	})
	if err != nil {
		panic(err)
	}
	defer rv.Close()

	todos := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := authctx.AuthFrom(r.Context())
		claims, _ := authctx.TypedClaims[authctx.StandardClaims](a)
		fmt.Fprintf(w, "hello %s, roles %v", a.User.ID, claims.Roles)
	})
	h := rv.Middleware(rv.CrossSite(authctx.Guard(authctx.AllowUser)(todos)))

	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://abcdefghijklmnopqrst.supabase.co/auth/v1", "aud": "authenticated", // checked by default
		"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(), "is_anonymous": false,
	})
	tok.Header["kid"] = "key-1"
	signed, _ := tok.SignedString(key)

	for _, auth := range []string{"Bearer " + signed, ""} {
		r := httptest.NewRequest("GET", "/todos", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code, w.Body.String())
	}
	// Output:
	// 200 hello 11111111-1111-4111-8111-111111111111, roles []
	// 401 {"type":"https://tablegate.dev/problems/unauthorized","title":"Unauthorized","status":401,"kind":"unauthorized","detail":"This route requires a signed-in caller.","code":"AUTH_REQUIRED"}
}

func inlineJWKS(k *ecdsa.PrivateKey, kid string) json.RawMessage {
	enc := func(b []byte) string {
		p := make([]byte, 32)
		copy(p[32-len(b):], b)
		return base64.RawURLEncoding.EncodeToString(p)
	}
	b, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "kid": kid, "x": enc(k.X.Bytes()), "y": enc(k.Y.Bytes()),
	}}})
	return b
}

// ExampleAdmit shows the non-middleware admission used by adapters.
func ExampleAdmit() {
	p := authctx.Admit(authctx.Anon(authctx.ReasonNone), authctx.AllowUser, authctx.AllowAnon)
	fmt.Println(p == nil)
	p = authctx.Admit(authctx.Invalid(authctx.ReasonClaims, nil))
	fmt.Println(p.Status, p.Code)
	// Output:
	// true
	// 401 CLAIMS_INVALID
}

// ExampleClaimsOf types claims with a Go struct: the schema output is
// merged over the token payload one level deep.
func ExampleClaimsOf() {
	type TeamClaims struct {
		AppMetadata struct {
			Team string `json:"team"`
		} `json:"app_metadata"`
	}
	schema := authctx.MustClaimsOf[TeamClaims]()

	payload := authctx.Claims{
		"sub":          "11111111-1111-4111-8111-111111111111",
		"app_metadata": map[string]any{"provider": "email", "team": "blue"},
	}
	merged, err := schema.Apply(payload)
	fmt.Println(merged["sub"], merged["app_metadata"], err)

	typed, _ := authctx.TypedClaims[TeamClaims](authctx.NewUser(merged, "token", nil))
	fmt.Println(typed.AppMetadata.Team)

	_, err = schema.Apply(authctx.Claims{"sub": "x", "app_metadata": map[string]any{"team": 7}})
	fmt.Println(err)
	// Output:
	// 11111111-1111-4111-8111-111111111111 map[team:blue] <nil>
	// blue
	// authctx: claims failed the schema: /app_metadata/team must be of type string
}

// ExampleAuth_Cause: a refused token keeps reason "token"; its cause is a
// stable code, and the problem's detail says what to do. exp, nbf and iat
// are checked with 30 seconds of clock leeway (DefaultClockSkew).
func ExampleAuth_Cause() {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	rv, err := authctx.New(context.Background(), &authctx.Config{
		ProjectURL: "https://abcdefghijklmnopqrst.supabase.co",
		VerifierConfig: authctx.VerifierConfig{JWKS: inlineJWKS(key, "key-1"),
			Now: func() time.Time { return now }},
	})
	if err != nil {
		panic(err)
	}
	defer rv.Close()
	sign := func(iss string, exp time.Time) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"iss": iss, "aud": "authenticated",
			"sub": "11111111-1111-4111-8111-111111111111", "role": "authenticated",
			"exp": exp.Unix(), "iat": exp.Add(-time.Hour).Unix()})
		tok.Header["kid"] = "key-1"
		s, _ := tok.SignedString(key)
		return s
	}
	for _, tok := range []string{
		sign("https://abcdefghijklmnopqrst.supabase.co/auth/v1", now.Add(-3*time.Minute-12*time.Second)),
		sign("https://another-project.supabase.co/auth/v1", now.Add(time.Hour)),
	} {
		a := rv.ResolveToken(context.Background(), tok)
		p := authctx.Admit(a)
		fmt.Println(a.Kind, a.Reason, a.Cause(), p.Status)
		fmt.Println(p.Detail)
	}
	// Output:
	// invalid token TOKEN_EXPIRED 401
	// The token expired 3m12s ago; the clock leeway is 30s. Refresh the session (or sign in again) and retry with the new access token.
	// invalid token TOKEN_ISSUER_MISMATCH 401
	// The token was issued by "https://another-project.supabase.co/auth/v1", but this server expects tokens issued by "https://abcdefghijklmnopqrst.supabase.co/auth/v1": it comes from another project or auth server. If the expected issuer is wrong, set SUPABASE_JWT_ISSUER (Config.Issuer).
}
