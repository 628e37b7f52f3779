package migrations_test

import (
	"fmt"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// BenchmarkTenantPolicies measures what the tenant policies cost: a get by
// key and a 50-row list of the caller's tenant, as a full user under
// enable_tenant_policies and as service_role (no row-level security), each
// through db.Read (one round trip).
func BenchmarkTenantPolicies(b *testing.B) {
	pool := pgtest.DB(b)
	d := db.New(pool, nil)
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
	tenant := "aaaaaaaa-0000-4000-8000-000000000003"
	full := user(userA1, tenant)
	for _, bc := range []struct {
		name string
		c    authctx.Context
	}{{"user_with_policies", full}, {"service_no_rls", service}} {
		b.Run("get/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				var title string
				err := d.Read(b.Context(), bc.c, func(q db.Querier) error {
					return q.QueryRow(b.Context(), `select title from public.todos where id = $1`, int64(13)).Scan(&title)
				})
				if err != nil || title != "todo 13" {
					b.Fatal(title, err)
				}
			}
		})
		b.Run("list50/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				var n int
				err := d.Read(b.Context(), bc.c, func(q db.Querier) error {
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
					b.Fatal(fmt.Sprint(n), err)
				}
			}
		})
	}
}
