package migrations_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// BenchmarkTenantPolicies measures what the tenant policies cost: a get by
// key and a 50-row list of the caller's tenant, through db.Read (one round
// trip), as
//
//   - user: a full user under enable_tenant_policies;
//   - service: service_role, no row-level security (the floor).
func BenchmarkTenantPolicies(b *testing.B) {
	setup := func() *db.DB {
		pool := pgtest.DB(b)
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
	current := setup()
	tenant := "aaaaaaaa-0000-4000-8000-000000000003"
	full := user(userA1, tenant)
	cases := []struct {
		name string
		d    *db.DB
		c    authctx.Auth
	}{{"user", current, full}, {"service", current, service}}
	for _, bc := range cases {
		b.Run("get/"+bc.name, func(b *testing.B) {
			for b.Loop() {
				var title string
				err := bc.d.Run(b.Context(), bc.c.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
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
				err := bc.d.Run(b.Context(), bc.c.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
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

// BenchmarkStorageMembership measures a read of one object of a bucket
// enabled with require_membership (its policies read the view
// tablegate.member_tenant), as a member of the folder's tenant:
//
//   - read: through db.Read (settings and statement, one round trip);
//   - executor: the statement in a PL/pgSQL loop, 100 per call,
//     in one transaction, reported as pg-µs/stmt: Postgres' cost per
//     statement without the round trip's noise (one round trip per 100
//     statements), and without what a policy's functions cost once per
//     transaction.
//
// 2 000 objects over tenants A and B.
func BenchmarkStorageMembership(b *testing.B) {
	setup := func() *pgxpool.Pool {
		pool := pgtest.Pool(b, pgtest.EmptyURL(b))
		fixture(b, pool, "supabase_storage.sql")
		if err := db.Migrate(b.Context(), pool); err != nil {
			b.Fatal(err)
		}
		execScript(b, pool, membershipFixture)
		for _, s := range []string{
			`select tablegate.enable_storage_policies('files', require_membership => true)`,
			`insert into storage.objects (bucket_id, name) select 'files', (array['` + tenantA + `', '` + tenantB + `'])[1 + g % 2] || '/f' || g || '.txt' from generate_series(1, 2000) g`,
			`analyze storage.objects`,
		} {
			if _, err := pool.Exec(b.Context(), s); err != nil {
				b.Fatal(err)
			}
		}
		return pool
	}
	const stmt = `select o.name from storage.objects o where o.bucket_id = 'files' and o.name = '` + tenantA + `/f2.txt'`
	member := user(userA1, tenantA)
	for _, v := range []struct {
		name string
		pool *pgxpool.Pool
	}{{"current", setup()}} {
		d := db.New(v.pool, nil)
		b.Run("read/"+v.name, func(b *testing.B) {
			for b.Loop() {
				var name string
				if err := d.Run(b.Context(), member.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
					return q.QueryRow(b.Context(), stmt).Scan(&name)
				}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("executor/"+v.name, func(b *testing.B) {
			const n = 100 // statements per call of the loop
			err := d.Run(b.Context(), member.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
				if _, err := q.Exec(b.Context(), `create or replace function pg_temp.loop(n int) returns int language plpgsql as $$
declare x text; begin for i in 1..n loop `+stmt+` into x; if x is null then raise 'not read'; end if; end loop; return n; end $$`); err != nil {
					return err
				}
				start := time.Now()
				for b.Loop() {
					if _, err := q.Exec(b.Context(), `select pg_temp.loop($1)`, n); err != nil {
						return err
					}
				}
				b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N*n), "pg-µs/stmt")
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
}
