package bench

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

const benchUser = "11111111-1111-4111-8111-111111111111"

// setupItems makes a table under RLS with 10 000 rows readable by benchUser.
func setupItems(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	u := pgtest.URL(tb)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	_, err = pool.Exec(context.Background(), `
		create table items (id bigint primary key, owner uuid not null, title text not null, done boolean not null default false);
		insert into items select g, '`+benchUser+`', 'item ' || g, g % 2 = 0 from generate_series(1, 10000) g;
		alter table items enable row level security;
		alter table items force row level security;
		create policy own on items for all to authenticated using (owner = (select auth.uid()));
		grant select, insert, update, delete on items to authenticated;
		analyze items;`)
	if err != nil {
		tb.Fatal(err)
	}
	return pool
}

const getSQL = "select id, title, done from items where id = $1"

// BenchmarkScopeGet compares a caller-bound primary-key read (db.Read)
// with the raw pgx floor: the same query with the same settings in one
// pipelined batch on the same pool. It also reports a PostgREST-style
// scope (BEGIN, set_config, query, COMMIT as separate round trips).
//
// Metrics: ratio = tablegate / floor throughput; postgrest-ratio likewise.
func BenchmarkScopeGet(b *testing.B) {
	pool := setupItems(b)
	d := db.New(pool, nil)
	claims := `{"role":"authenticated","sub":"` + benchUser + `"}`
	// authctx caches the claims JSON of a verified token; do the same here.
	caller := authctx.NewUser(authctx.Claims{"sub": benchUser, "role": "authenticated"}, "t", []byte(claims))
	var n int64
	next := func() int64 { n = n%10000 + 1; return n } // racy on purpose: any id is fine

	floor := func(ctx context.Context) error {
		batch := &pgx.Batch{}
		batch.Queue("select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)", "authenticated", claims)
		var id int64
		var title string
		var done bool
		batch.Queue(getSQL, next()).QueryRow(func(row pgx.Row) error { return row.Scan(&id, &title, &done) })
		return pool.SendBatch(ctx, batch).Close()
	}
	subject := func(ctx context.Context) error {
		return d.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			var id int64
			var title string
			var done bool
			return q.QueryRow(ctx, getSQL, next()).Scan(&id, &title, &done)
		})
	}
	postgrest := func(ctx context.Context) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if _, err := tx.Exec(ctx, "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)", "authenticated", claims); err != nil {
			return err
		}
		var id int64
		var title string
		var done bool
		if err := tx.QueryRow(ctx, getSQL, next()).Scan(&id, &title, &done); err != nil {
			return err
		}
		return tx.Commit(ctx)
	}

	for b.Loop() {
		f, s := compare(b, 3, 2*time.Second, floor, subject)
		_, p := compare(b, 1, 2*time.Second, floor, postgrest)
		b.ReportMetric(f, "floor-ops/s")
		b.ReportMetric(s, "tablegate-ops/s")
		b.ReportMetric(s/f, "ratio")
		b.ReportMetric(p/f, "postgrest-ratio")
	}
}
