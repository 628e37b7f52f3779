package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestCallerShareLeavesConnectionsForOthers: the per-caller bound is
// work-conserving. One caller alone takes every idle connection, beyond
// its share (half the pool by default); once the pool is full and
// another caller queues, the connection that comes back goes to that
// caller, and the greedy caller's requests over its share wait for its
// own connections and then get 429. Service callers and unshared reads
// are not held to the share; the share comes back when the caller's
// requests end.
func TestCallerShareLeavesConnectionsForOthers(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t, pgtest.URL(t), 4, nil)
	d := db.New(pool, &db.Config{AcquireTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	greedy := user(map[string]any{"sub": alice})
	sel := func(c db.Caller, tx bool) error {
		scope := read(d)
		if tx {
			scope = inTx(d)
		}
		return scope(ctx, c, func(q db.Querier) error {
			_, err := q.Exec(ctx, "select 1")
			return err
		})
	}

	// hold runs a transaction of c that keeps its connection until its
	// channel closes; it returns once the transaction ran its statement.
	var wg sync.WaitGroup
	hold := func(c db.Caller) chan struct{} {
		release := make(chan struct{})
		held := make(chan error, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Run(ctx, c, db.RunOpts{Tx: true}, func(q db.Querier) error {
				_, err := q.Exec(ctx, "select 1")
				held <- err
				<-release
				return err
			})
		}()
		if err := <-held; err != nil {
			t.Fatal(err)
		}
		return release
	}

	// The greedy caller takes its two places, then, alone on the pool,
	// the two idle connections beyond its share, each at once.
	var holds []chan struct{}
	for i := range 4 {
		start := time.Now()
		holds = append(holds, hold(greedy))
		if el := time.Since(start); el > 250*time.Millisecond {
			t.Errorf("connection %d of a caller alone on the pool took %v", i+1, el)
		}
	}

	// The pool is full. Another user queues for a connection; the greedy
	// caller's next request, over its share while another waits, waits
	// for its own connections and gets 429.
	other := make(chan error, 1)
	otherStart := time.Now()
	go func() { other <- sel(user(map[string]any{"sub": bob}), true) }()
	// sleep: pgxpool reports no count of the callers queued for a connection; bob must be queued before the pool's connection comes back
	time.Sleep(50 * time.Millisecond)
	greedyErr := make(chan error, 1)
	greedyStart := time.Now()
	go func() { greedyErr <- sel(greedy, false) }()
	// sleep: the greedy caller waits inside the share, which reports nothing to the test; it must wait there while bob is served
	time.Sleep(50 * time.Millisecond)
	close(holds[3]) // one of the connections beyond its share comes back: it goes to bob
	if err := <-other; err != nil {
		t.Errorf("another user, queued while the pool was full: %v", err)
	}
	if el := time.Since(otherStart); el > 250*time.Millisecond {
		t.Errorf("another user waited %v, want about until one connection came back (~100ms)", el)
	}
	err := <-greedyErr
	if !errors.Is(err, db.ErrCallerBusy) {
		t.Fatalf("the greedy caller's request while another waited: %v, want ErrCallerBusy", err)
	}
	if el := time.Since(greedyStart); el < 200*time.Millisecond || el > 10*time.Second {
		t.Errorf("it waited %v, want about the acquire timeout (300ms)", el)
	}
	p, _ := problem.As(rest.DBProblem(err))
	if p == nil || p.Status != 429 || p.Header.Get("Retry-After") == "" {
		t.Errorf("problem %+v, want 429 with Retry-After", p)
	}

	// With three connections held by the greedy caller, callers without a
	// token and service callers are served at once from the fourth.
	for name, c := range map[string]db.Caller{
		"no token": anonCaller,
		"service":  serviceCaller,
	} {
		start := time.Now()
		if err := sel(c, true); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if el := time.Since(start); el > 250*time.Millisecond {
			t.Errorf("%s waited %v", name, el)
		}
	}

	// The server's own work on the greedy caller's behalf is not held to
	// its share.
	if err := d.Run(ctx, greedy, db.RunOpts{Unshared: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select 1")
		return err
	}); err != nil {
		t.Errorf("an unshared read for the caller: %v", err)
	}

	for _, h := range holds[:3] {
		close(h)
	}
	wg.Wait()
	for range 3 { // the share came back, and stays whole
		if err := sel(greedy, false); err != nil {
			t.Fatalf("after its requests ended: %v", err)
		}
	}
	// Four at once again: nobody else waits.
	for range 4 {
		holds = append(holds, hold(greedy))
	}
	for _, h := range holds[4:] {
		close(h)
	}
	wg.Wait()
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
		_ = d.Run(ctx, greedy, db.RunOpts{Tx: true}, func(q db.Querier) error {
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
	if err := d.Run(ctx, greedy, db.RunOpts{}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select 1")
		return err
	}); err != nil {
		t.Fatalf("the second connection of a two-connection pool: %v", err)
	}
}
