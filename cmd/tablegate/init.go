package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tablegate/tablegate/internal/envfile"
	"github.com/tablegate/tablegate/server"
)

//go:embed initdata/00001_create_todos.sql
var initMigrationSQL string

const initUsage = `Usage:
  tablegate init [--dir DIR] [--database-url URL] [--force]

Starts a project: everything a newcomer needs to go from an empty database
to a served table protected by row-level security.

Writes, in DIR (default the current directory):
  tablegate.json                     serve config: table todos at /api/todos, guard user
  supabase/signing_keys.json         an ES256 signing key (kept when it exists)
  db/migrations/00001_create_todos.sql
                                     public.todos with RLS forced, owner policies, grants
  .env                               DATABASE_URL, SUPABASE_JWKS (the public keys, inline),
                                     BASE_URL, USER_ID, USER_TOKEN, OTHER_USER_TOKEN
                                     (export lines; source it with ". ./.env")

Then:
  . ./.env
  tablegate migrate up                        # tablegate's roles, auth.uid(), tenants, ...
  tablegate migrate up --dir db/migrations    # your tables: public.todos
  tablegate serve --config tablegate.json

The database URL comes from --database-url, else DATABASE_URL, else
postgres://postgres@127.0.0.1:5432/postgres (edit .env when yours differs).
The minted tokens live 24 hours: "tablegate token --sub $USER_ID" mints more.
Existing files are kept unless --force.
`

// initTokenTTL is the lifetime of the tokens init writes to .env.
const initTokenTTL = 24 * time.Hour

func runInit(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "init", initUsage)
	dir := fs.String("dir", ".", "project `directory` to write into (created when missing)")
	dbFlag := fs.String("database-url", "", "Postgres `URL` written to .env (default $DATABASE_URL)")
	force := fs.Bool("force", false, "overwrite tablegate.json, the migration and .env when they exist")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	dbURL := *dbFlag
	if dbURL == "" {
		dbURL = e.getenv("DATABASE_URL")
	}
	if dbURL == "" {
		dbURL = "postgres://postgres@127.0.0.1:5432/postgres"
	}
	path := func(rel string) string { return filepath.Join(*dir, filepath.FromSlash(rel)) }
	files := []struct {
		rel  string
		data func() ([]byte, error)
		mode os.FileMode
	}{
		{"tablegate.json", initConfig, 0o644},
		{"db/migrations/00001_create_todos.sql", func() ([]byte, error) { return []byte(initMigrationSQL), nil }, 0o644},
	}
	// Refuse before writing anything, so a second run changes nothing.
	if !*force {
		for _, f := range append([]string{files[0].rel, files[1].rel}, ".env") {
			if _, err := os.Stat(path(f)); err == nil {
				return fmt.Errorf("%s already exists; pass --force to overwrite (or --dir for a new project)", path(f))
			}
		}
	}
	out := e.stderr
	keysPath := signingKeysDefault(path(defaultSupabaseConfig))
	var ks *keySet
	_, err := os.Stat(keysPath)
	switch {
	case err == nil:
		if ks, err = loadKeyFile(keysPath); err != nil {
			return err
		}
		fmt.Fprintf(out, "✓ kept %s\n", keysPath)
	case errors.Is(err, os.ErrNotExist):
		k, err := newSigningJWK()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(keysPath), 0o755); err != nil {
			return err
		}
		if err := writeKeyFile(keysPath, []jwk{k}); err != nil {
			return err
		}
		if ks, err = loadKeyFile(keysPath); err != nil {
			return err
		}
		fmt.Fprintf(out, "✓ wrote %s (ES256, kid %s, mode 0600)\n", keysPath, k.Kid)
	default:
		return err
	}
	// Mint the tokens before writing a file: a kept key file that cannot
	// sign must not leave a half-written project behind.
	now := time.Now()
	userID, otherID := newUUID(), newUUID()
	userToken, err := mintToken(ks, tokenSpec{Sub: userID, TTL: initTokenTTL, Email: "user@example.com"}, now)
	if err != nil {
		return err
	}
	otherToken, err := mintToken(ks, tokenSpec{Sub: otherID, TTL: initTokenTTL, Email: "other@example.com"}, now)
	if err != nil {
		return err
	}
	for _, f := range files {
		data, err := f.data()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path(f.rel)), 0o755); err != nil {
			return err
		}
		if err := writeFileAtomic(path(f.rel), data, f.mode); err != nil {
			return err
		}
		fmt.Fprintf(out, "✓ wrote %s\n", path(f.rel))
	}
	vars := []envfile.Var{
		{Key: "DATABASE_URL", Value: dbURL},
		{Key: "SUPABASE_JWKS", Value: string(ks.PublicJWKS())},
		{Key: "BASE_URL", Value: "http://" + initAddr},
		{Key: "USER_ID", Value: userID},
		{Key: "USER_TOKEN", Value: userToken},
		{Key: "OTHER_USER_TOKEN", Value: otherToken},
	}
	var env strings.Builder
	env.WriteString("# Written by \"tablegate init\". Source it: . ./.env\n")
	env.WriteString("# The tokens live 24 hours; mint more with: tablegate token --sub \"$USER_ID\"\n")
	env.Write(envfile.Format(vars))
	env.WriteString("\n")
	if err := writeFileAtomic(path(".env"), []byte(env.String()), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(out, "✓ wrote %s (mode 0600: it holds tokens)\n", path(".env"))
	cd := ""
	if *dir != "." {
		cd = "  cd " + envfile.Quote(*dir) + "\n"
	}
	fmt.Fprintf(e.stdout, `
Next:
%s  . ./.env
  tablegate migrate up                        # tablegate's roles, auth.uid(), tenants, ...
  tablegate migrate up --dir db/migrations    # your tables: public.todos with RLS
  tablegate serve --config tablegate.json

  curl -s -X POST "$BASE_URL/api/todos" -H "Authorization: Bearer $USER_TOKEN" \
    -H 'Content-Type: application/json' -d '{"title":"my first todo"}'
  curl -s "$BASE_URL/api/todos" -H "Authorization: Bearer $USER_TOKEN"        # your row
  curl -s "$BASE_URL/api/todos" -H "Authorization: Bearer $OTHER_USER_TOKEN"  # RLS: nothing
  curl -s "$BASE_URL/api/openapi.json"        # and $BASE_URL/api/docs in a browser
`, cd)
	return nil
}

// initAddr is the listen address of the project init writes: not the
// demo's 127.0.0.1:8080, so that both run side by side. BASE_URL in .env
// and the Go quick start's default address name it too.
const initAddr = "127.0.0.1:8081"

// initConfigJSON is the serve config init writes: the sample table at
// /api/todos for signed-in users, described at /api/openapi.json and
// /api/docs. The keys come from SUPABASE_JWKS in .env.
const initConfigJSON = `{
  "addr": "` + initAddr + `",
  "base_path": "/api",
  "title": "My API",
  "version": "0.1.0",
  "tables": {
    "todos": {
      "table": "public.todos",
      "operations": ["list", "get", "create", "update", "delete"],
      "guard": ["user"]
    }
  }
}
`

// initConfig returns initConfigJSON, checked like serve will load it.
func initConfig() ([]byte, error) {
	if _, err := server.ParseConfig([]byte(initConfigJSON), "tablegate.json"); err != nil {
		return nil, fmt.Errorf("init config: %w", err)
	}
	return []byte(initConfigJSON), nil
}
