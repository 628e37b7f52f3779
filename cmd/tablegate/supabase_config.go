package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// defaultSupabaseConfig is where the Supabase CLI keeps its project
// configuration, relative to the project directory.
const defaultSupabaseConfig = "supabase/config.toml"

// supabaseAuth is the part of the Supabase CLI's config.toml that
// tablegate reads: the [auth] settings about signing keys and refresh
// tokens. A setting the file leaves out is nil; one of the wrong type is
// nil too, and named in bad, so that it does not hide the others.
type supabaseAuth struct {
	SigningKeysPath            *string
	RefreshTokenReuseInterval  *int64
	EnableRefreshTokenRotation *bool
	bad                        map[string]string // key → what is wrong with it
}

// readSupabaseConfig reads the [auth] table of the config.toml at path.
// A missing file is (nil, nil); a file that is not TOML is an error.
func readSupabaseConfig(path string) (*supabaseAuth, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg struct {
		Auth map[string]any `toml:"auth"`
	}
	if err := toml.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("%s is not valid TOML: %w", path, err)
	}
	a := &supabaseAuth{bad: map[string]string{}}
	for key, v := range cfg.Auth {
		var want string
		switch key {
		case "signing_keys_path":
			if s, ok := v.(string); ok {
				a.SigningKeysPath = &s
				continue
			}
			want = "string"
		case "refresh_token_reuse_interval":
			if n, ok := v.(int64); ok {
				a.RefreshTokenReuseInterval = &n
				continue
			}
			want = "number"
		case "enable_refresh_token_rotation":
			if t, ok := v.(bool); ok {
				a.EnableRefreshTokenRotation = &t
				continue
			}
			want = "boolean"
		default:
			continue
		}
		a.bad[key] = fmt.Sprintf("%s: [auth] %s is not a %s", path, key, want)
	}
	return a, nil
}

// signingKeysPath resolves [auth] signing_keys_path as the Supabase CLI
// does: relative to the directory of config.toml (supabase/). ok is false
// when the setting is absent or empty.
func (a *supabaseAuth) signingKeysPath(configPath string) (path string, ok bool) {
	if a == nil || a.SigningKeysPath == nil || *a.SigningKeysPath == "" {
		return "", false
	}
	p := *a.SigningKeysPath
	if !filepath.IsAbs(p) {
		p = filepath.Join(filepath.Dir(configPath), p)
	}
	return p, true
}

// signingKeysDefault is the signing keys file a command uses when none is
// given: the [auth] signing_keys_path of the config.toml at configPath when
// it sets one, else signing_keys.json beside it (for
// supabase/config.toml: supabase/signing_keys.json, the conventional
// path). A config.toml that cannot be read counts as one that sets none;
// doctor reports it.
func signingKeysDefault(configPath string) string {
	a, _ := readSupabaseConfig(configPath)
	if p, ok := a.signingKeysPath(configPath); ok {
		return p
	}
	return filepath.Join(filepath.Dir(configPath), "signing_keys.json")
}
