package main

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// lineOf returns the checklist line that starts with prefix, or "".
func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestDoctorDetectsTableWithoutRLS(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "missing.json")

	// The demo table passes every table check.
	r := runCLI(t, nil, "doctor", "--database-url", url, "--signing-keys", keys, "--supabase-config", keys, "--table", "public.todos")
	if r.code != 0 {
		t.Fatalf("doctor on public.todos: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"✓ database", "✓ migrations: current", "✓ RLS public.todos: enabled and forced",
		"✓ grants public.todos", "✓ anonymous sign-ins", "✓ tenant claim", "! signing keys", "- JWKS", "i refresh-token reuse interval"} {
		if lineOf(r.stdout, want) == "" {
			t.Errorf("missing line %q in\n%s", want, r.stdout)
		}
	}

	_, err := pool.Exec(ctx, `
	  create table public.norls (id int primary key, note text);
	  grant select, insert on public.norls to authenticated;
	  create table public.notforced (id int primary key);
	  alter table public.notforced enable row level security;
	  create policy r on public.notforced for select to authenticated using (true);
	  grant select on public.notforced to authenticated;
	  create table public.truncatable (id int primary key);
	  alter table public.truncatable enable row level security;
	  alter table public.truncatable force row level security;
	  create policy r on public.truncatable for select to authenticated using (true);
	  grant select, truncate on public.truncatable to authenticated;
	  create table public.guestwrites (id int primary key, tenant_id uuid);
	  alter table public.guestwrites enable row level security;
	  alter table public.guestwrites force row level security;
	  create policy w on public.guestwrites for insert to authenticated
	    with check (tenant_id = (auth.jwt() ->> 'org_id')::uuid);
	  grant select, insert on public.guestwrites to authenticated;`)
	if err != nil {
		t.Fatal(err)
	}

	// Each broken table fails or warns with its own line.
	r = runCLI(t, map[string]string{"DATABASE_URL": url}, "doctor", "--signing-keys", keys, "--supabase-config", keys,
		"--table", "norls", "--table", "public.notforced", "--table", "public.truncatable", "--table", "public.guestwrites", "--table", "public.ghost")
	if r.code != exitFailure {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stdout)
	}
	for prefix, want := range map[string]string{
		"✗ RLS public.norls":          "DISABLED",
		"✗ RLS public.notforced":      "not forced",
		"✗ grants public.truncatable": "TRUNCATE",
		"✗ table public.ghost":        "does not exist",
		"! anonymous sign-ins":        "public.guestwrites INSERT (policy w)",
		"! tenant claim":              `reads "org_id"`,
		"✓ RLS public.guestwrites":    "enabled and forced",
	} {
		if l := lineOf(r.stdout, prefix); !strings.Contains(l, want) {
			t.Errorf("line %q: got %q, want it to contain %q\n%s", prefix, l, want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "public.norls INSERT (RLS disabled)") {
		t.Errorf("anonymous check should name norls INSERT:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "→ alter table public.norls enable row level security") {
		t.Errorf("no fix for norls:\n%s", r.stdout)
	}

	// Tables come from a serve config too; a permission nobody holds warns.
	cfg := filepath.Join(t.TempDir(), "tablegate.json")
	body := `{"permissions":{"todos.delete":["admin"]},"tables":{"todos":{"permissions":{"delete":"todos.delete","update":"todos.update"}},"norls":{}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "doctor", "--database-url", url, "--signing-keys", keys, "--supabase-config", keys, "--config", cfg)
	if r.code != exitFailure {
		t.Fatalf("exit %d with public.norls in the config\n%s", r.code, r.stdout)
	}
	for prefix, want := range map[string]string{
		"✓ config":           "2 table(s)",
		"! permissions":      `tables.todos.permissions.update = "todos.update"`,
		"✓ RLS public.todos": "enabled and forced",
		"✗ RLS public.norls": "DISABLED",
	} {
		if l := lineOf(r.stdout, prefix); !strings.Contains(l, want) {
			t.Errorf("line %q: got %q, want %q\n%s", prefix, l, want, r.stdout)
		}
	}
}

func TestDoctorJWKSAndKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if r := runCLI(t, nil, "keys", "new", "--path", keys); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ks, _ := loadKeyFile(keys)
	asym := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/auth/v1/.well-known/jwks.json" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(ks.PublicJWKS())
	}))
	defer asym.Close()
	hsOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"keys":[]}`))
	}))
	defer hsOnly.Close()
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte("[api]\nport = 54321\n[auth]\nrefresh_token_reuse_interval = 0 # testing\nsigning_keys_path = \"./keys.json\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The database is unreachable here: the checklist still runs and fails.
	bad := "postgres://nobody@127.0.0.1:1/none?connect_timeout=2"
	r := runCLI(t, nil, "doctor", "--database-url", bad, "--signing-keys", keys, "--auth-url", asym.URL, "--supabase-config", cfg)
	if r.code != exitFailure {
		t.Fatalf("exit %d\n%s", r.code, r.stdout)
	}
	for prefix, want := range map[string]string{
		"✓ signing keys":                 "1 key(s), signing kid",
		"✓ JWKS":                         "1 asymmetric key(s) (ES256)",
		"✗ database":                     "unreachable",
		"! refresh-token reuse interval": "refresh_token_reuse_interval = 0",
	} {
		if l := lineOf(r.stdout, prefix); !strings.Contains(l, want) {
			t.Errorf("line %q: got %q, want %q\n%s", prefix, l, want, r.stdout)
		}
	}
	r = runCLI(t, map[string]string{"SUPABASE_URL": hsOnly.URL, "GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL": "10"},
		"doctor", "--database-url", bad, "--signing-keys", keys)
	if l := lineOf(r.stdout, "! JWKS"); !strings.Contains(l, "HS256") {
		t.Errorf("HS256-only JWKS: %q\n%s", l, r.stdout)
	}
	if lineOf(r.stdout, "✓ refresh-token reuse interval") == "" {
		t.Errorf("env reuse interval 10 should pass:\n%s", r.stdout)
	}
	// SUPABASE_JWKS (inline) is read, not fetched: with only it set, the
	// check passes without any server.
	r = runCLI(t, map[string]string{"SUPABASE_JWKS": string(ks.PublicJWKS())}, "doctor", "--database-url", bad, "--signing-keys", keys)
	if l := lineOf(r.stdout, "✓ JWKS"); !strings.Contains(l, "SUPABASE_JWKS (inline): 1 asymmetric key(s) (ES256)") {
		t.Errorf("inline SUPABASE_JWKS: %q\n%s", lineOf(r.stdout, "JWKS"), r.stdout)
	}
	r = runCLI(t, map[string]string{"SUPABASE_JWKS": "not json"}, "doctor", "--database-url", bad, "--signing-keys", keys)
	if l := lineOf(r.stdout, "✗ JWKS"); !strings.Contains(l, "SUPABASE_JWKS (inline) is not a JWKS document") {
		t.Errorf("malformed SUPABASE_JWKS: %q\n%s", lineOf(r.stdout, "JWKS"), r.stdout)
	}
	// A JWKS that does not list the local signing key is a warning.
	other := filepath.Join(dir, "other.json")
	runCLI(t, nil, "keys", "new", "--path", other)
	r = runCLI(t, nil, "doctor", "--database-url", bad, "--signing-keys", other, "--jwks-url", asym.URL+"/auth/v1/.well-known/jwks.json")
	if l := lineOf(r.stdout, "! JWKS"); !strings.Contains(l, "does not list the local signing kid") {
		t.Errorf("kid mismatch: %q\n%s", l, r.stdout)
	}
}

