package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	signing "github.com/tablegate/tablegate/internal/keys"
)

func TestKeysNewWritesSupabaseFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "supabase", "signing_keys.json")
	r := runCLI(t, nil, "keys", "new", "--path", path)
	if r.code != 0 {
		t.Fatalf("keys new: %d %s", r.code, r.stderr)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
	raw, _ := os.ReadFile(path)
	var keys []map[string]any
	if err := json.Unmarshal(raw, &keys); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, raw)
	}
	if len(keys) != 1 {
		t.Fatalf("%d keys", len(keys))
	}
	k := keys[0]
	for field, want := range map[string]any{"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "ext": true} {
		if k[field] != want {
			t.Errorf("%s = %v, want %v", field, k[field], want)
		}
	}
	if ops, _ := json.Marshal(k["key_ops"]); string(ops) != `["sign","verify"]` {
		t.Errorf("key_ops %s", ops)
	}
	if !isUUID(k["kid"].(string)) {
		t.Errorf("kid %v is not a uuid", k["kid"])
	}
	for _, f := range []string{"x", "y", "d"} {
		b, err := base64.RawURLEncoding.DecodeString(k[f].(string))
		if err != nil || len(b) != 32 {
			t.Errorf("%s: %d bytes, %v", f, len(b), err)
		}
	}
	if !strings.Contains(string(raw), "\n  {") {
		t.Errorf("not indented by two spaces:\n%s", raw)
	}
	// stdout is the public JWKS: no private part.
	var jwks struct{ Keys []map[string]any }
	if err := json.Unmarshal([]byte(r.stdout), &jwks); err != nil || len(jwks.Keys) != 1 {
		t.Fatalf("stdout is not a JWKS: %v\n%s", err, r.stdout)
	}
	if _, ok := jwks.Keys[0]["d"]; ok {
		t.Error("public JWKS leaks d")
	}
	if jwks.Keys[0]["kid"] != k["kid"] {
		t.Error("kid differs")
	}

	// A second run refuses to overwrite; --append rotates.
	if r := runCLI(t, nil, "keys", "new", "--path", path); r.code != exitFailure || !strings.Contains(r.stderr, "--append") {
		t.Errorf("overwrite: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "keys", "new", "--append", "--path", path); r.code != 0 {
		t.Fatalf("append: %d %s", r.code, r.stderr)
	}
	ks, err := loadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ks.Keys) != 2 || !ks.Keys[0].Sign || ks.Keys[1].Sign {
		t.Errorf("after append: %d keys, sign flags %v %v", len(ks.Keys), ks.Keys[0].Sign, ks.Keys[1].Sign)
	}
	if ks.Keys[1].Kid != k["kid"] {
		t.Error("the old key should stay, for verification only")
	}
}

func TestTokenVerifiesWithPublishedJWKS(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keys.json")
	if r := runCLI(t, nil, "keys", "new", "--path", path); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ks, err := loadKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tenant := "a0000000-0000-4000-8000-00000000000a"
	r := runCLI(t, nil, "token", "--signing-keys", path, "--sub", demoUserID, "--tenant", tenant,
		"--roles", "admin, approver", "--anonymous", "--ttl", "5m")
	if r.code != 0 {
		t.Fatalf("token: %s", r.stderr)
	}
	kf, err := keyfunc.NewJWKSetJSON(ks.PublicJWKS())
	if err != nil {
		t.Fatal(err)
	}
	var claims jwt.MapClaims
	tok, err := jwt.ParseWithClaims(strings.TrimSpace(r.stdout), &claims, kf.Keyfunc, jwt.WithValidMethods([]string{"ES256"}),
		jwt.WithAudience("authenticated"), jwt.WithIssuer(defaultIssuer), jwt.WithExpirationRequired())
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	signer, _ := ks.Signer()
	if tok.Header["kid"] != signer.Kid {
		t.Errorf("kid %v, want %s", tok.Header["kid"], signer.Kid)
	}
	want := map[string]any{"sub": demoUserID, "aud": "authenticated", "role": "authenticated", "is_anonymous": true, "tenant_id": tenant}
	for k, v := range want {
		if claims[k] != v {
			t.Errorf("claim %s = %v, want %v", k, claims[k], v)
		}
	}
	if roles, _ := json.Marshal(claims["roles"]); string(roles) != `["admin","approver"]` {
		t.Errorf("roles %s", roles)
	}
	if !isUUID(claims["session_id"].(string)) {
		t.Error("session_id is not a uuid")
	}
	exp, _ := claims.GetExpirationTime()
	iat, _ := claims.GetIssuedAt()
	if d := exp.Sub(iat.Time); d != 5*time.Minute {
		t.Errorf("exp-iat = %s", d)
	}
}

// testKeySet returns a key set of one new signing key of alg.
func testKeySet(t *testing.T, alg string) *keySet {
	t.Helper()
	k, err := signing.NewJWK(alg)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal([]jwk{k})
	ks, err := signing.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}
