package rest

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/db"
)

// TestDatabaseUnavailable: when Postgres cannot be reached, every route
// answers 503 with Retry-After and no internal detail.
func TestDatabaseUnavailable(t *testing.T) {
	t.Parallel()
	seed := setup(t)
	cfg, err := pgxpool.ParseConfig(seed.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	var down atomic.Bool
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if down.Load() {
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}
		return dialer.DialContext(ctx, network, addr)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := &bundle{t: t, pool: pool, db: db.New(pool, nil)}
	s := server(t, "todos", b.resource("todos", &Config{Hooks: Hooks{AfterGetFunc: func(c *Ctx, r Row) (any, error) { return r, nil }}}))
	down.Store(true)
	pool.Reset()
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/api/todos", ""},
		{"GET", "/api/todos/" + alice, ""},
		{"POST", "/api/todos", `{"title":"x"}`},
		{"PATCH", "/api/todos/" + alice, `{"title":"x"}`},
		{"DELETE", "/api/todos/" + alice, ""},
	} {
		r := do(t, s, c.method, c.path, alice, c.body)
		isProblem(t, r, 503, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s %s: no Retry-After", c.method, c.path)
		}
	}
}