// The Supabase CLI's [auth] signing_keys_path (relative to supabase/) is
// where keys new writes and where token, keys jwks, doctor and init look
// when no path is given; doctor warns when config.toml does not set it
// (the local auth server then signs HS256 tokens) or names another file.
// Not parallel: it runs the commands in a project directory of its own.
func TestSigningKeysPathFromSupabaseConfig(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.MkdirAll("supabase", 0o755); err != nil {
		t.Fatal(err)
	}
	writeConfig := func(auth string) {
		t.Helper()
		if err := os.WriteFile("supabase/config.toml", []byte("project_id = \"p\"\n\n[auth]\nenabled = true\n"+auth), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig("signing_keys_path = \"./keys/local.json\" # beside config.toml\n")
	configured := filepath.Join("supabase", "keys", "local.json")
	if err := os.MkdirAll(filepath.Dir(configured), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"

	r := runCLI(t, nil, "doctor", "--database-url", bad)
	if l := lineOf(r.stdout, "! signing keys"); !strings.Contains(l, "no signing keys file at "+configured+" ([auth] signing_keys_path of supabase/config.toml)") {
		t.Errorf("configured file missing: %q\n%s", l, r.stdout)
	}
	if r := runCLI(t, nil, "keys", "new"); r.code != 0 || !strings.Contains(r.stderr, "to "+configured) {
		t.Fatalf("keys new: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat("supabase/signing_keys.json"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("keys new wrote the conventional path too: %v", err)
	}
	ks, err := loadKeyFile(configured)
	if err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, nil, "keys", "jwks"); r.code != 0 || !strings.Contains(r.stdout, ks.Keys[0].Kid) {
		t.Errorf("keys jwks: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "token", "--sub", demoUserID); r.code != 0 || strings.Count(strings.TrimSpace(r.stdout), ".") != 2 {
		t.Errorf("token: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "doctor", "--database-url", bad)
	if l := lineOf(r.stdout, "✓ signing keys"); !strings.Contains(l, configured+": 1 key(s)") {
		t.Errorf("configured file present: %q\n%s", lineOf(r.stdout, "signing keys"), r.stdout)
	}
	// The same file named by an absolute path is the same file.
	abs, _ := filepath.Abs(configured)
	r = runCLI(t, nil, "doctor", "--database-url", bad, "--signing-keys", abs)
	if lineOf(r.stdout, "✓ signing keys") == "" {
		t.Errorf("absolute path of the configured file: %q\n%s", lineOf(r.stdout, "signing keys"), r.stdout)
	}
	// A value of the wrong type elsewhere in [auth] hides nothing.
	writeConfig("refresh_token_reuse_interval = \"10\"\nsigning_keys_path = \"./keys/local.json\"\n")
	if r := runCLI(t, nil, "keys", "jwks"); r.code != 0 || !strings.Contains(r.stdout, ks.Keys[0].Kid) {
		t.Errorf("keys jwks with a mistyped setting beside: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "doctor", "--database-url", bad)
	if lineOf(r.stdout, "✓ signing keys") == "" || !strings.Contains(lineOf(r.stdout, "! refresh-token reuse interval"), "refresh_token_reuse_interval is not a number") {
		t.Errorf("mistyped reuse interval:\n%s", r.stdout)
	}
	writeConfig("signing_keys_path = \"./keys/local.json\"\n")
	// A missing file that is not the configured one: doctor names the configured one.
	r = runCLI(t, nil, "doctor", "--database-url", bad, "--signing-keys", filepath.Join(dir, "absent.json"))
	if l := lineOf(r.stdout, "! signing keys"); !strings.Contains(l, "the local auth server signs with "+configured) {
		t.Errorf("missing other file: %q\n%s", l, r.stdout)
	}
	// init in that project keeps the configured key.
	if r := runCLI(t, nil, "init", "--dir", ".", "--database-url", bad); !strings.Contains(r.stderr, "kept "+configured) {
		t.Errorf("init: exit %d\n%s", r.code, r.stderr)
	}

	// A flag naming another file: doctor says which one the auth server uses.
	other := filepath.Join(dir, "other.json")
	runCLI(t, nil, "keys", "new", "--path", other)
	r = runCLI(t, nil, "doctor", "--database-url", bad, "--signing-keys", other)
	if l := lineOf(r.stdout, "! signing keys"); !strings.Contains(l, "the local auth server signs with "+configured) {
		t.Errorf("another file: %q\n%s", lineOf(r.stdout, "signing keys"), r.stdout)
	}
	// No signing_keys_path: HS256 locally, a warning with the line to add.
	writeConfig("")
	if err := os.Rename(configured, "supabase/signing_keys.json"); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "doctor", "--database-url", bad)
	if l := lineOf(r.stdout, "! signing keys"); !strings.Contains(l, "sets no [auth] signing_keys_path") ||
		!strings.Contains(r.stdout, `add signing_keys_path = "./signing_keys.json" under [auth]`) {
		t.Errorf("no signing_keys_path: %q\n%s", lineOf(r.stdout, "signing keys"), r.stdout)
	}
	// A config.toml that is not TOML is reported, not ignored.
	if err := os.WriteFile("supabase/config.toml", []byte("[auth\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "doctor", "--database-url", bad)
	if l := lineOf(r.stdout, "! refresh-token reuse interval"); !strings.Contains(l, "is not valid TOML") {
		t.Errorf("broken config.toml: %q\n%s", lineOf(r.stdout, "refresh-token"), r.stdout)
	}
}

// With a serve config the doctor checks the served operations' grants as
// serve does at start, and reports a table served with allow_without_rls
// as a warning, not a failure.
func TestDoctorConfigOperationsAndOptOut(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), `
create table public.secrets (id int primary key);
alter table public.secrets enable row level security;
alter table public.secrets force row level security;
create policy s on public.secrets for select to authenticated using (true);
grant select on public.secrets to authenticated;
create table public.catalog (id int primary key);
grant select on public.catalog to authenticated, anon;`); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "missing.json")
	cfg := filepath.Join(t.TempDir(), "tablegate.json")
	body := `{"tables":{"secrets":{"operations":["list","create","delete"]},"catalog":{"operations":["list"],"guard":["anon"],"allow_without_rls":true}}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "doctor", "--database-url", url, "--signing-keys", keys, "--supabase-config", keys, "--config", cfg)
	for prefix, want := range map[string]string{
		"! operations public.secrets": "create: authenticated lacks INSERT; delete: authenticated lacks DELETE (each answers 403)",
		"! RLS public.catalog":        "served WITHOUT row-level security (allow_without_rls): row-level security is disabled",
		"✓ RLS public.secrets":        "enabled and forced",
	} {
		if l := lineOf(r.stdout, prefix); !strings.Contains(l, want) {
			t.Errorf("line %q: got %q, want %q\n%s", prefix, l, want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "→ grant insert on public.secrets to authenticated; grant delete on public.secrets to authenticated") {
		t.Errorf("no fix:\n%s", r.stdout)
	}
	if lineOf(r.stdout, "! operations public.catalog") != "" || lineOf(r.stdout, "✗ RLS public.catalog") != "" {
		t.Errorf("catalog is granted to anon and opted out:\n%s", r.stdout)
	}
}
