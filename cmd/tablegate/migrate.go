package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/envfile"
	"github.com/tablegate/tablegate/internal/pgconnect"
	"github.com/tablegate/tablegate/telemetry"
)

const migrateUsage = `Usage:
  tablegate migrate up     [--database-url URL] [--to VERSION] [--dir DIR]
  tablegate migrate down   [--database-url URL] [--to VERSION] [--dir DIR]
  tablegate migrate status [--database-url URL] [--dir DIR]

Applies tablegate's embedded SQL migrations (roles, auth.* helpers, the
tablegate schema with current_tenant_id(), tenants and memberships) with goose.
The version table is tablegate_migrations, so an application's own goose
migrations can share the database. "up" applies every pending migration (or
up to --to); "down" rolls back the latest one (or down to --to; --to 0 rolls
back all). Several processes may migrate at once: a session advisory lock
serializes them.

--dir DIR applies your application's goose SQL migrations from DIR instead
(files NNNNN_name.sql with "-- +goose Up" / "-- +goose Down" sections, as
"tablegate init" writes them), with goose's own version table
goose_db_version, which "up" closes to the API roles as tablegate's own:
run "tablegate migrate up" first, then "tablegate migrate up --dir DIR".

The database comes from --database-url, else DATABASE_URL.
`

func runMigrate(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, migrateUsage)
		return usagef("missing subcommand: up, down or status")
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, migrateUsage)
		return nil
	case "up", "down", "status":
	default:
		return usagef("unknown subcommand %q: want up, down or status", sub)
	}
	fs := newFlagSet(e, "migrate "+sub, migrateUsage)
	dbURL := fs.String("database-url", "", "Postgres `URL` (default $DATABASE_URL)")
	to := fs.Int64("to", -1, "target `version` (up: apply up to it; down: roll back to it, 0 = all)")
	dir := fs.String("dir", "", "apply your own goose SQL migrations from `DIR` (version table goose_db_version) instead of tablegate's")
	if err := parse(e, fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if sub == "status" && *to >= 0 {
		return usagef("--to applies to up and down only")
	}
	open := migratorFunc(db.NewMigrator)
	if *dir != "" {
		if st, err := os.Stat(*dir); err != nil || !st.IsDir() {
			return usagef("--dir %s is not a directory of migrations", *dir)
		}
		open = dirMigrator(*dir)
	}
	url, err := databaseURL(e.getenv, *dbURL, "")
	if err != nil {
		return err
	}
	pool, err := connect(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	if *dir != "" {
		// goose creates its table on any subcommand, and an up that fails
		// part way has created it too: close it whatever happened.
		// tablegate's own table is closed by its first migration.
		defer closeVersionTable(ctx, e.stderr, pool, goose.DefaultTablename)
	}
	switch sub {
	case "up":
		err := migrateUp(ctx, e.stdout, open, pool, *to)
		if err != nil && *dir != "" {
			err = notMigratedHint(ctx, pool, err, *dir)
		}
		return err
	case "down":
		return migrateDown(ctx, e.stdout, open, pool, *to, *dir == "")
	}
	upCmd := "tablegate migrate up"
	if *dir != "" {
		upCmd += " --dir " + envfile.Quote(*dir)
	}
	return migrateStatus(ctx, e.stdout, open, pool, upCmd)
}

// migratorFunc opens a goose provider on a pool; closing the provider
// releases its *sql.DB (not the pool).
type migratorFunc func(pool *pgxpool.Pool) (*goose.Provider, error)

// dirMigrator opens the goose SQL migrations of an application directory,
// version table goose_db_version, serialized by the same advisory-lock
// locker as tablegate's own.
func dirMigrator(dir string) migratorFunc {
	return func(pool *pgxpool.Pool) (*goose.Provider, error) {
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, err
		}
		sqlDB := stdlib.OpenDBFromPool(pool)
		p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, os.DirFS(dir), goose.WithSessionLocker(locker))
		if err != nil {
			_ = sqlDB.Close()
			return nil, fmt.Errorf("migrations in %s: %w", dir, err)
		}
		return p, nil
	}
}

