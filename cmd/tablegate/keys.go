package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	signing "github.com/tablegate/tablegate/internal/keys"
)

// The names the rest of the command (demo, init, token and their tests)
// uses for internal/keys, imported as signing: package main has a keys
// helper in its tests.
type (
	keySet    = signing.Set
	jwk       = signing.JWK
	tokenSpec = signing.TokenSpec
)

const (
	algES256      = signing.ES256
	algEdDSA      = signing.EdDSA
	defaultIssuer = signing.DefaultIssuer
)

func loadKeyFile(path string) (*keySet, error)   { return signing.Load(path) }
func newSigningJWK() (jwk, error)                { return signing.NewJWK(signing.ES256) }
func writeKeyFile(path string, list []jwk) error { return signing.WriteFile(path, list) }
func newUUID() string                            { return signing.NewUUID() }
func mintToken(ks *keySet, s tokenSpec, now time.Time) (string, error) {
	return signing.Mint(ks, s, now)
}
func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	return signing.WriteFileAtomic(path, data, mode)
}

const keysUsage = `Usage:
  tablegate keys new [--alg ES256|RS256|EdDSA] [--path FILE] [--append] [--force]
  tablegate keys jwks [--signing-keys FILE]

"keys new" creates a signing key (ES256 by default, the Supabase
recommendation; RS256 or EdDSA with --alg) in the format of the Supabase CLI's
[auth] signing_keys_path (a JSON array of private JWKs, mode 0600; the same
file "supabase gen signing-key" writes) and prints the public JWKS that
/auth/v1/.well-known/jwks.json serves for it. Point GoTrue or the Supabase
CLI at the file (config.toml: [auth] signing_keys_path = "./signing_keys.json")
so that tokens they issue verify with tablegate, or use it with
"tablegate token" and "tablegate demo --signing-keys".

"keys jwks" prints the public JWKS of an existing file.
`

func runKeys(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, keysUsage)
		return usagef("missing subcommand: new or jwks")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, keysUsage)
		return nil
	case "new":
		return runKeysNew(e, args[1:])
	case "jwks":
		return runKeysJWKS(e, args[1:])
	}
	return usagef("unknown subcommand %q: want new or jwks", args[0])
}

func runKeysNew(e *env, args []string) error {
	fs := newFlagSet(e, "keys new", keysUsage)
	path := fs.String("path", signingKeysDefault(defaultSupabaseConfig), "signing keys `file` to write ([auth] signing_keys_path of "+defaultSupabaseConfig+" when it sets one)")
	appendKey := fs.Bool("append", false, "add a key to an existing file; the new key signs, older keys only verify")
	force := fs.Bool("force", false, "overwrite an existing file")
	alg := fs.String("alg", signing.ES256, "signing `algorithm`: ES256, RS256 or EdDSA (Ed25519)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	switch *alg {
	case signing.ES256, signing.RS256, signing.EdDSA:
	default:
		return usagef("--alg must be ES256, RS256 or EdDSA, got %q", *alg)
	}
	k, err := signing.NewJWK(*alg)
	if err != nil {
		return err
	}
	list := []signing.JWK{k}
	if old, err := os.ReadFile(*path); err == nil {
		switch {
		case *appendKey:
			var prev []signing.JWK
			if err := json.Unmarshal(old, &prev); err != nil {
				return fmt.Errorf("%s is not a JSON array of JWKs; refusing to append: %w", *path, err)
			}
			for i := range prev {
				prev[i].KeyOps = []string{"verify"}
			}
			list = append(list, prev...)
		case !*force:
			return fmt.Errorf("%s already exists; use --append to add a key (rotation) or --force to replace it", *path)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", *path, err)
	}
	if err := signing.WriteFile(*path, list); err != nil {
		return err
	}
	ks, err := signing.Load(*path)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "✓ wrote %d key(s) to %s (mode 0600); signing kid %s (%s)\n", len(list), *path, k.Kid, k.Alg)
	fmt.Fprintf(e.stderr, "  public JWKS (serve at /auth/v1/.well-known/jwks.json):\n")
	fmt.Fprintf(e.stdout, "%s\n", indentJSON(ks.PublicJWKS()))
	return nil
}

func runKeysJWKS(e *env, args []string) error {
	fs := newFlagSet(e, "keys jwks", keysUsage)
	path := fs.String("signing-keys", signingKeysDefault(defaultSupabaseConfig), "signing keys `file` to read ([auth] signing_keys_path of "+defaultSupabaseConfig+" when it sets one)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	ks, err := signing.Load(*path)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s\n", indentJSON(ks.PublicJWKS()))
	return nil
}

func indentJSON(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	out, _ := json.MarshalIndent(v, "", "  ")
	return out
}
