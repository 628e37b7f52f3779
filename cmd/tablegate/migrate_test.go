package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/sql/migrations"
)

func TestMigrateUpStatusDown(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	vars := map[string]string{"DATABASE_URL": url}

	r := runCLI(t, vars, "migrate", "status")
	if r.code != 0 || !strings.Contains(r.stdout, "pending: run \"tablegate migrate up\"") {
		t.Fatalf("status before: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "up", "--to", "2")
	if r.code != 0 || strings.Count(r.stdout, "✓ applied") != 2 || !strings.Contains(r.stdout, "version 2") {
		t.Fatalf("up --to 2: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	third := migrationFiles(t)[2]
	r = runCLI(t, vars, "migrate", "up", "--to", "3")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "✓ applied "+third+" (") || strings.Count(r.stdout, "✓ applied") != 1 {
		t.Fatalf("up --to 3: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "status")
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d pending", countMigrations(t)-3)) {
		t.Fatalf("status at 3: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "down")
	if r.code != 0 || !strings.Contains(r.stdout, "✓ rolled back "+third) {
		t.Fatalf("down: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "down", "--to", "0")
	if r.code != 0 || !strings.Contains(r.stdout, "✓ version 0") {
		t.Fatalf("down --to 0: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "down")
	if r.code != 0 || !strings.Contains(r.stdout, "nothing to roll back") {
		t.Fatalf("down at 0: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "up")
	if r.code != 0 || !strings.Contains(r.stdout, "migration(s) applied") {
		t.Fatalf("up: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "up")
	if r.code != 0 || !strings.Contains(r.stdout, "✓ migrations current") {
		t.Fatalf("up again: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "migrate", "status", "--database-url", url)
	if r.code != 0 || !strings.Contains(r.stdout, "all migrations applied") || strings.Contains(r.stdout, "pending") {
		t.Fatalf("status after: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Every migration rolls back, newest first, and applies again.
	r = runCLI(t, vars, "migrate", "down", "--to", "0")
	if r.code != 0 || strings.Count(r.stdout, "✓ rolled back") != countMigrations(t) || !strings.Contains(r.stdout, "✓ version 0") {
		t.Fatalf("full down: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "up")
	if r.code != 0 || strings.Count(r.stdout, "✓ applied") != countMigrations(t) {
		t.Fatalf("up after full down: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, vars, "migrate", "status", "--to", "3")
	if r.code != exitUsage {
		t.Fatalf("status --to: %d", r.code)
	}
	r = runCLI(t, nil, "migrate", "up", "--database-url", "postgres://nobody:hunter2@127.0.0.1:1/none?connect_timeout=2")
	if r.code != exitFailure || !strings.Contains(r.stderr, "database unreachable") || strings.Contains(r.stderr, "hunter2") {
		t.Fatalf("unreachable: %d %s", r.code, r.stderr)
	}
}

// countMigrations counts the embedded migration files.
func countMigrations(t *testing.T) int {
	t.Helper()
	return len(migrationFiles(t))
}

// migrationFiles lists tablegate's migration files in version order.
func migrationFiles(t *testing.T) []string {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v", err)
	}
	return files
}

// TestMigrateOnANewerDatabase: a database at a version this build does not
// know is said to be newer, by up, status, down and doctor, instead of
// "current" (and down's "version not found").
func TestMigrateOnANewerDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	newer := countMigrationsMax(t) + 7
	if _, err := pool.Exec(t.Context(), fmt.Sprintf(`insert into tablegate_migrations (version_id, is_applied) values (%d, true)`, newer)); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DATABASE_URL": url}
	want := fmt.Sprintf("the database is at version %d, newer than the newest migration here", newer)
	if r := runCLI(t, vars, "migrate", "up"); r.code != 0 || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "current") {
		t.Errorf("up: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, vars, "migrate", "status"); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("status: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, vars, "migrate", "down"); r.code != exitFailure || !strings.Contains(r.stderr, want) {
		t.Errorf("down: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runCLI(t, vars, "doctor"); !strings.Contains(r.stdout, "! migrations: version "+fmt.Sprint(newer)+", newer than this build") {
		t.Errorf("doctor: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// countMigrationsMax is the newest embedded migration's version.
func countMigrationsMax(t *testing.T) int {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatal(err)
	}
	var v int
	if _, err := fmt.Sscanf(files[len(files)-1], "%05d_", &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMigrateStatusNamesTheDir: status of a --dir set tells the command
// that applies it, --dir included.
func TestMigrateStatusNamesTheDir(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "00001_a.sql"), []byte("-- +goose Up\ncreate table a (id int);\n-- +goose Down\ndrop table a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "status", "--dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, `1 pending: run "tablegate migrate up --dir `+dir+`"`) {
		t.Errorf("status --dir: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMigrateDirClosesVersionTable: goose's version table of an
// application's migrations (goose_db_version, created in public) is closed
// to the API roles, which a Supabase database grants every new table of
// public by default privileges and serves over its REST API: anon could
// insert a high version (later migrations skipped, "up" reporting success)
// or delete rows (migrations run again). A table an earlier build left
// open is closed by the next "up", with nothing pending.
func TestMigrateDirClosesVersionTable(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(t.Context(), `
alter default privileges in schema public grant all on tables to anon, authenticated, service_role;
alter default privileges in schema public grant all on sequences to anon, authenticated, service_role;`); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "00001_a.sql"), []byte("-- +goose Up\ncreate table a (id int);\n-- +goose Down\ndrop table a;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := func() {
		t.Helper()
		if r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "up", "--dir", dir); r.code != 0 || r.stderr != "" {
			t.Fatalf("migrate up --dir: %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	closed := func(when string) {
		t.Helper()
		var rls, anyPriv bool
		if err := pool.QueryRow(t.Context(), `select c.relrowsecurity,
  exists (select from unnest(array['anon','authenticated','service_role']) r,
          unnest(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE']) p
          where has_table_privilege(r, c.oid, p))
from pg_class c where c.oid = 'public.goose_db_version'::regclass`).Scan(&rls, &anyPriv); err != nil {
			t.Fatal(err)
		}
		if !rls || anyPriv {
			t.Errorf("%s: goose_db_version row security %v, an API role holds a privilege: %v", when, rls, anyPriv)
		}
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(t.Context())
		if _, err := tx.Exec(t.Context(), `set local role anon`); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), `insert into public.goose_db_version (version_id, is_applied) values (99999, true)`); err == nil {
			t.Errorf("%s: anon inserted a version", when)
		}
	}
	// status creates goose's table too.
	if r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "status", "--dir", dir); r.code != 0 {
		t.Fatalf("migrate status --dir: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	closed("after a status on a new database")
	up()
	closed("after the first up")

	// An up that fails part way.
	if err := os.WriteFile(filepath.Join(dir, "00002_bad.sql"), []byte("-- +goose Up\nselect 1/0;\n-- +goose Down\nselect 1;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `grant all on public.goose_db_version to anon;
alter table public.goose_db_version disable row level security`); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "up", "--dir", dir); r.code == 0 {
		t.Fatalf("migrate up --dir with a failing migration exited 0:\n%s", r.stdout)
	}
	closed("after a failed up")
	if err := os.Remove(filepath.Join(dir, "00002_bad.sql")); err != nil {
		t.Fatal(err)
	}

	// As an earlier build left it: open to the API roles.
	if _, err := pool.Exec(t.Context(), `grant all on public.goose_db_version to anon, authenticated, service_role;
alter table public.goose_db_version disable row level security`); err != nil {
		t.Fatal(err)
	}
	up()
	closed("after an up with nothing pending")

	// A table closed by hand whose id sequence is still granted.
	var seq string
	if err := pool.QueryRow(t.Context(), `select s from pg_attribute a, pg_get_serial_sequence('public.goose_db_version', a.attname) s
where a.attrelid = 'public.goose_db_version'::regclass and a.attnum > 0 and s is not null`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `grant usage, select, update on sequence `+seq+` to anon`); err != nil {
		t.Fatal(err)
	}
	up()
	var seqOpen bool
	if err := pool.QueryRow(t.Context(), `select has_sequence_privilege('anon', $1, 'USAGE, SELECT, UPDATE')`, seq).Scan(&seqOpen); err != nil || seqOpen {
		t.Errorf("goose_db_version's sequence %s still granted to anon after up (%v)", seq, err)
	}

	// A closed table is left alone: a status does not wait behind a
	// reader of the table for the lock the closing takes.
	tx, err := pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `select count(*) from public.goose_db_version`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "status", "--dir", dir); r.code != 0 || time.Since(start) > 4*time.Second {
		t.Errorf("status --dir beside a reader: %d after %v\n%s%s", r.code, time.Since(start), r.stdout, r.stderr)
	}
	_ = tx.Rollback(t.Context())

	// Closing is best effort: on a read-only server the status stands, and
	// a warning says what to run.
	if _, err := pool.Exec(t.Context(), `grant all on public.goose_db_version to anon`); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, map[string]string{"DATABASE_URL": url + "&options=-c%20default_transaction_read_only%3Don"}, "migrate", "status", "--dir", dir)
	if r.code != 0 || !strings.Contains(r.stderr, "could not close the version table") || !strings.Contains(r.stderr, "revoke all on table") {
		t.Errorf("status --dir on a read-only server: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestMigrateDownNamesDependents: migrating down through a migration whose
// objects an application's policy still reads fails, changes nothing of
// that migration, and the error names the dependent policy and says what
// to do, instead of Postgres' bare "other objects depend on it".
func TestMigrateDownNamesDependents(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	vars := map[string]string{"DATABASE_URL": url}
	if r := runCLI(t, vars, "migrate", "up"); r.code != 0 {
		t.Fatalf("up: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(t.Context(), `create table public.notes (id int primary key, tenant_id uuid not null);
alter table public.notes enable row level security;
create policy notes_member_read on public.notes for select to authenticated using (tenant_id = (select id from tablegate.member_tenant))`); err != nil {
		t.Fatal(err)
	}
	// The migration that creates the views, and the one after it.
	files := migrationFiles(t)
	var views int
	for i, f := range files {
		if strings.HasSuffix(f, "_tenants.sql") {
			views = i + 1
		}
	}
	if views == 0 || views == len(files) {
		t.Fatalf("no tenants migration with one after it in %v", files)
	}
	r := runCLI(t, vars, "migrate", "down", "--to", fmt.Sprint(views-1))
	if r.code != exitFailure {
		t.Fatalf("down past %s with a policy reading its view: exit %d\n%s%s", files[views-1], r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{files[views-1], "policy notes_member_read on table notes depends on view tablegate.member_tenant", "drop or rewrite", "docs/tenant.md"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "✓ rolled back "+files[views]) || !strings.Contains(r.stdout, fmt.Sprintf("✗ stopped at version %d", views)) {
		t.Errorf("%s was rolled back before %s was refused, and the output does not say so, or where it stopped:\n%s", files[views], files[views-1], r.stdout)
	}
	var version int64
	if err := pool.QueryRow(t.Context(), `select max(version_id) from public.tablegate_migrations`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != int64(views) {
		t.Errorf("version after the refused down: %d, want %d (%s kept)", version, views, files[views-1])
	}
}

// TestDependentsHint: the hint prints Postgres' DETAIL for a refusal
// because of dependent objects only, and the advice about the
// member-tenant views only for tablegate's own migrations when the DETAIL
// names one of them.
func TestDependentsHint(t *testing.T) {
	const advice = "can call tablegate.member_tenant_id()"
	view := &pgconn.PgError{Code: "2BP01", Detail: "policy p on table t depends on view tablegate.full_member_tenant"}
	function := &pgconn.PgError{Code: "2BP01", Detail: "policy p on table t depends on function tablegate.full_member_tenant_id()"}
	for _, tc := range []struct {
		name       string
		err        error
		ours       bool
		want, not  []string
		wantsEmpty bool
	}{
		{name: "a view, tablegate's", err: fmt.Errorf("wrapped: %w", view), ours: true, want: []string{view.Detail, "not rolled back", advice}},
		{name: "a view, --dir", err: view, want: []string{view.Detail}, not: []string{advice}},
		{name: "a function", err: function, ours: true, want: []string{function.Detail, "not rolled back"}, not: []string{advice}},
		{name: "no detail", err: &pgconn.PgError{Code: "2BP01"}, ours: true, want: []string{"the failed migration was not rolled back"}, not: []string{"\n\n"}},
		{name: "another error", err: &pgconn.PgError{Code: "42P01", Detail: view.Detail}, ours: true, wantsEmpty: true},
		{name: "not Postgres", err: fmt.Errorf("boom"), ours: true, wantsEmpty: true},
	} {
		got := dependentsHint(tc.err, tc.ours)
		if tc.wantsEmpty != (got == "") {
			t.Errorf("%s: hint %q", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q lacks %q", tc.name, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: hint %q has %q", tc.name, got, n)
			}
		}
	}
}

// Applying your migrations before tablegate's says which command to run
// first, not only Postgres' "schema "auth" does not exist".
func TestMigrateDirBeforeTablegateSaysWhatFirst(t *testing.T) {
	t.Parallel()
	url := pgtest.EmptyURL(t)
	dir := t.TempDir()
	body := "-- +goose Up\ncreate table public.todos (id int primary key, owner uuid default auth.uid());\n-- +goose Down\ndrop table public.todos;\n"
	if err := os.WriteFile(filepath.Join(dir, "00001_todos.sql"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "up", "--dir", dir)
	if r.code != exitFailure || !strings.Contains(r.stderr, `schema "auth" does not exist`) ||
		!strings.Contains(r.stderr, `tablegate's own migrations are not applied`) || !strings.Contains(r.stderr, `run "tablegate migrate up" first, then "tablegate migrate up --dir `) {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Once tablegate's are applied, the same migration runs.
	if r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "up"); r.code != 0 {
		t.Fatalf("migrate up: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, map[string]string{"DATABASE_URL": url}, "migrate", "up", "--dir", dir); r.code != 0 {
		t.Errorf("migrate up --dir after: %d %s", r.code, r.stderr)
	}
}