// closeVersionTable closes goose's version table of an application's
// migrations to the API roles, as tablegate's first migration does for its own:
// goose creates it in the first schema of the search path, normally public,
// which a Supabase database grants to anon, authenticated and service_role
// by default privileges and serves over its REST API. Anyone holding the
// publishable key could then insert a high version (so later migrations,
// security fixes included, are skipped) or delete rows (so they run
// again). Every privilege of the API roles on the table and its sequences
// is revoked and row-level security is enabled with no policy (the owner,
// who migrates, is not bound by it).
//
// A table already closed, or none, is left alone. Closing is best effort:
// the migration's own outcome stands, and what could not be done (the
// role does not own the table, a read-only server, a lock held past
// lockWait) is a warning on w saying how to do it by hand.
func closeVersionTable(ctx context.Context, w io.Writer, pool *pgxpool.Pool, table string) {
	if ctx.Err() != nil {
		return
	}
	var rel string
	var rls, open bool
	var roles, seqs []string
	err := pool.QueryRow(ctx, `select c.oid::regclass::text, c.relrowsecurity,
  array(select quote_ident(r.rolname) from pg_catalog.pg_roles r
        where r.rolname in ('anon', 'authenticated', 'service_role') order by 1),
  array(select s from pg_catalog.pg_attribute a, pg_catalog.pg_get_serial_sequence(c.oid::regclass::text, a.attname) s
        where a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped and s is not null),
  exists (select from pg_catalog.pg_roles r
          where r.rolname in ('anon', 'authenticated', 'service_role')
            and (pg_catalog.has_table_privilege(r.oid, c.oid, 'SELECT, INSERT, UPDATE, DELETE, TRUNCATE, REFERENCES, TRIGGER')
                 or exists (select from pg_catalog.pg_depend d
                            join pg_catalog.pg_class sq on sq.oid = d.objid and sq.relkind = 'S'
                            where d.refobjid = c.oid and d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
                              and d.deptype in ('a', 'i')
                              and case when sq.relkind = 'S' -- evaluated after the filter, whatever the plan
                                       then pg_catalog.has_sequence_privilege(r.oid, sq.oid, 'USAGE, SELECT, UPDATE') end)))
    or exists (select from pg_catalog.aclexplode(coalesce(c.relacl, pg_catalog.acldefault('r', c.relowner))) x
               where x.grantee = 0)
from pg_catalog.pg_class c where c.oid = to_regclass($1)`, table).Scan(&rel, &rls, &roles, &seqs, &open)
	if errors.Is(err, pgx.ErrNoRows) {
		return
	}
	if err == nil && rls && !open {
		return
	}
	if err != nil { // the hint names what the query would have
		rel, roles = table, []string{"anon", "authenticated", "service_role"}
	}
	grantees := strings.Join(append([]string{"public"}, roles...), ", ")
	stmts := []string{"revoke all on table " + rel + " from " + grantees,
		"alter table " + rel + " enable row level security"}
	for _, sq := range seqs {
		stmts = append(stmts, "revoke all on sequence "+sq+" from "+grantees)
	}
	if err == nil {
		err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "set local lock_timeout = '"+lockWait+"'"); err != nil {
				return err
			}
			for _, st := range stmts {
				if _, err := tx.Exec(ctx, st); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil && ctx.Err() == nil {
		if rel == "" {
			rel = table
		}
		fmt.Fprintf(w, "! could not close the version table %s to the API roles (%v): anyone with the API's key may change it; as its owner run: %s\n",
			rel, err, strings.Join(stmts, "; "))
	}
}

// lockWait bounds how long closing the version table waits for its lock.
const lockWait = "5s"

// databaseURL returns the first database URL given: the --database-url
// flag, else $DATABASE_URL, else the config file's database_url (pass ""
// where a command has no config). None is a usage error saying how to give
// one.
func databaseURL(getenv func(string) string, flagValue, configValue string) (string, error) {
	for _, v := range []string{flagValue, getenv("DATABASE_URL"), configValue} {
		if v != "" {
			return v, nil
		}
	}
	return "", usagef("no database: pass --database-url or set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)")
}

// connect opens a pool of the default size and pings it, with an error
// that says what to check.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	return connectPool(ctx, url, 0, nil)
}

// connectPool is pgconnect.Pool with an unparsable URL as a usage error.
func connectPool(ctx context.Context, url string, maxConns int32, tel *telemetry.Telemetry) (*pgxpool.Pool, error) {
	pool, err := pgconnect.Pool(ctx, url, maxConns, tel)
	if errors.Is(err, pgconnect.ErrInvalidURL) {
		return nil, usagef("%s", err)
	}
	return pool, err
}

