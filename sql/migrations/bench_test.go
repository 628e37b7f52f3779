package migrations_test

import (
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// BenchmarkTenantPolicies measures what the tenant policies cost: a get by
// key and a 50-row list of the caller's tenant, through db.Read (one round
// trip), as
//
//   - user: a full user under enable_tenant_policies, all migrations;
//   - user_00003_helpers: the same on a database migrated down to 14, i.e.
//     with the claim helpers as 00003 defines them (before 00015);
//   - service: service_role, no row-level security (the floor).
func BenchmarkTenantPolicies(b *testing.B) {
	setup := func(down bool) *db.DB {
		pool := pgtest.DB(b)
		if down {
			p, err := db.NewMigrator(pool)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := p.DownTo(b.Context(), 14); err != nil {
				b.Fatal(err)
			}
			p.Close()
		}
		for _, s := range []string{
			`create table public.todos (id bigint primary key, tenant_id uuid not null, title text not null)`,
			`create index on public.todos (tenant_id, id)`,
			`insert into public.todos select i, ('aaaaaaaa-0000-4000-8000-' || lpad((i % 10)::text, 12, '0'))::uuid, 'todo ' || i from generate_series(1, 20000) i`,
			`analyze public.todos`,
			`grant select on public.todos to authenticated, service_role`,
			`select tablegate.enable_tenant_policies('public.todos')`,
		} {
			if _, err := pool.Exec(b.Context(), s); err != nil {
				b.Fatal(err)
			}
		}
		return db.New(pool, nil)
	}
	current, old := setup(false), setup(true)
	tenant := "aaaaaaaa-0000-4000-8000-000000000003"
	full := user(userA1, tenant)
	cases := []struct {
		name string
		d    *db.DB
		c    authctx.Caller
	}{{"user", current, full}, {"user_00003_helpers", old, full}, {"service", current, service}}
	for _, bc := range cases {
		b.Run("get/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				var title string
				err := bc.d.Read(b.Context(), bc.c, func(q db.Querier) error {
					return q.QueryRow(b.Context(), `select title from public.todos where id = $1`, int64(13)).Scan(&title)
				})
				if err != nil || title != "todo 13" {
					b.Fatal(title, err)
				}
			}
		})
	}
	for _, bc := range cases {
		b.Run("list50/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				n := 0
				err := bc.d.Read(b.Context(), bc.c, func(q db.Querier) error {
					rows, err := q.Query(b.Context(), `select id, title from public.todos where tenant_id = $1 order by id limit 50`, tenant)
					if err != nil {
						return err
					}
					defer rows.Close()
					for rows.Next() {
						n++
					}
					return rows.Err()
				})
				if err != nil || n != 50 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
