package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLegacySecretOnly: a project configured only with the legacy
// SUPABASE_JWT_SECRET (HS256) is told at start that HS256 secrets are not
// accepted and how to move to signing keys, never just "no JWKS"; the
// secret itself is never printed.
func TestServeLegacySecretOnly(t *testing.T) {
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "tablegate.json")
	if err := os.WriteFile(cfg, []byte(`{"tables":{"todos":{}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "super-secret-jwt-token-with-at-least-32-characters-long"
	r := runCLI(t, map[string]string{
		"DATABASE_URL":        "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"SUPABASE_JWT_SECRET": secret,
	}, "serve", "--config", cfg, "--access-log=false")
	for _, want := range []string{"SUPABASE_JWT_SECRET", "HS256 JWT secrets are not accepted", "signing keys",
		"https://supabase.com/docs/guides/auth/signing-keys", "supabase gen signing-key", "SUPABASE_URL"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
		}
	}
	if r.code != exitUsage || strings.Contains(r.stderr, secret) {
		t.Errorf("exit %d (want %d), stderr:\n%s", r.code, exitUsage, r.stderr)
	}
}
