package migrations_test

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/sql/migrations"
)

// TestUpDown applies every migration, reverts to version 0 and applies
// them again through db.NewMigrator, on a plain database and on databases
// where Supabase's storage and realtime schemas exist before or appear
// after migrating. Down removes everything tablegate created, also what
// its opt-in functions installed outside schema tablegate, and up again
// leaves a catalogue identical to the first.
func TestUpDown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		before, after []string
	}{
		{name: "plain"},
		{name: "supabase_before", before: []string{"supabase_storage.sql", "supabase_realtime.sql", "supabase_realtime_send.sql"}},
		{name: "supabase_after", after: []string{"supabase_storage.sql", "supabase_realtime.sql"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := pgtest.Pool(t, pgtest.EmptyURL(t))
			for _, f := range tc.before {
				fixture(t, pool, f)
			}
			p, err := db.NewMigrator(pool)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			supabase := len(tc.before) > 0
			var first string

			for round := 1; round <= 2; round++ {
				res, err := p.Up(ctx)
				if err != nil {
					t.Fatalf("round %d up: %v", round, err)
				}
				if len(res) != len(files(t)) {
					t.Fatalf("round %d: %d migrations applied, want all %d", round, len(res), len(files(t)))
				}
				cat := catalogue(t, pool)
				if round == 1 {
					first = cat
				} else if cat != first {
					t.Errorf("round 2: the catalogue after down to 0 and up again differs from the first up:\n%s", firstDiff(first, cat))
				}
				got := adminScalar[int](t, pool, `select count(*) from pg_policy where polname like 'tablegate\_tenant\_topics\_%'`)
				if want := map[bool]int{true: 2, false: 0}[supabase]; got != want {
					t.Fatalf("round %d: %d realtime policies after up, want %d", round, got, want)
				}
				// Opt in a table, a bucket and realtime, so that Down has
				// something of ours to remove outside schema tablegate.
				admin(t, pool, `create table public.todos (id bigint generated always as identity primary key, tenant_id uuid not null, title text)`)
				admin(t, pool, `select tablegate.enable_tenant_policies('public.todos')`)
				admin(t, pool, `select tablegate.exclude_anonymous('public.todos')`)
				admin(t, pool, `select tablegate.enable_realtime('public.todos')`)
				admin(t, pool, `select tablegate.enable_events('public.todos')`)
				// Settings whose rows rewrite functions (trigger
				// settings_functions) or that down must forget.
				admin(t, pool, `select tablegate.set_tenant_claim('app_metadata.org_id')`)
				admin(t, pool, `select tablegate.set_approver_role('reviewer')`)
				admin(t, pool, `select tablegate.set_approver_source('claims')`)
				admin(t, pool, `select tablegate.enable_realtime_policies(require_membership => true)`)
				installed := adminScalar[bool](t, pool, `select tablegate.enable_storage_policies('files')`)
				if installed != supabase {
					t.Fatalf("enable_storage_policies installed=%v, want %v", installed, supabase)
				}

				if _, err := p.DownTo(ctx, 0); err != nil {
					t.Fatalf("round %d down: %v", round, err)
				}
				if n := adminScalar[int](t, pool, `select count(*) from pg_namespace where nspname = 'tablegate'`); n != 0 {
					t.Fatal("schema tablegate left after down")
				}
				if n := adminScalar[int](t, pool, `select count(*) from pg_policy where polname like 'tablegate%'`); n != 0 {
					t.Fatalf("%d tablegate policies left after down", n)
				}
				if n := adminScalar[int](t, pool, `select count(*) from pg_trigger where tgname = 'tablegate_broadcast_change'`); n != 0 {
					t.Fatal("broadcast trigger left after down")
				}
				if n := adminScalar[int](t, pool, `select count(*) from pg_publication where pubname = 'supabase_realtime'`); n != 0 {
					t.Fatal("publication supabase_realtime, created by enable_realtime, left after down")
				}
				if supabase {
					// Supabase's own objects stay.
					if n := adminScalar[int](t, pool, `select count(*) from storage.buckets`); n != 3 {
						t.Fatalf("storage.buckets has %d rows after down", n)
					}
					if adminScalar[string](t, pool, `select to_regclass('realtime.messages')::text`) == "" {
						t.Fatal("realtime.messages dropped by down")
					}
				}
				admin(t, pool, `drop table public.todos`)
			}
			for _, f := range tc.after {
				fixture(t, pool, f)
			}
			if _, err := p.Up(ctx); err != nil {
				t.Fatal(err)
			}
			if len(tc.after) > 0 {
				// Supabase arrived after migrating: the opt-in functions
				// install the policies now.
				if !adminScalar[bool](t, pool, `select tablegate.enable_realtime_policies()`) {
					t.Fatal("enable_realtime_policies returned false with realtime present")
				}
				if !adminScalar[bool](t, pool, `select tablegate.enable_storage_policies('files')`) {
					t.Fatal("enable_storage_policies returned false with storage present")
				}
				if n := adminScalar[int](t, pool, `select count(*) from pg_policy where polname like 'tablegate%'`); n != 6 {
					t.Fatalf("%d tablegate policies, want 6 (4 storage + 2 realtime)", n)
				}
			}
		})
	}
}

// files lists the embedded migration files.
func files(t testing.TB) []string {
	t.Helper()
	f, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// firstDiff shows where two catalogues part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n first %s\n again %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(al), len(bl))
}

// TestDownEachMigration reverts to every version in turn, with Supabase's
// storage and realtime schemas present and a table, a bucket and realtime
// opted in, and migrates up again: each Down leaves a database the later
// migrations apply to, and up again leaves the catalogue of the first up.
func TestDownEachMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	for _, f := range []string{"supabase_storage.sql", "supabase_realtime.sql", "supabase_realtime_send.sql"} {
		fixture(t, pool, f)
	}
	p, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	first := catalogue(t, pool)
	for v := int64(len(files(t))) - 1; v >= 0; v-- {
		optIn(t, pool)
		if _, err := p.DownTo(ctx, v); err != nil {
			t.Fatalf("down to %d: %v", v, err)
		}
		if got, err := p.GetDBVersion(ctx); err != nil || got != v {
			t.Fatalf("down to %d: at version %d, %v", v, got, err)
		}
		if _, err := p.Up(ctx); err != nil {
			t.Fatalf("up from %d: %v", v, err)
		}
		// Undo the opt-ins the migrations still applied keep (the
		// publication stays until the realtime migration is reverted).
		admin(t, pool, `drop table public.todos`)
		admin(t, pool, `select tablegate.disable_storage_policies('files')`)
		admin(t, pool, `drop publication if exists supabase_realtime`)
		admin(t, pool, `delete from tablegate.settings where key = 'realtime_publication_created'`)
		if got := catalogue(t, pool); got != first {
			t.Errorf("down to %d and up again: the catalogue differs:\n%s", v, firstDiff(first, got))
		}
	}
}
