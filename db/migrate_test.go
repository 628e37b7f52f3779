package db_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// supabaseAuth is the shape of a Supabase database's auth schema: the
// platform's own functions (GoTrue's bodies) and a users table.
const supabaseAuth = `
create schema auth;
create table auth.users (id uuid primary key, email text);
create function auth.uid() returns uuid language sql stable as $$
  select coalesce(nullif(current_setting('request.jwt.claim.sub', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'sub'))::uuid $$;
create function auth.role() returns text language sql stable as $$
  select coalesce(nullif(current_setting('request.jwt.claim.role', true), ''),
    (nullif(current_setting('request.jwt.claims', true), '')::jsonb ->> 'role'))::text $$;
create function auth.jwt() returns jsonb language sql stable as $$
  select coalesce(nullif(current_setting('request.jwt.claim', true), ''),
    nullif(current_setting('request.jwt.claims', true), ''))::jsonb $$;
comment on function auth.uid() is 'Deprecated. Use auth.jwt() -> ''sub'' instead.';
`

func funcComment(t *testing.T, pool *pgxpool.Pool, f string) *string {
	t.Helper()
	var c *string
	if err := pool.QueryRow(context.Background(),
		"select obj_description(to_regprocedure($1), 'pg_proc')", f).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func exists(t *testing.T, pool *pgxpool.Pool, sql string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(context.Background(), "select "+sql+" is not null").Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestMigrationsUpDownUp(t *testing.T) {
	t.Parallel()
	for _, supabase := range []bool{false, true} {
		name := "empty database"
		if supabase {
			name = "supabase database"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.Pool(t, pgtest.EmptyURL(t))
			if supabase {
				if _, err := pool.Exec(ctx, supabaseAuth); err != nil {
					t.Fatal(err)
				}
			}
			p, err := db.NewMigrator(pool)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if _, err := p.Up(ctx); err != nil {
				t.Fatalf("up: %v", err)
			}
			if !exists(t, pool, "to_regprocedure('tablegate.current_tenant_id()')") {
				t.Fatal("tablegate.current_tenant_id() missing after up")
			}
			c := funcComment(t, pool, "auth.uid()")
			if supabase && (c == nil || *c == "tablegate") {
				t.Fatalf("the platform's auth.uid() was replaced (comment %v)", c)
			}
			if !supabase && (c == nil || *c != "tablegate") {
				t.Fatalf("auth.uid() not created by tablegate (comment %v)", c)
			}
			// Running Up again is a no-op.
			if res, err := p.Up(ctx); err != nil || len(res) != 0 {
				t.Fatalf("second up: %v, %d applied", err, len(res))
			}
			if _, err := p.DownTo(ctx, 0); err != nil {
				t.Fatalf("down: %v", err)
			}
			if exists(t, pool, "to_regnamespace('tablegate')") {
				t.Fatal("schema tablegate survived down")
			}
			if supabase {
				if !exists(t, pool, "to_regprocedure('auth.uid()')") || !exists(t, pool, "to_regclass('auth.users')") {
					t.Fatal("down removed the platform's auth schema")
				}
			} else if exists(t, pool, "to_regnamespace('auth')") {
				t.Fatal("down left the auth schema tablegate created")
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
		})
	}
}