func migrateUp(ctx context.Context, w io.Writer, open migratorFunc, pool *pgxpool.Pool, to int64) error {
	p, err := open(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("read migration versions: %w", err)
	}
	if to >= 0 && to < target {
		target = to
	}
	if cur > target && to < 0 {
		fmt.Fprintf(w, "! the database is at version %d, newer than the newest migration here (%d): use the build (or --dir) that applied it\n", cur, target)
		return nil
	}
	if cur >= target {
		fmt.Fprintf(w, "✓ migrations current (version %d)\n", cur)
		return nil
	}
	n := 0
	for {
		r, err := p.UpByOne(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			break
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		n++
		fmt.Fprintf(w, "✓ applied %s (%s)\n", filepath.Base(r.Source.Path), r.Duration.Round(time.Millisecond))
		if r.Source.Version >= target {
			break
		}
	}
	cur, _, _ = p.GetVersions(ctx)
	fmt.Fprintf(w, "✓ %d migration(s) applied; version %d\n", n, cur)
	return nil
}

// migrateDown rolls back one migration, or down to version to (≥ 0). A
// run that stops part way reports what it did roll back and the version
// it stopped at. ours says the migrations are tablegate's (not --dir):
// a refusal caused by policies reading the member-tenant views
// (tablegate.member_tenant) then also says what those policies can read
// instead.
func migrateDown(ctx context.Context, w io.Writer, open migratorFunc, pool *pgxpool.Pool, to int64, ours bool) error {
	p, err := open(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	if cur, newest, err := p.GetVersions(ctx); err == nil && cur > newest {
		return fmt.Errorf("migrate down: the database is at version %d, newer than the newest migration here (%d): roll back with the build (or --dir) that applied it", cur, newest)
	}
	var results []*goose.MigrationResult
	if to >= 0 {
		results, err = p.DownTo(ctx, to)
	} else {
		var r *goose.MigrationResult
		r, err = p.Down(ctx)
		if r != nil {
			results = append(results, r)
		}
	}
	// A run that stops part way returns the migrations it did roll back
	// in the error only.
	var partial *goose.PartialError
	if len(results) == 0 && errors.As(err, &partial) {
		results = partial.Applied
	}
	for _, r := range results {
		if r.Error == nil {
			fmt.Fprintf(w, "✓ rolled back %s (%s)\n", filepath.Base(r.Source.Path), r.Duration.Round(time.Millisecond))
		}
	}
	if errors.Is(err, goose.ErrNoNextVersion) || (err == nil && len(results) == 0) {
		fmt.Fprintln(w, "✓ nothing to roll back")
		return nil
	}
	if err != nil {
		if cur, _, verr := p.GetVersions(ctx); verr == nil {
			fmt.Fprintf(w, "✗ stopped at version %d\n", cur)
		}
		return fmt.Errorf("migrate down: %w%s", err, dependentsHint(err, ours))
	}
	cur, _, _ := p.GetVersions(ctx)
	fmt.Fprintf(w, "✓ version %d\n", cur)
	return nil
}

// migrateStatus lists the migrations; upCmd is the command that applies
// the pending ones.
func migrateStatus(ctx context.Context, w io.Writer, open migratorFunc, pool *pgxpool.Pool, upCmd string) error {
	p, err := open(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	st, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	pending := 0
	for _, s := range st {
		mark, when := "✓", ""
		if s.State == goose.StatePending {
			mark, when = "·", "pending"
			pending++
		} else {
			when = "applied " + s.AppliedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s %05d %-40s %s\n", mark, s.Source.Version, filepath.Base(s.Source.Path), when)
	}
	if pending > 0 {
		fmt.Fprintf(w, "%d pending: run \"%s\"\n", pending, upCmd)
	} else {
		fmt.Fprintln(w, "all migrations applied")
	}
	if cur, newest, err := p.GetVersions(ctx); err == nil && cur > newest {
		fmt.Fprintf(w, "! the database is at version %d, newer than the newest migration here (%d): use the build (or --dir) that applied it\n", cur, newest)
	}
	return nil
}

// dependentsHint explains a migration Postgres refused to roll back
// because other objects (a policy, a view, a function) still depend on
// what it drops. The error's text leaves out Postgres' DETAIL, which names
// them; the hint prints it and what to do. ours adds, when the DETAIL
// names tablegate's member-tenant views (tablegate.member_tenant), what policies can read
// instead. Other errors get no hint.
func dependentsHint(err error, ours bool) string {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "2BP01" { // dependent_objects_still_exist
		return ""
	}
	name := "the failed migration"
	var partial *goose.PartialError
	if errors.As(err, &partial) && partial.Failed != nil && partial.Failed.Source != nil {
		name = filepath.Base(partial.Failed.Source.Path)
	}
	var b strings.Builder
	if pe.Detail != "" {
		b.WriteString("\n")
		b.WriteString(pe.Detail)
	}
	fmt.Fprintf(&b, "\n%s was not rolled back (migrations reported as rolled back stay so): drop or rewrite the objects that depend on it first, then run migrate down again", name)
	if ours && (strings.Contains(pe.Detail, "view tablegate.member_tenant") || strings.Contains(pe.Detail, "view tablegate.full_member_tenant")) {
		b.WriteString(". Policies reading tablegate.member_tenant or full_member_tenant can call tablegate.member_tenant_id() or full_member_tenant_id() instead (docs/tenant.md)")
	}
	return b.String()
}

// notMigratedHint adds to a failure of an application's migrations from
// dir the step that was skipped when tablegate's own migrations are not
// applied: they create the auth and tablegate schemas, auth.uid() and the
// API roles those migrations use (Postgres says only "schema "auth" does
// not exist").
func notMigratedHint(ctx context.Context, pool *pgxpool.Pool, err error, dir string) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	p, perr := db.NewMigrator(pool)
	if perr != nil {
		return err
	}
	defer p.Close()
	if cur, _, verr := p.GetVersions(ctx); verr != nil || cur > 0 {
		return err
	}
	return fmt.Errorf("%w\ntablegate's own migrations are not applied (they create the auth and tablegate schemas, auth.uid() and the API roles): run \"tablegate migrate up\" first, then \"tablegate migrate up --dir %s\" again", err, envfile.Quote(dir))
}
