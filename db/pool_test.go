package db_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// disconnectBurst cancels n slow caller-bound reads mid-query and returns
// how many connections the pool had to open in all.
func disconnectBurst(t *testing.T, configure bool) int64 {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	if configure {
		db.ConfigurePool(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d := db.New(pool, nil)
	caller := user(map[string]any{"sub": alice})
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			_ = d.Read(ctx, caller, func(q db.Querier) error {
				_, err := q.Exec(ctx, "select pg_sleep(5)")
				return err
			})
		}()
	}
	wg.Wait()
	// The pool still serves.
	var one int
	if err := d.Read(context.Background(), caller, func(q db.Querier) error {
		return q.QueryRow(context.Background(), "select 1").Scan(&one)
	}); err != nil || one != 1 {
		t.Fatalf("pool unusable after the burst: %v", err)
	}
	return pool.Stat().NewConnsCount()
}

// TestDisconnectsKeepConnections: with ConfigurePool, cancelled requests
// cancel their statement on the server and keep the connection; pgx's
// default closes it, so every disconnect costs a new connection.
func TestDisconnectsKeepConnections(t *testing.T) {
	t.Parallel()
	if n := disconnectBurst(t, true); n > 2 {
		t.Fatalf("with ConfigurePool the pool opened %d connections for 10 disconnects, want ≤ 2", n)
	}
	if n := disconnectBurst(t, false); n <= 2 {
		t.Fatalf("control: pgx's default opened only %d connections; the test no longer shows the difference", n)
	}
}
