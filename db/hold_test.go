package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestHoldTakesTheCallersPlace: a place held with Hold counts against the
// caller's share like its requests: with both places held, the caller's
// next request only borrows a connection nobody else wants (the pool is
// idle here; TestCallerShareLeavesConnectionsForOthers covers a full one),
// while Hold itself never borrows: a third Hold waits; another user's
// request does not wait;
// released places are free again (release twice is harmless); a service
// caller holds nothing; a Hold waiting on a full share ends with its
// context.
func TestHoldTakesTheCallersPlace(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t, pgtest.URL(t), 4, nil)
	d := db.New(pool, &db.Config{MaxConnsPerCaller: 2, AcquireTimeout: 200 * time.Millisecond})
	if d.PerCaller() != 2 {
		t.Fatalf("PerCaller %d, want 2", d.PerCaller())
	}
	ctx := context.Background()
	a, b := user(claims{"sub": alice}), user(claims{"sub": bob})
	ping := func(c db.Caller) error {
		return d.Run(ctx, c, db.RunOpts{}, func(q db.Querier) error {
			var one int
			return q.QueryRow(ctx, "select 1").Scan(&one)
		})
	}
	r1, err := d.Hold(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := d.Hold(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := ping(a); err != nil {
		t.Errorf("alice's request with her share held and the pool idle: %v, want it served", err)
	}
	if err := ping(b); err != nil {
		t.Errorf("bob's request: %v", err)
	}
	wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	if _, err := d.Hold(wctx, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a third Hold: %v, want its context's deadline", err)
	}
	cancel()
	r1()
	r1()
	if err := ping(a); err != nil {
		t.Errorf("alice's request after a release: %v", err)
	}
	r2()
	svc := db.ServiceCaller()
	for range 5 {
		if _, err := d.Hold(ctx, svc); err != nil {
			t.Fatalf("service Hold: %v", err)
		}
	}
	if err := ping(a); err != nil {
		t.Errorf("alice after service holds: %v", err)
	}
}
