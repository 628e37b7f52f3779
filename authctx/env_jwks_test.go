package authctx

import (
	"context"
	"testing"
)

// TestEnvJWKSURL: SUPABASE_JWKS_URL is fetched instead of the project
// URL's JWKS, an inline SUPABASE_JWKS wins over it (the order of
// @supabase/server), and a non-http value is refused by name.
func TestEnvJWKSURL(t *testing.T) {
	t.Parallel()
	testKeys(t)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	srv := newJWKSServer(t, jwksJSON(ecJWK(ecKey, kidEC)))
	// The project URL serves no JWKS: only SUPABASE_JWKS_URL can verify.
	e, err := LoadEnvFrom(env(map[string]string{
		"SUPABASE_URL": "http://127.0.0.1:1", "SUPABASE_ANON_KEY": "a", "SUPABASE_JWT_ISSUER": testIssuer,
		"SUPABASE_JWKS_URL": srv.URL + "/auth/v1/.well-known/jwks.json",
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := New(context.Background(), e.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	tok := signES(t, ecKey, kidEC, userClaims(nil))
	if a := rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindUser {
		t.Fatalf("token verified against SUPABASE_JWKS_URL: %+v", a)
	}
	if srv.hits.Load() == 0 {
		t.Fatal("SUPABASE_JWKS_URL was never fetched")
	}

	inline := string(jwksJSON(ecJWK(ecKey2, kidEC2)))
	e, err = LoadEnvFrom(env(map[string]string{
		"SUPABASE_URL": "http://127.0.0.1:1", "SUPABASE_ANON_KEY": "a",
		"SUPABASE_JWKS": inline, "SUPABASE_JWKS_URL": srv.URL + "/auth/v1/.well-known/jwks.json",
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := e.Config(); cfg.JWKSURL != "" || len(cfg.JWKS) == 0 {
		t.Fatalf("inline SUPABASE_JWKS must win: JWKSURL %q", cfg.JWKSURL)
	}

	for _, bad := range []string{"ftp://x/jwks.json", "not a url", "https://"} {
		_, err = LoadEnvFrom(env(map[string]string{"SUPABASE_URL": "http://x", "SUPABASE_ANON_KEY": "a", "SUPABASE_JWKS_URL": bad}), nil)
		if ee, ok := err.(*EnvError); !ok || ee.Variable != "SUPABASE_JWKS_URL" {
			t.Errorf("SUPABASE_JWKS_URL=%q: %v", bad, err)
		}
	}
}
