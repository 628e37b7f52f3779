package keys

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestParseSupabaseUnpaddedKey reads a key as the Supabase CLI may write it:
// a coordinate of 31 bytes (big.Int.Bytes without left padding).
func TestParseSupabaseUnpaddedKey(t *testing.T) {
	t.Parallel()
	for i := 0; i < 2000; i++ {
		k, err := NewJWK(ES256)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := base64.RawURLEncoding.DecodeString(k.X)
		d, _ := base64.RawURLEncoding.DecodeString(k.D)
		if x[0] != 0 && d[0] != 0 {
			continue
		}
		// Strip the leading zero bytes as the CLI would.
		k.X = b64(trimZeros(x))
		k.D = b64(trimZeros(d))
		raw, _ := json.Marshal([]JWK{k})
		if _, err := Parse(raw); err != nil {
			t.Fatalf("unpadded key rejected: %v", err)
		}
		return
	}
	t.Fatal("no key with a leading zero byte in 2000 tries")
}

func trimZeros(b []byte) []byte {
	for len(b) > 1 && b[0] == 0 {
		b = b[1:]
	}
	return b
}

func TestParseKeyFileErrors(t *testing.T) {
	t.Parallel()
	good, _ := NewJWK(ES256)
	other, _ := NewJWK(ES256)
	mismatch := good
	mismatch.X = other.X
	noD := good
	noD.D = ""
	cases := map[string]any{
		"not json":     "hello",
		"empty array":  []JWK{},
		"hs256":        []JWK{{Kty: "oct", Kid: "k", K: "c2VjcmV0"}},
		"rsa":          []JWK{{Kty: "RSA", Kid: "k", N: "AQAB"}},
		"mismatched x": []JWK{mismatch},
		"no d":         []JWK{noD},
	}
	for name, v := range cases {
		var raw []byte
		if s, ok := v.(string); ok {
			raw = []byte(s)
		} else {
			raw, _ = json.Marshal(v)
		}
		ks, err := Parse(raw)
		if err == nil {
			t.Errorf("%s: accepted (%d keys)", name, len(ks.Keys))
			continue
		}
		if strings.Contains(err.Error(), good.D) {
			t.Errorf("%s: error leaks the private key", name)
		}
	}
	// A single JWK object (supabase gen signing-key without a path) is read.
	raw, _ := json.Marshal(good)
	if _, err := Parse(raw); err != nil {
		t.Errorf("single object: %v", err)
	}
}

// TestParseKeyFileRejectsBadNewKeys: RSA and Ed25519 keys whose members
// disagree or are too small are refused.
func TestParseKeyFileRejectsBadNewKeys(t *testing.T) {
	t.Parallel()
	rs, _ := NewJWK(RS256)
	ed, _ := NewJWK(EdDSA)
	ed2, _ := NewJWK(EdDSA)
	badP := rs
	badP.P = ed.X
	edMismatch := ed
	edMismatch.X = ed2.X
	shortSeed := ed
	shortSeed.D = "AAAA"
	x25519 := ed
	x25519.Crv = "X25519"
	for name, k := range map[string]JWK{"rsa bad p": badP, "ed x mismatch": edMismatch, "ed short seed": shortSeed, "okp X25519": x25519} {
		raw, _ := json.Marshal([]JWK{k})
		if _, err := Parse(raw); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for _, k := range []JWK{rs, ed} {
		raw, _ := json.Marshal([]JWK{k})
		if _, err := Parse(raw); err != nil {
			t.Errorf("%s: %v", k.Alg, err)
		}
	}
}

// FuzzParseKeyFile: any input is refused with an error or gives keys that
// sign a token; it never panics.
func FuzzParseKeyFile(f *testing.F) {
	k, _ := NewJWK(ES256)
	good, _ := json.Marshal([]JWK{k})
	one, _ := json.Marshal(k)
	for _, s := range []string{string(good), string(one), "[]", "{}", `[{"kty":"oct","k":"c2VjcmV0"}]`,
		`[{"kty":"EC","crv":"P-256","kid":"k","d":"AA"}]`, `[{"kty":"EC","kid":"k","d":"` + k.D + `","x":"` + k.Y + `"}]`, "null", `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := Parse(data)
		if err != nil {
			return
		}
		if len(ks.Keys) == 0 {
			t.Fatal("no keys and no error")
		}
		if _, err := ks.Signer(); err == nil {
			if _, err := Mint(ks, TokenSpec{}, time.Unix(1_800_000_000, 0)); err != nil {
				t.Fatalf("parsed keys do not sign: %v", err)
			}
		}
		var doc struct{ Keys []map[string]any }
		if err := json.Unmarshal(ks.PublicJWKS(), &doc); err != nil || len(doc.Keys) != len(ks.Keys) {
			t.Fatalf("public JWKS: %v", err)
		}
		for _, pk := range doc.Keys {
			if _, ok := pk["d"]; ok {
				t.Fatal("private part in the public JWKS")
			}
		}
	})
}
