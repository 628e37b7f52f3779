package authctx

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// Env is the project configuration read from the environment by
// [LoadEnv]: the variables of the Supabase CLI and dashboard.
type Env struct {
	// URL is SUPABASE_URL (required).
	URL string
	// PublishableKey is SUPABASE_PUBLISHABLE_KEY, else SUPABASE_ANON_KEY
	// (one is required: the refresh flow sends it as apikey).
	PublishableKey string
	// SecretKeys is SUPABASE_SECRET_KEYS, a JSON object of named keys
	// ({"default":"sb_secret_…"}), else SUPABASE_SECRET_KEY as
	// {"default": value}. Optional.
	SecretKeys map[string]string
	// JWKS is SUPABASE_JWKS, an inline JWK Set ({"keys":[…]} or […]).
	// Optional; when set no JWKS is fetched.
	JWKS json.RawMessage
	// JWTSecret is SUPABASE_JWT_SECRET (legacy HS256). Only used to explain
	// a misconfiguration; never to verify.
	JWTSecret string
}

// EnvError names the variable that is missing or malformed.
type EnvError struct {
	// Variable is the environment variable at fault.
	Variable string
	// Problem says what is wrong with it (never its value).
	Problem string
}

// Error implements error.
func (e *EnvError) Error() string { return "authctx: " + e.Variable + " " + e.Problem }

// LoadEnv reads the project configuration from the process environment.
// Non-zero fields of overrides win over the environment (and count as
// set). Errors are *[EnvError] naming the variable.
func LoadEnv(overrides *Env) (Env, error) {
	return LoadEnvFrom(os.Getenv, overrides)
}

// LoadEnvFrom is [LoadEnv] with a custom lookup (tests, secrets stores).
func LoadEnvFrom(getenv func(string) string, overrides *Env) (Env, error) {
	var e Env
	if overrides != nil {
		e = *overrides
	}
	if e.URL == "" {
		e.URL = strings.TrimSpace(getenv("SUPABASE_URL"))
	}
	if e.URL == "" {
		return e, &EnvError{Variable: "SUPABASE_URL", Problem: "is not set (the project URL, e.g. https://<ref>.supabase.co or http://127.0.0.1:54321)"}
	}
	if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return e, &EnvError{Variable: "SUPABASE_URL", Problem: "is not an http(s) URL"}
	}
	if e.PublishableKey == "" {
		e.PublishableKey = strings.TrimSpace(getenv("SUPABASE_PUBLISHABLE_KEY"))
	}
	if e.PublishableKey == "" {
		e.PublishableKey = strings.TrimSpace(getenv("SUPABASE_ANON_KEY"))
	}
	if e.PublishableKey == "" {
		return e, &EnvError{Variable: "SUPABASE_PUBLISHABLE_KEY", Problem: "is not set (nor SUPABASE_ANON_KEY)"}
	}
	if e.SecretKeys == nil {
		if raw := strings.TrimSpace(getenv("SUPABASE_SECRET_KEYS")); raw != "" {
			var keys map[string]string
			if err := json.Unmarshal([]byte(raw), &keys); err != nil {
				return e, &EnvError{Variable: "SUPABASE_SECRET_KEYS", Problem: `is not a JSON object of named keys ({"default":"sb_secret_…"})`}
			}
			for name, k := range keys {
				if k == "" {
					return e, &EnvError{Variable: "SUPABASE_SECRET_KEYS", Problem: fmt.Sprintf("has an empty key %q", name)}
				}
			}
			e.SecretKeys = keys
		} else if k := strings.TrimSpace(getenv("SUPABASE_SECRET_KEY")); k != "" {
			e.SecretKeys = map[string]string{"default": k}
		}
	}
	if len(e.JWKS) == 0 {
		if raw := strings.TrimSpace(getenv("SUPABASE_JWKS")); raw != "" {
			if !json.Valid([]byte(raw)) || (raw[0] != '{' && raw[0] != '[') {
				return e, &EnvError{Variable: "SUPABASE_JWKS", Problem: `is not a JWK Set ({"keys":[…]} or […])`}
			}
			e.JWKS = json.RawMessage(raw)
		}
	}
	if e.JWTSecret == "" {
		e.JWTSecret = getenv("SUPABASE_JWT_SECRET")
	}
	return e, nil
}

// Config returns a resolver configuration for the environment: project
// URL, inline JWKS, publishable key, secret keys (Secret is on when any
// is set) and the legacy secret for diagnostics. Adjust the result in Go
// before passing it to [New].
func (e Env) Config() Config {
	cfg := Config{
		ProjectURL:      e.URL,
		JWKS:            e.JWKS,
		SecretKeys:      e.SecretKeys,
		Secret:          len(e.SecretKeys) > 0,
		LegacyJWTSecret: e.JWTSecret,
	}
	if e.PublishableKey != "" {
		cfg.PublishableKeys = []string{e.PublishableKey}
	}
	return cfg
}
