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
	// URL is SUPABASE_URL: the JWKS location and the session cookie name.
	// Required unless JWKS is set.
	URL string
	// PublishableKey is SUPABASE_PUBLISHABLE_KEY, else SUPABASE_ANON_KEY.
	// Optional: only session refresh needs it ([New] says so when
	// Config.Refresh is on without one).
	PublishableKey string
	// SecretKeys is SUPABASE_SECRET_KEYS, a JSON object of named keys
	// ({"default":"sb_secret_…"}), else SUPABASE_SECRET_KEY as
	// {"default": value}. Optional.
	SecretKeys map[string]string
	// JWKS is SUPABASE_JWKS, an inline JWK Set ({"keys":[…]} or […]).
	// Optional; when set no JWKS is fetched.
	JWKS json.RawMessage
	// JWKSURL is SUPABASE_JWKS_URL, where to fetch the JWK Set instead of
	// {URL}/auth/v1/.well-known/jwks.json. Optional. The order is that of
	// @supabase/server: an inline SUPABASE_JWKS wins (JWKSURL is then
	// ignored), then SUPABASE_JWKS_URL, then the project URL.
	JWKSURL string
	// JWTSecret is SUPABASE_JWT_SECRET (legacy HS256). Only used to explain
	// a misconfiguration; never to verify.
	JWTSecret string
	// Issuer is SUPABASE_JWT_ISSUER: the iss every token must carry.
	// Empty means {URL}/auth/v1, what Supabase Auth writes; "*" turns the
	// iss check off (Config.AnyIssuer).
	Issuer string
	// Audience is SUPABASE_JWT_AUDIENCE: an aud every token must carry.
	// Empty means DefaultAudience ("authenticated"); "*" turns the aud
	// check off (Config.AnyAudience).
	Audience string
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
	if e.URL == "" && len(e.JWKS) == 0 && strings.TrimSpace(e.JWTSecret) != "" {
		return e, &EnvError{Variable: "SUPABASE_URL", Problem: "is not set and only SUPABASE_JWT_SECRET is: " + LegacySecretHelp +
			"; then set SUPABASE_URL (the project URL, whose JWKS lists the public keys) or SUPABASE_JWKS"}
	}
	if e.URL == "" && len(e.JWKS) == 0 {
		return e, &EnvError{Variable: "SUPABASE_URL", Problem: "is not set (the project URL, e.g. https://<ref>.supabase.co or http://127.0.0.1:54321; or give the keys inline in SUPABASE_JWKS)"}
	}
	if e.URL != "" {
		if u, err := url.Parse(e.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return e, &EnvError{Variable: "SUPABASE_URL", Problem: "is not an http(s) URL"}
		}
	}
	if e.PublishableKey == "" {
		e.PublishableKey = strings.TrimSpace(getenv("SUPABASE_PUBLISHABLE_KEY"))
	}
	if e.PublishableKey == "" {
		e.PublishableKey = strings.TrimSpace(getenv("SUPABASE_ANON_KEY"))
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
	if e.JWKSURL == "" {
		e.JWKSURL = strings.TrimSpace(getenv("SUPABASE_JWKS_URL"))
	}
	if e.JWKSURL != "" {
		if u, err := url.Parse(e.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return e, &EnvError{Variable: "SUPABASE_JWKS_URL", Problem: "is not an http(s) URL"}
		}
	}
	if e.Issuer == "" {
		e.Issuer = strings.TrimSpace(getenv("SUPABASE_JWT_ISSUER"))
	}
	if e.Audience == "" {
		e.Audience = strings.TrimSpace(getenv("SUPABASE_JWT_AUDIENCE"))
	}
	return e, nil
}

// Config returns a resolver configuration for the environment: project
// URL, inline JWKS (else SUPABASE_JWKS_URL), publishable key, secret keys (Secret is on when any
// is set), the issuer and audience every token must carry (by default
// {URL}/auth/v1 and "authenticated"; "*" opts out) and the legacy secret
// for diagnostics. Adjust the result in Go before passing it to [New].
func (e Env) Config() *Config {
	cfg := &Config{
		ProjectURL:     e.URL,
		VerifierConfig: VerifierConfig{JWKS: e.JWKS, LegacyJWTSecret: e.JWTSecret},
		SecretKeys:     e.SecretKeys,
		Secret:         len(e.SecretKeys) > 0,
	}
	if len(e.JWKS) == 0 {
		cfg.JWKSURL = e.JWKSURL
	}
	if e.Issuer == "*" {
		cfg.AnyIssuer = true
	} else {
		cfg.Issuer = e.Issuer
	}
	if e.Audience == "*" {
		cfg.AnyAudience = true
	} else {
		cfg.Audience = e.Audience
	}
	cfg.Issuer, cfg.Audience = cfg.CheckedIssuer(), cfg.CheckedAudience()
	if e.PublishableKey != "" {
		cfg.PublishableKeys = []string{e.PublishableKey}
	}
	return cfg
}
