package main

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzParseKeyFile: any input is refused with an error or gives keys that
// sign a token; it never panics.
func FuzzParseKeyFile(f *testing.F) {
	k, _ := newSigningJWK()
	good, _ := json.Marshal([]jwk{k})
	one, _ := json.Marshal(k)
	for _, s := range []string{string(good), string(one), "[]", "{}", `[{"kty":"oct","k":"c2VjcmV0"}]`,
		`[{"kty":"EC","crv":"P-256","kid":"k","d":"AA"}]`, `[{"kty":"EC","kid":"k","d":"` + k.D + `","x":"` + k.Y + `"}]`, "null", `"x"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := parseKeyFile(data)
		if err != nil {
			return
		}
		if len(ks.keys) == 0 {
			t.Fatal("no keys and no error")
		}
		if _, err := ks.signer(); err == nil {
			if _, err := mintToken(ks, tokenSpec{}, time.Unix(1_800_000_000, 0)); err != nil {
				t.Fatalf("parsed keys do not sign: %v", err)
			}
		}
		var doc struct{ Keys []map[string]any }
		if err := json.Unmarshal(ks.publicJWKS(), &doc); err != nil || len(doc.Keys) != len(ks.keys) {
			t.Fatalf("public JWKS: %v", err)
		}
		for _, pk := range doc.Keys {
			if _, ok := pk["d"]; ok {
				t.Fatal("private part in the public JWKS")
			}
		}
	})
}
