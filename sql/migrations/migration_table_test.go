package migrations_test

import (
	"context"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// Regression: goose's version table (db.MigrationTable) is created in the
// first schema of the search path, public. A Supabase database grants
// every new table of schema public to anon and authenticated by default
// privileges, and exposes public through its REST API: anyone holding the
// publishable key could insert a high version (later migrations, security
// fixes included, would be skipped) or delete rows (the next migrate fails
// or re-runs). The API roles must have no privilege on it and RLS must be
// on (Supabase's advisor flags public tables without it).
func TestMigrationTableClosedToAPIRoles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	// Supabase's default privileges for tables the migrating role creates.
	admin(t, pool, `do $$ begin
	  perform pg_advisory_xact_lock(hashtext('tablegate.roles'));
	  if not exists (select 1 from pg_roles where rolname = 'anon') then create role anon nologin noinherit; end if;
	  if not exists (select 1 from pg_roles where rolname = 'authenticated') then create role authenticated nologin noinherit; end if;
	  if not exists (select 1 from pg_roles where rolname = 'service_role') then create role service_role nologin noinherit bypassrls; end if;
	end $$`)
	admin(t, pool, `alter default privileges in schema public grant all on tables to anon, authenticated, service_role`)
	admin(t, pool, `alter default privileges in schema public grant all on sequences to anon, authenticated, service_role`)
	p, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"anon", "authenticated"} {
		for _, priv := range []string{"select", "insert", "update", "delete", "truncate"} {
			if adminScalar[bool](t, pool, `select has_table_privilege($1, to_regclass('`+db.MigrationTable+`'), $2)`, role, priv) {
				t.Errorf("%s holds %s on %s", role, priv, db.MigrationTable)
			}
		}
	}
	if !adminScalar[bool](t, pool, `select relrowsecurity from pg_class where oid = to_regclass('`+db.MigrationTable+`')`) {
		t.Errorf("row-level security is off on %s", db.MigrationTable)
	}
	// As the API role, through a transaction like the REST layer's.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `set local role anon`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `insert into `+db.MigrationTable+` (version_id, is_applied) values (99999, true)`); err == nil {
		t.Fatal("anon inserted a migration version")
	}
	// Migrating again still works for the owner.
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}
