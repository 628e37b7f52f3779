package authctx

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const testUserID = "11111111-1111-4111-8111-111111111111"

// keys are generated once per test binary: key generation is slow and the
// keys are never trusted outside the tests' own JWKS servers.
var (
	keysOnce sync.Once
	ecKey    *ecdsa.PrivateKey
	ecKey2   *ecdsa.PrivateKey
	rsaKey   *rsa.PrivateKey
)

func testKeys(t testing.TB) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if ecKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if ecKey2, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			panic(err)
		}
		if rsaKey, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
	})
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func pad32(b []byte) []byte {
	out := make([]byte, 32)
	copy(out[32-len(b):], b)
	return out
}

func ecJWK(k *ecdsa.PrivateKey, kid string) map[string]any {
	return map[string]any{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "key_ops": []string{"verify"},
		"kid": kid, "x": b64(pad32(k.X.Bytes())), "y": b64(pad32(k.Y.Bytes()))}
}

func rsaJWK(k *rsa.PrivateKey, kid string) map[string]any {
	return map[string]any{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
		"n": b64(k.N.Bytes()), "e": b64(big.NewInt(int64(k.E)).Bytes())}
}

func jwksJSON(keys ...map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"keys": keys})
	return b
}

// jwksServer serves a JWKS at the Supabase path and counts requests.
type jwksServer struct {
	*httptest.Server
	hits atomic.Int64
	mu   sync.Mutex
	body []byte
}

func newJWKSServer(t testing.TB, body []byte) *jwksServer {
	t.Helper()
	s := &jwksServer{body: body}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/auth/v1/.well-known/jwks.json" {
			http.NotFound(w, r)
			return
		}
		s.hits.Add(1)
		s.mu.Lock()
		b := s.body
		s.mu.Unlock()
		if b == nil { // down
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=600")
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(body []byte) {
	s.mu.Lock()
	s.body = body
	s.mu.Unlock()
}

// bundle is the test setup: keys, a JWKS server and a resolver.
type bundle struct {
	t    testing.TB
	jwks *jwksServer
	rv   *Resolver
}

const (
	kidEC  = "ec-kid-1"
	kidEC2 = "ec-kid-2"
	kidRSA = "rsa-kid-1"
)

// setup starts a JWKS server with the EC and RSA test keys and builds a
// resolver against it; mod adjusts the config.
func setup(t testing.TB, mod func(*Config)) *bundle {
	t.Helper()
	testKeys(t)
	b := &bundle{t: t}
	b.jwks = newJWKSServer(t, jwksJSON(ecJWK(ecKey, kidEC), rsaJWK(rsaKey, kidRSA)))
	cfg := Config{ProjectURL: b.jwks.URL, VerifierConfig: VerifierConfig{Issuer: testIssuer}}
	if mod != nil {
		mod(&cfg)
	}
	rv, err := New(context.Background(), &cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(rv.Close)
	b.rv = rv
	return b
}

// testIssuer is the iss of userClaims: the Supabase CLI's local auth
// server.
const testIssuer = "http://127.0.0.1:54321/auth/v1"

// claims returns Supabase-shaped user claims valid for an hour, with
// overrides applied (a nil value deletes the claim).
func userClaims(over map[string]any) jwt.MapClaims {
	now := time.Now()
	c := jwt.MapClaims{
		"iss": testIssuer, "sub": testUserID, "aud": "authenticated",
		"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "email": "a@example.com", "phone": "",
		"app_metadata":  map[string]any{"provider": "email", "providers": []string{"email"}},
		"user_metadata": map[string]any{}, "role": "authenticated", "aal": "aal1",
		"session_id": "22222222-2222-4222-8222-222222222222", "is_anonymous": false,
	}
	for k, v := range over {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

func signES(t testing.TB, key *ecdsa.PrivateKey, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func signRS(t testing.TB, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(rsaKey)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (b *bundle) token(over map[string]any) string {
	return signES(b.t, ecKey, kidEC, userClaims(over))
}

// unsigned builds a token with an arbitrary header and payload and a junk
// signature.
func unsigned(header, payload string) string {
	return b64([]byte(header)) + "." + b64([]byte(payload)) + "." + b64([]byte("signature-bytes"))
}

func bearerReq(token string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}

// sessionCookieValue encodes a session like @supabase/ssr (base64url).
func sessionCookieValue(accessToken string, expiresAt int64) string {
	s, _ := json.Marshal(map[string]any{"access_token": accessToken, "token_type": "bearer", "expires_in": 3600,
		"expires_at": expiresAt, "refresh_token": "abcdefghijkl", "user": map[string]any{"id": testUserID}})
	return "base64-" + b64(s)
}

func cookieReq(name, value string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(&http.Cookie{Name: name, Value: value})
	return r
}
