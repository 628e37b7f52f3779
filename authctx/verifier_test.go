package authctx

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

func TestValidTokenCostsNoNetworkCall(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MemoSize = -1 }) // every request verifies the signature
	if n := b.jwks.hits.Load(); n != 1 {
		t.Fatalf("construction fetched the JWKS %d times, want 1", n)
	}
	tokES := b.token(nil)
	tokRS := signRS(t, kidRSA, userClaims(nil))
	for i := 0; i < 50; i++ {
		for _, tok := range []string{tokES, tokRS} {
			if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindUser {
				t.Fatalf("resolution %d: %s/%s %v", i, a.Kind, a.Reason, a.Err)
			}
		}
	}
	if n := b.jwks.hits.Load(); n != 1 {
		t.Fatalf("100 valid tokens caused %d JWKS requests, want none after construction", n-1)
	}
}

func TestUnknownKIDRefreshIsRateBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// Rotate: the server now also publishes a second key.
	b.jwks.set(jwksJSON(ecJWK(ecKey, kidEC), ecJWK(ecKey2, kidEC2), rsaJWK(rsaKey, kidRSA)))
	rotated := signES(t, ecKey2, kidEC2, userClaims(nil))
	if a := b.rv.Resolve(bearerReq(rotated)).Auth; a.Kind != KindUser {
		t.Fatalf("token under the rotated key: %s/%s %v", a.Kind, a.Reason, a.Err)
	}
	if n := b.jwks.hits.Load(); n != 2 {
		t.Fatalf("JWKS requests %d, want 2 (construction + one unknown-kid refresh)", n)
	}
	// Unknown kids now hit the rate limit: no further fetches, fast failure.
	start := time.Now()
	for i := 0; i < 20; i++ {
		tok := signES(t, ecKey2, "unknown-"+string(rune('a'+i)), userClaims(nil))
		if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindInvalid || a.Reason != ReasonToken {
			t.Fatalf("unknown kid: %s/%s", a.Kind, a.Reason)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("unknown kids took %v: requests must not wait for the limiter", d)
	}
	if n := b.jwks.hits.Load(); n != 2 {
		t.Fatalf("JWKS requests %d after 20 unknown kids, want still 2", n)
	}
}

func TestVerifierRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	v := b.rv.Verifier()
	now := time.Now()
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, userClaims(nil))
	hs.Header["kid"] = kidEC
	hsTok, _ := hs.SignedString([]byte("super-secret-jwt-token-with-at-least-32-characters-long"))
	noneTok, _ := jwt.NewWithClaims(jwt.SigningMethodNone, userClaims(nil)).SignedString(jwt.UnsafeAllowNoneSignatureType)

	// alg/key mismatch: an RS256 header naming the EC key's kid.
	rsOnEC := signRS(t, kidEC, userClaims(nil))
	// ES256 header naming the RSA key.
	esOnRSA := signES(t, ecKey, kidRSA, userClaims(nil))

	cases := []struct {
		name  string
		token string
		want  error
	}{
		{"none", noneTok, ErrTokenMalformed},
		{"HS256 with a known kid", hsTok, ErrTokenMalformed},
		{"RS256 header on the EC key", rsOnEC, ErrTokenUnverifiable},
		{"ES256 header on the RSA key", esOnRSA, ErrTokenUnverifiable},
		{"exp missing", b.token(map[string]any{"exp": nil}), ErrTokenClaims},
		{"exp as a string", b.token(map[string]any{"exp": "4102444800"}), ErrTokenClaims},
		{"expired beyond skew", b.token(map[string]any{"exp": now.Add(-time.Minute).Unix()}), ErrTokenExpired},
		{"nbf in the future", b.token(map[string]any{"nbf": now.Add(time.Hour).Unix()}), ErrTokenClaims},
		{"sub not a string", b.token(map[string]any{"sub": 42}), ErrTokenClaims},
		{"is_anonymous not a bool", b.token(map[string]any{"is_anonymous": "true"}), ErrTokenClaims},
		{"act not an object", b.token(map[string]any{"act": []any{"x"}}), ErrActorInvalid},
		{"act without sub", b.token(map[string]any{"act": map[string]any{"iss": "x"}}), ErrActorInvalid},
		{"act nested too deep", b.token(map[string]any{"act": deepAct(MaxActorDepth + 1)}), ErrActorInvalid},
		{"tampered payload", tamper(b.token(nil)), ErrTokenUnverifiable},
		{"oversized", b.token(map[string]any{"pad": strings.Repeat("x", DefaultMaxTokenBytes)}), ErrTokenMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Fatalf("error contains the token")
			}
		})
	}
	// Within the skew an expired token still verifies; the act chain at the bound is fine.
	if _, err := v.Verify(context.Background(), b.token(map[string]any{"exp": now.Add(-5 * time.Second).Unix()})); err != nil {
		t.Errorf("token 5s past exp inside 30s skew: %v", err)
	}
	if _, err := v.Verify(context.Background(), b.token(map[string]any{"act": deepAct(MaxActorDepth)})); err != nil {
		t.Errorf("act chain of depth %d: %v", MaxActorDepth, err)
	}
}

