package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/authctx"
)

// TestKeysNewAlgAndTokenSign: "keys new --alg" writes ES256, RS256 and
// EdDSA keys in the signing_keys_path format, "token" signs with each,
// and the tokens verify against the printed public JWKS (no private
// member published); --append rotates across algorithms.
func TestKeysNewAlgAndTokenSign(t *testing.T) {
	t.Parallel()
	want := map[string]struct{ kty, crv, method string }{
		"ES256": {"EC", "P-256", "ES256"},
		"RS256": {"RSA", "", "RS256"},
		"EdDSA": {"OKP", "Ed25519", "EdDSA"},
	}
	path := filepath.Join(t.TempDir(), "signing_keys.json")
	for i, alg := range []string{"ES256", "RS256", "EdDSA"} {
		args := []string{"keys", "new", "--alg", alg, "--path", path}
		if i > 0 {
			args = append(args, "--append")
		}
		r := runCLI(t, nil, args...)
		if r.code != 0 {
			t.Fatalf("keys new --alg %s: %d %s", alg, r.code, r.stderr)
		}
		raw, _ := os.ReadFile(path)
		var keys []map[string]any
		if err := json.Unmarshal(raw, &keys); err != nil || len(keys) != i+1 {
			t.Fatalf("file after %s: %v (%d keys)", alg, err, len(keys))
		}
		k := keys[0]
		if k["kty"] != want[alg].kty || k["alg"] != alg || (want[alg].crv != "" && k["crv"] != want[alg].crv) {
			t.Fatalf("%s key: %v", alg, k)
		}
		if ops, _ := json.Marshal(k["key_ops"]); string(ops) != `["sign","verify"]` {
			t.Errorf("%s key_ops %s", alg, ops)
		}
		for _, old := range keys[1:] {
			if ops, _ := json.Marshal(old["key_ops"]); string(ops) != `["verify"]` {
				t.Errorf("rotated key still signs: %s", ops)
			}
		}
		// The public JWKS carries no private member.
		for _, priv := range []string{`"d"`, `"p"`, `"q"`, `"dp"`, `"dq"`, `"qi"`} {
			if strings.Contains(r.stdout, priv) {
				t.Fatalf("%s: public JWKS holds %s:\n%s", alg, priv, r.stdout)
			}
		}
		tr := runCLI(t, nil, "token", "--signing-keys", path, "--email", "a@example.com")
		if tr.code != 0 {
			t.Fatalf("token with %s: %d %s", alg, tr.code, tr.stderr)
		}
		tok := strings.TrimSpace(tr.stdout)
		parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
		if err != nil || parsed.Method.Alg() != want[alg].method || parsed.Header["kid"] != k["kid"] {
			t.Fatalf("%s token header %v %v", alg, parsed.Header, err)
		}
		v, err := authctx.NewVerifier(context.Background(), &authctx.VerifierConfig{JWKS: json.RawMessage(r.stdout)})
		if err != nil {
			t.Fatalf("%s: verifier from printed JWKS: %v", alg, err)
		}
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Errorf("%s token does not verify: %v", alg, err)
		}
		v.Close()
	}
	if r := runCLI(t, nil, "keys", "new", "--alg", "HS256", "--path", filepath.Join(t.TempDir(), "k.json")); r.code != 2 {
		t.Errorf("--alg HS256: exit %d, want 2 (usage)", r.code)
	}
}
