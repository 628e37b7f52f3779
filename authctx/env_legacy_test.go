package authctx

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestLoadEnvLegacySecretOnly: with only SUPABASE_JWT_SECRET, LoadEnv and
// New say that HS256 secrets are not accepted and how to move to signing
// keys, naming neither the secret nor a bare "SUPABASE_URL is not set".
func TestLoadEnvLegacySecretOnly(t *testing.T) {
	t.Parallel()
	const secret = "super-secret-jwt-token-with-at-least-32-characters-long"
	env := map[string]string{"SUPABASE_JWT_SECRET": secret}
	_, err := LoadEnvFrom(func(k string) string { return env[k] }, nil)
	var ee *EnvError
	if !errors.As(err, &ee) || ee.Variable != "SUPABASE_URL" {
		t.Fatalf("LoadEnv: %v", err)
	}
	for _, want := range []string{"only SUPABASE_JWT_SECRET", "HS256 JWT secrets are not accepted", SigningKeysDocs, "supabase gen signing-key"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("LoadEnv error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("LoadEnv error holds the secret")
	}
	// The Go constructor with the same configuration.
	_, err = New(context.Background(), &Config{VerifierConfig: VerifierConfig{LegacyJWTSecret: secret}})
	if !errors.Is(err, ErrLegacySecret) || !strings.Contains(err.Error(), "HS256 JWT secrets are not accepted") ||
		!strings.Contains(err.Error(), SigningKeysDocs) || strings.Contains(err.Error(), secret) {
		t.Errorf("New: %v", err)
	}
	// Without any key material the message stays the plain one.
	_, err = LoadEnvFrom(func(string) string { return "" }, nil)
	if err == nil || strings.Contains(err.Error(), "HS256") {
		t.Errorf("LoadEnv without anything: %v", err)
	}
}