func deepAct(depth int) map[string]any {
	act := map[string]any{"sub": "leaf"}
	for i := 1; i < depth; i++ {
		act = map[string]any{"sub": "level", "act": act}
	}
	return act
}

func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	parts[1] = b64([]byte(`{"sub":"attacker","exp":4102444800}`))
	return strings.Join(parts, ".")
}

func TestIssuerAudience(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Issuer = "http://127.0.0.1:54321/auth/v1"; c.Audience = "authenticated" })
	if a := b.rv.Resolve(bearerReq(b.token(nil))).Auth; a.Kind != KindUser {
		t.Fatalf("matching iss/aud: %s %v", a.Kind, a.Err)
	}
	for name, over := range map[string]map[string]any{
		"wrong iss": {"iss": "https://evil.example/auth/v1"},
		"wrong aud": {"aud": "service"},
		"no aud":    {"aud": nil},
	} {
		if a := b.rv.Resolve(bearerReq(b.token(over))).Auth; a.Kind != KindInvalid || a.Reason != ReasonToken {
			t.Errorf("%s: %s/%s", name, a.Kind, a.Reason)
		}
	}
}

func TestLegacySecretOnly(t *testing.T) {
	t.Parallel()
	_, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{LegacyJWTSecret: "super-secret-jwt-token-with-at-least-32-characters-long"}})
	if !errors.Is(err, ErrLegacySecret) {
		t.Fatalf("err %v, want ErrLegacySecret", err)
	}
	for _, want := range []string{"HS256", "ES256", "signing-key", "SUPABASE_JWKS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q: %v", want, err)
		}
	}
	// A legacy project's JWKS endpoint lists no keys.
	empty := newJWKSServer(t, []byte(`{"keys":[]}`))
	if _, err := New(context.Background(), &Config{ProjectURL: empty.URL, VerifierConfig: VerifierConfig{LegacyJWTSecret: "x"}}); !errors.Is(err, ErrLegacySecret) {
		t.Fatalf("empty JWKS: err %v", err)
	}
	// An inline JWKS with only an oct (HS256) key.
	if _, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{JWKS: []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0","alg":"HS256","kid":"x"}]}`)}}); !errors.Is(err, ErrLegacySecret) {
		t.Fatalf("oct-only inline JWKS: err %v", err)
	}
	if _, err := New(context.Background(), &Config{}); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("nothing configured: err %v", err)
	}
}

func TestInlineJWKSNeedsNoServer(t *testing.T) {
	t.Parallel()
	testKeys(t)
	for _, raw := range []string{
		string(jwksJSON(ecJWK(ecKey, kidEC))),
		"[" + strings.TrimSuffix(strings.TrimPrefix(string(jwksJSON(ecJWK(ecKey, kidEC))), `{"keys":[`), "]}") + "]",
	} {
		rv, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{JWKS: []byte(raw)}, CookieName: "sb-test-auth-token"})
		if err != nil {
			t.Fatalf("inline JWKS %s: %v", raw, err)
		}
		a := rv.Resolve(bearerReq(signES(t, ecKey, kidEC, userClaims(nil)))).Auth
		rv.Close()
		if a.Kind != KindUser {
			t.Fatalf("inline JWKS: %s %v", a.Kind, a.Err)
		}
	}
}

func TestTokenWithoutKIDUsesMatchingKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if a := b.rv.Resolve(bearerReq(signES(t, ecKey, "", userClaims(nil)))).Auth; a.Kind != KindUser {
		t.Fatalf("ES256 without kid: %s %v", a.Kind, a.Err)
	}
	if a := b.rv.Resolve(bearerReq(signES(t, ecKey2, "", userClaims(nil)))).Auth; a.Kind != KindInvalid {
		t.Fatalf("untrusted key without kid: %s", a.Kind)
	}
}

