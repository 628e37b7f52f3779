package rest

import (
	"context"
	"net/http"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestListReusesItsPlan guards the list statement against being re-planned
// on every request: with the page size as a bind parameter Postgres built a
// custom plan each time (measured: ~40% of the list's database time).
func TestListReusesItsPlan(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one backend: its pg_prepared_statements are the list's
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, fixtureSQL+`insert into items (grp, name) select g % 20, 'n' || g from generate_series(1, 200) g;`); err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, pool: pool, db: db.New(pool, nil)}
	s := server(t, "items", b.resource("items", nil))
	for range 12 {
		if r := do(t, s, http.MethodGet, "/api/items?limit=25", alice, ""); r.status != http.StatusOK {
			t.Fatalf("list: %s", r)
		}
	}
	var generic, custom int64
	err = pool.QueryRow(ctx, `select coalesce(sum(generic_plans), 0), coalesce(sum(custom_plans), 0)
		from pg_prepared_statements where statement like '%LIMIT 26'`).Scan(&generic, &custom)
	if err != nil {
		t.Fatal(err)
	}
	if generic+custom < 12 || custom > 1 {
		t.Fatalf("list statement: %d generic plans, %d custom plans after 12 lists; want the cached plan reused", generic, custom)
	}
}
