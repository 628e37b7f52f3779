package authctx

import (
	"context"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

const (
	kidEd     = "ed-kid-1"
	kidX25519 = "x25519-kid-1"
)

func edJWK(pub ed25519.PublicKey, kid string) map[string]any {
	return map[string]any{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "use": "sig", "key_ops": []string{"verify"},
		"kid": kid, "x": b64(pub)}
}

func signEd(t testing.TB, key ed25519.PrivateKey, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEdDSAVerified: an Ed25519 (EdDSA) access token verifies against a
// JWKS that publishes its OKP key, fetched or inline, with and without
// kid, as a Bearer header and through the resolver.
func TestEdDSAVerified(t *testing.T) {
	t.Parallel()
	testKeys(t)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	set := jwksJSON(ecJWK(ecKey, kidEC), edJWK(pub, kidEd))
	srv := newJWKSServer(t, set)

	fetched, err := New(context.Background(), &Config{ProjectURL: srv.URL, VerifierConfig: VerifierConfig{Issuer: testIssuer}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fetched.Close)
	inline, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{Issuer: testIssuer, JWKS: jwksJSON(edJWK(pub, kidEd))}, CookieName: "sb-x-auth-token"})
	if err != nil {
		t.Fatalf("an inline JWKS holding only an Ed25519 key: %v", err)
	}
	t.Cleanup(inline.Close)

	for name, rv := range map[string]*Resolver{"fetched": fetched, "inline": inline} {
		for _, kid := range []string{kidEd, ""} {
			tok := signEd(t, priv, kid, userClaims(nil))
			res := rv.Resolve(bearerReq(tok))
			if res.Auth.Kind != KindUser || res.Auth.User.ID != testUserID {
				t.Errorf("%s kid %q: %+v", name, kid, res.Auth)
			}
		}
	}
	if _, err := fetched.Verifier().Verify(context.Background(), signES(t, ecKey, kidEC, userClaims(nil))); err != nil {
		t.Errorf("ES256 beside EdDSA: %v", err)
	}
}

// TestEdDSARefusals: wrong-curve and algorithm-confusion variants of
// EdDSA tokens are refused.
func TestEdDSARefusals(t *testing.T) {
	t.Parallel()
	testKeys(t)
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	_, other, _ := ed25519.GenerateKey(rand.Reader)
	xk, _ := ecdh.X25519().GenerateKey(rand.Reader)
	x25519 := map[string]any{"kty": "OKP", "crv": "X25519", "kid": kidX25519, "x": b64(xk.PublicKey().Bytes())}
	srv := newJWKSServer(t, jwksJSON(ecJWK(ecKey, kidEC), rsaJWK(rsaKey, kidRSA), edJWK(pub, kidEd), x25519))
	rv, err := New(context.Background(), &Config{ProjectURL: srv.URL, VerifierConfig: VerifierConfig{Issuer: testIssuer}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	v := rv.Verifier()

	// HS256 keyed with the Ed25519 public key bytes (classic confusion).
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, userClaims(nil))
	hs.Header["kid"] = kidEd
	hsTok, _ := hs.SignedString([]byte(pub))
	// Header alg EdDSA, signed by Ed25519, but the kid names the EC key.
	edOnEC := signEd(t, priv, kidEC, userClaims(nil))
	// Header alg EdDSA naming the X25519 key (an OKP key of the wrong curve).
	edOnX := signEd(t, priv, kidX25519, userClaims(nil))
	// ES256 signature naming the Ed25519 key.
	esOnEd := signES(t, ecKey, kidEd, userClaims(nil))
	// RS256 signature naming the Ed25519 key.
	rsOnEd := signRS(t, kidEd, userClaims(nil))
	// Signed by another Ed25519 key under the published kid.
	foreign := signEd(t, other, kidEd, userClaims(nil))
	// The RFC 9864 fully-specified name is not what GoTrue writes.
	hdr := b64([]byte(`{"alg":"Ed25519","kid":"` + kidEd + `","typ":"JWT"}`))
	parts := strings.Split(signEd(t, priv, kidEd, userClaims(nil)), ".")
	ed25519Name := hdr + "." + parts[1] + "." + parts[2]
	// A tampered payload under a valid EdDSA signature.
	tampered := tamper(signEd(t, priv, kidEd, userClaims(nil)))
	// No kid and alg EdDSA, signed by a foreign key: no key fits.
	foreignNoKid := signEd(t, other, "", userClaims(nil))

	cases := []struct {
		name  string
		token string
		want  error
	}{
		{"HS256 keyed with the Ed25519 public key", hsTok, ErrTokenMalformed},
		{"EdDSA header on the EC key", edOnEC, ErrTokenUnverifiable},
		{"EdDSA header on an X25519 key", edOnX, ErrTokenUnverifiable},
		{"ES256 header on the Ed25519 key", esOnEd, ErrTokenUnverifiable},
		{"RS256 header on the Ed25519 key", rsOnEd, ErrTokenUnverifiable},
		{"foreign Ed25519 key under the published kid", foreign, ErrTokenUnverifiable},
		{"alg named Ed25519 (unknown to the verifier)", ed25519Name, ErrTokenUnverifiable},
		{"tampered payload", tampered, ErrTokenUnverifiable},
		{"foreign key without kid", foreignNoKid, ErrTokenUnverifiable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if a := rv.Resolve(bearerReq(tc.token)).Auth; a.Kind != KindInvalid {
				t.Fatalf("resolved as %s, want invalid", a.Kind)
			}
		})
	}
	// An inline JWKS whose only OKP key is X25519 has no signing key.
	if _, err := New(context.Background(), &Config{VerifierConfig: VerifierConfig{JWKS: jwksJSON(x25519)}, CookieName: "c"}); !errors.Is(err, ErrLegacySecret) {
		t.Errorf("X25519-only inline JWKS: %v, want ErrLegacySecret", err)
	}
}
