package db_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// Ready is green while Postgres answers and red, within its bound, once
// Postgres is stopped (its own throwaway cluster here, stopped for real).
func TestReadyRedWhenPostgresStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, stop := pgtest.Cluster(t)
	pool := budgetPool(t, url, 2, nil)
	if err := db.Ready(ctx, pool); err != nil {
		t.Fatalf("Ready with Postgres up: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := db.Ready(ctx, pool)
	if !errors.Is(err, db.ErrNotReady) {
		t.Fatalf("Ready with Postgres stopped: %v, want ErrNotReady", err)
	}
	if d := time.Since(start); d > db.DefaultReadyTimeout+time.Second {
		t.Fatalf("Ready took %v with Postgres stopped", d)
	}
}

// connectCounter counts connections opened with its config.
type connectCounter struct{ n atomic.Int64 }

func (c *connectCounter) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *connectCounter) TraceConnectEnd(context.Context, pgx.TraceConnectEndData) {}
func (c *connectCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (c *connectCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// With every pooled connection busy, a burst of readiness probes (a public
// /readyz hammered) is answered green by one direct connection, not one
// connection per probe.
func TestReadyProbesShareOneConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	counter := &connectCounter{}
	pool := budgetPool(t, pgtest.URL(t), 1, counter)
	held, err := pool.Acquire(ctx) // the pool is saturated from here
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	before := counter.n.Load()
	const probes = 50
	var wg sync.WaitGroup
	errs := make(chan error, probes)
	for range probes {
		wg.Go(func() { errs <- db.Ready(ctx, pool) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Ready with a saturated pool: %v, want nil", err)
		}
	}
	// One probe's connection, another at most if the burst outlasted the
	// shared answer's second on a slow machine.
	if n := counter.n.Load() - before; n < 1 || n > 2 {
		t.Fatalf("%d probes opened %d connections, want 1 (2 at most)", probes, n)
	}
}

// A first probe with a very short deadline (it gives up) does not hand its
// failure to the probes that follow: the shared probe has its own bound.
func TestReadyShortFirstCallerDoesNotSpoil(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := budgetPool(t, pgtest.URL(t), 1, nil)
	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	short, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if err := db.Ready(short, pool); !errors.Is(err, db.ErrNotReady) {
		t.Fatalf("Ready within 1ms with a saturated pool: %v, want ErrNotReady", err)
	}
	if err := db.Ready(ctx, pool); err != nil {
		t.Fatalf("Ready with time to spare right after: %v, want nil", err)
	}
}
