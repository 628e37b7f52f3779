package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/problem"
)

// TestCallerShareLeavesConnectionsForOthers: one caller holding its share
// of the pool (half of it by default) waits for its own connections and
// then gets 429, while other users, callers without a token and service
// callers still get connections at once; the share comes back when the
// caller's requests end.
func TestCallerShareLeavesConnectionsForOthers(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t, pgtest.URL(t), 4, nil)
	d := db.New(pool, &db.Config{AcquireTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	greedy := user(map[string]any{"sub": alice})
	sel := func(c authctx.Caller, tx bool) error {
		scope := d.Read
		if tx {
			scope = d.Tx
		}
		return scope(ctx, c, func(q db.Querier) error {
			_, err := q.Exec(ctx, "select 1")
			return err
		})
	}

	// The greedy caller takes its two places and keeps them.
	hold := make(chan struct{})
	held := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Tx(ctx, greedy, func(q db.Querier) error {
				_, err := q.Exec(ctx, "select 1")
				held <- err
				<-hold
				return err
			})
		}()
	}
	for range 2 {
		if err := <-held; err != nil {
			t.Fatal(err)
		}
	}

	for _, tx := range []bool{false, true} {
		start := time.Now()
		err := sel(greedy, tx)
		if !errors.Is(err, db.ErrCallerBusy) {
			t.Fatalf("a third request of the same caller (tx %v): %v, want ErrCallerBusy", tx, err)
		}
		if el := time.Since(start); el < 200*time.Millisecond || el > 10*time.Second {
			t.Errorf("it waited %v, want about the acquire timeout (300ms)", el)
		}
		p, _ := problem.As(db.Problem(err))
		if p == nil || p.Status != 429 || p.Header.Get("Retry-After") == "" {
			t.Errorf("problem %+v, want 429 with Retry-After", p)
		}
	}
	// Everybody else is served at once.
	for name, c := range map[string]authctx.Caller{
		"another user": user(map[string]any{"sub": bob}),
		"no token":     anonCaller,
		"service":      serviceCaller,
	} {
		start := time.Now()
		if err := sel(c, true); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if el := time.Since(start); el > 250*time.Millisecond {
			t.Errorf("%s waited %v", name, el)
		}
	}

	// The server's own work on the greedy caller's behalf is not held up.
	if err := d.ReadWith(ctx, greedy, &db.ScopeOpts{Unshared: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select 1")
		return err
	}); err != nil {
		t.Errorf("an unshared read for the caller: %v", err)
	}

	close(hold)
	wg.Wait()
	for range 3 { // the share came back, and stays whole
		if err := sel(greedy, false); err != nil {
			t.Fatalf("after its requests ended: %v", err)
		}
	}
}

// TestCallerShareOff: MaxConnsPerCaller < 0 lets one caller take the whole
// pool.
func TestCallerShareOff(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t, pgtest.URL(t), 2, nil)
	d := db.New(pool, &db.Config{AcquireTimeout: 2 * time.Second, MaxConnsPerCaller: -1})
	ctx := context.Background()
	greedy := user(map[string]any{"sub": alice})
	hold := make(chan struct{})
	held := make(chan error, 1)
	go func() {
		_ = d.Tx(ctx, greedy, func(q db.Querier) error {
			_, err := q.Exec(ctx, "select 1")
			held <- err
			<-hold
			return err
		})
	}()
	if err := <-held; err != nil {
		t.Fatal(err)
	}
	defer close(hold)
	if err := d.Read(ctx, greedy, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select 1")
		return err
	}); err != nil {
		t.Fatalf("the second connection of a two-connection pool: %v", err)
	}
}
