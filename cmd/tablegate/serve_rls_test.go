package main

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/sql/migrations"
)

// writeServeConfig writes a serve config whose tokens verify with jwksURL.
func writeServeConfig(t *testing.T, jwksURL string, tables map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"auth": map[string]any{"jwks_url": jwksURL}, "tables": tables})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tablegate.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// serve refuses a table row-level security does not protect, naming the
// table and the SQL that protects it; allow_without_rls serves it with a
// warning at start and marks it in the OpenAPI document; an operation
// whose grant is missing, for the role its guard's callers run as, is one
// warning at start.
func TestServeRefusesTableWithoutRLS(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
create table public.notes (id int primary key, owner uuid, body text);
grant select, insert, update, delete on public.notes to authenticated;
create view public.note_view as select id, body from public.notes;
grant select on public.note_view to authenticated;
create table public.secrets (id int primary key, body text);
alter table public.secrets enable row level security;
create policy s on public.secrets for select to authenticated using (true);
grant select on public.secrets to authenticated;
create table public.pub (id int primary key);
alter table public.pub enable row level security;
grant select on public.pub to authenticated;`); err != nil {
		t.Fatal(err)
	}
	ks := testKeySet(t, algES256)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.PublicJWKS()) }))
	defer jwks.Close()
	vars := map[string]string{"DATABASE_URL": url}

	// Refused, with the table and the fix.
	r := runCLI(t, vars, "serve", "--config", writeServeConfig(t, jwks.URL, map[string]any{"notes": map[string]any{}}), "--addr", freeAddr(t))
	for _, want := range []string{
		"tables.notes: public.notes is not protected by row-level security: row-level security is disabled",
		"Fix: alter table public.notes enable row level security;",
		`"allow_without_rls": true in tables.notes`,
	} {
		if r.code != exitFailure || !strings.Contains(r.stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
		}
	}
	r = runCLI(t, vars, "serve", "--config", writeServeConfig(t, jwks.URL, map[string]any{"v": map[string]any{"table": "public.note_view", "key": "id"}}), "--addr", freeAddr(t))
	if r.code != exitFailure || !strings.Contains(r.stderr, "alter view public.note_view set (security_invoker = true);") {
		t.Errorf("view: exit %d\n%s", r.code, r.stderr)
	}

	// Opted out: served, warned at start, described.
	cfg := writeServeConfig(t, jwks.URL, map[string]any{
		"notes":   map[string]any{"allow_without_rls": true, "operations": []string{"list", "get"}},
		"secrets": map[string]any{},
		"pub":     map[string]any{"guard": []string{"anon"}, "operations": []string{"list"}},
	})
	addr := freeAddr(t)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	exit := make(chan result, 1)
	go func() {
		var out, errb syncBuffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
		code := run(sctx, e, []string{"serve", "--config", cfg, "--addr", addr})
		exit <- result{code, out.String(), errb.String()}
	}()
	base := "http://" + addr
	waitLive(t, base, cancel, exit)
	resp, err := http.Get(base + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Paths["/notes"]["get"]["x-service-rls"]; got != false {
		t.Errorf("GET /notes x-service-rls = %v", got)
	}
	if _, ok := doc.Paths["/secrets"]["get"]["x-service-rls"]; ok {
		t.Error("secrets is protected but marked")
	}
	cancel()
	var res result
	select {
	case res = <-exit:
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	if res.code != 0 {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for want, n := range map[string]int{
		"public.notes is served WITHOUT row-level security (Config.AllowWithoutRLS): row-level security is disabled":                                                         1,
		"secrets create: role authenticated lacks the INSERT privilege, so every request as authenticated answers 403; fix: grant insert on public.secrets to authenticated": 1,
		"secrets update: role authenticated lacks the UPDATE privilege":                                                                                                      1,
		"secrets delete: role authenticated lacks the DELETE privilege":                                                                                                      1,
		"secrets list: role authenticated": 0,
		"notes list:":                      0,
		"pub list: role anon lacks the SELECT privilege, so every request as anon answers 403; fix: grant select on public.pub to anon": 1,
		"pub list: role authenticated": 0,
	} {
		if c := strings.Count(res.stderr, want); c != n {
			t.Errorf("%d × %q, want %d:\n%s", c, want, n, res.stderr)
		}
	}
	if c := strings.Count(res.stderr, "level=WARN"); c != 5 {
		t.Errorf("%d warnings at start, want 5:\n%s", c, res.stderr)
	}
}

// Start-up errors say what is missing and what to run: an unmigrated
// database, a missing table, a missing database, a missing role.
func TestServeStartErrorsNameTheFix(t *testing.T) {
	t.Parallel()
	ks := testKeySet(t, algES256)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.PublicJWKS()) }))
	defer jwks.Close()
	cfg := writeServeConfig(t, jwks.URL, map[string]any{"todos": map[string]any{}})
	serve := func(url string) result {
		return runCLI(t, map[string]string{"DATABASE_URL": url}, "serve", "--config", cfg, "--addr", "127.0.0.1:0")
	}
	empty := pgtest.EmptyURL(t)
	if r := serve(empty); r.code != exitFailure || !strings.Contains(r.stderr, `the database is not migrated (no tablegate migrations applied): run "tablegate migrate up"`) {
		t.Errorf("unmigrated: %d %s", r.code, r.stderr)
	}
	var created bool
	if err := pgtest.Pool(t, empty).QueryRow(context.Background(), `select to_regclass('tablegate_migrations') is not null`).Scan(&created); err != nil || created {
		t.Errorf("serve created the version table: %v %v", created, err)
	}
	// Part way migrated (the first migration only): a warning naming the
	// command, then the refusal of the missing table.
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) < 2 {
		t.Fatalf("want two migrations at least: %v %v", files, err)
	}
	first := strings.TrimLeft(files[0][:strings.IndexByte(files[0], '_')], "0")
	if r := runCLI(t, map[string]string{"DATABASE_URL": empty}, "migrate", "up", "--to", first); r.code != 0 {
		t.Fatalf("migrate up --to %s: %d %s", first, r.code, r.stderr)
	}
	if r := serve(empty); r.code != exitFailure || !strings.Contains(r.stderr, `! tablegate migrations at version `+first+`, `) || !strings.Contains(r.stderr, `available: run "tablegate migrate up"`) {
		t.Errorf("part way: %d %s", r.code, r.stderr)
	}
	if r := serve(pgtest.URL(t)); r.code != exitFailure ||
		!strings.Contains(r.stderr, `tables.todos (public.todos)`) || !strings.Contains(r.stderr, `no such table or view in schema public; apply your migrations ("tablegate migrate up --dir <dir>"), or check the name`) {
		t.Errorf("no table: %d %s", r.code, r.stderr)
	}
	good, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	c := good.ConnConfig
	hostPort := c.Host + ":" + strconv.Itoa(int(c.Port))
	for url, want := range map[string]string{
		"postgres://postgres@" + hostPort + "/no_such_db":               `database "no_such_db" does not exist on ` + hostPort + `: create it (createdb no_such_db`,
		"postgres://no_such_role:pw@" + hostPort + "/postgres":          `role "no_such_role" does not exist on ` + hostPort + `: fix the user in the URL`,
		"postgres://postgres:pw@127.0.0.1:1/postgres?connect_timeout=2": "database unreachable: no Postgres server answers at 127.0.0.1:1 (database postgres, user postgres): start it",
	} {
		r := serve(url)
		if r.code != exitFailure || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "\n\t") || strings.Contains(r.stderr, ":pw@") {
			t.Errorf("%s: %d %s\nwant %q", url, r.code, r.stderr, want)
		}
	}
}