func TestPreParse(t *testing.T) {
	t.Parallel()
	good := unsigned(`{"alg":"ES256","kid":"k","typ":"JWT"}`, `{}`)
	if h, err := preParse(good, 0); err != nil || h.Alg != "ES256" || h.Kid != "k" {
		t.Fatalf("good token: %+v %v", h, err)
	}
	bad := []string{
		"", "a", "a.b", "a.b.c.d", ".b.c", "a..c", "a.b.", "a.b.c=",
		unsigned(`{"alg":"none"}`, `{}`), unsigned(`{"alg":"HS256"}`, `{}`),
		unsigned(`[1,2]`, `{}`), unsigned(`"ES256"`, `{}`), unsigned(`{"alg":5}`, `{}`),
		unsigned(`{"kid":"x"}`, `{}`), unsigned(`{"alg":"ES256","typ":"JWE"}`, `{}`),
		unsigned(`{"alg":"ES256","crit":["b64"]}`, `{}`), unsigned(`{"alg":"ES256","kid":7}`, `{}`),
		"e30+.e30.sig", "ey J.e30.sig",
	}
	for _, tok := range bad {
		if _, err := preParse(tok, 0); !errors.Is(err, ErrTokenMalformed) {
			t.Errorf("preParse(%q) = %v, want ErrTokenMalformed", tok, err)
		}
	}
	if _, err := preParse(good, 10); !errors.Is(err, ErrTokenMalformed) {
		t.Errorf("size cap not applied")
	}
}

func TestJWKSUnreachableAtStartLoadsLater(t *testing.T) {
	t.Parallel()
	testKeys(t)
	srv := newJWKSServer(t, []byte(`not json`)) // broken at construction
	rv, err := New(context.Background(), &Config{ProjectURL: srv.URL, VerifierConfig: VerifierConfig{Issuer: testIssuer, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatalf("a JWKS fetch failure at start must not fail construction: %v", err)
	}
	defer rv.Close()
	srv.set(jwksJSON(ecJWK(ecKey, kidEC)))
	if a := rv.Resolve(bearerReq(signES(t, ecKey, kidEC, userClaims(nil)))).Auth; a.Kind != KindUser {
		t.Fatalf("after the JWKS recovered: %s %v", a.Kind, a.Err)
	}
	if n := srv.hits.Load(); n < 2 || n > 4 { // start, the unknown kid, maybe a background retry
		t.Fatalf("JWKS requests %d, want 2 to 4", n)
	}
	// An oct-only JWKS (legacy project) fails construction.
	oct := newJWKSServer(t, []byte(`{"keys":[{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0","alg":"HS256","kid":"h"}]}`))
	if _, err := New(context.Background(), &Config{ProjectURL: oct.URL}); !errors.Is(err, ErrLegacySecret) {
		t.Fatalf("oct-only JWKS: %v", err)
	}
}

func TestConfigBounds(t *testing.T) {
	t.Parallel()
	testKeys(t)
	jwks := jwksJSON(ecJWK(ecKey, kidEC))
	for name, cfg := range map[string]Config{
		"skew too large":       {VerifierConfig: VerifierConfig{JWKS: jwks, ClockSkew: time.Hour}},
		"token cap too large":  {VerifierConfig: VerifierConfig{JWKS: jwks, MaxTokenBytes: 1 << 30}},
		"nil resolver":         {VerifierConfig: VerifierConfig{JWKS: jwks}, Resolvers: []CustomResolver{nil}},
		"bad trusted origin":   {VerifierConfig: VerifierConfig{JWKS: jwks}, TrustedOrigins: []string{"not an origin"}},
		"project URL w/o host": {VerifierConfig: VerifierConfig{JWKS: jwks}, ProjectURL: "no-host"},
		"empty secret key":     {VerifierConfig: VerifierConfig{JWKS: jwks}, Secret: true, SecretKeys: map[string]string{"default": ""}},
	} {
		if rv, err := New(context.Background(), &cfg); err == nil {
			rv.Close()
			t.Errorf("%s: no error", name)
		}
	}
	// A smaller token cap applies.
	rv, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{JWKS: jwks, MaxTokenBytes: 256}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if a := rv.Resolve(bearerReq(signES(t, ecKey, kidEC, userClaims(nil)))).Auth; a.Kind != KindInvalid {
		t.Errorf("token over a 256-byte cap: %s", a.Kind)
	}
}
