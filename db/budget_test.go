package db_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// budgetPool opens a pool of n connections on u, with tablegate's pool
// defaults and an optional tracer (a round-trip counter).
func budgetPool(t *testing.T, u string, n int32, tr pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(cfg)
	cfg.MaxConns = n
	if tr != nil {
		cfg.ConnConfig.Tracer = tr
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// The statement timeout travels with the claims: it is in force for the
// caller's statement (read and transaction), lives only in the request's
// transaction, and a read still costs one round trip.
func TestStatementTimeoutInTheSameRoundTrip(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	setupNotes(t, pgtest.Pool(t, u))
	tr := &pgtest.RoundTrips{}
	pool := budgetPool(t, u, 1, tr)
	ctx := context.Background()
	alice := user(claims{"sub": alice})

	d := db.New(pool, &db.Config{StatementTimeout: 1500 * time.Millisecond})
	type scopeFunc = func(context.Context, db.Caller, func(db.Querier) error) error
	setting := func(name string, scope scopeFunc) string {
		var v string
		if err := scope(ctx, alice, func(q db.Querier) error {
			return q.QueryRow(ctx, "select current_setting($1)", name).Scan(&v)
		}); err != nil {
			t.Fatal(err)
		}
		return v
	}
	show := func(scope scopeFunc) string { return setting("statement_timeout", scope) }
	idle := func(scope scopeFunc) string { return setting("idle_in_transaction_session_timeout", scope) }
	show(read(d)) // warm the statement cache
	tr.Reset()
	if v := show(read(d)); v != "1500ms" {
		t.Fatalf("read: statement_timeout %q, want 1500ms", v)
	}
	if n := tr.Total(); n != 1 {
		t.Fatalf("a read with its time budget took %d round trips, want 1", n)
	}
	if v := show(inTx(d)); v != "1500ms" {
		t.Fatalf("tx: statement_timeout %q, want 1500ms", v)
	}
	// A transaction Go holds open also bounds its pauses; a read, one
	// implicit transaction, has none.
	if v := idle(inTx(d)); v != "1500ms" {
		t.Fatalf("tx: idle_in_transaction_session_timeout %q, want 1500ms", v)
	}
	if v := idle(read(d)); v != "0" {
		t.Fatalf("read: idle_in_transaction_session_timeout %q, want the server's 0", v)
	}
	// Never below a second: a tight statement budget does not end
	// transactions for a hook's ordinary work.
	tight := db.RunOpts{StatementTimeout: 100 * time.Millisecond}.Prepare()
	if v := idle(func(ctx context.Context, c db.Caller, fn func(db.Querier) error) error {
		return d.Run(ctx, c, txOpts(tight), fn)
	}); v != "1s" {
		t.Fatalf("tx with a 100ms budget: idle_in_transaction_session_timeout %q, want 1s", v)
	}
	// Per call.
	opts := db.RunOpts{StatementTimeout: 250 * time.Millisecond}.Prepare()
	if v := show(func(ctx context.Context, c db.Caller, fn func(db.Querier) error) error {
		return d.Run(ctx, c, opts, fn)
	}); v != "250ms" {
		t.Fatalf("per call: statement_timeout %q, want 250ms", v)
	}
	// Outside a request the session value is back (0: the server default).
	var v string
	if err := pool.QueryRow(ctx, "select current_setting('statement_timeout')").Scan(&v); err != nil || v != "0" {
		t.Fatalf("session statement_timeout after requests: %q %v (leaked out of the transaction)", v, err)
	}
	if err := pool.QueryRow(ctx, "select current_setting('idle_in_transaction_session_timeout')").Scan(&v); err != nil || v != "0" {
		t.Fatalf("session idle_in_transaction_session_timeout after requests: %q %v (leaked out of the transaction)", v, err)
	}
	// Negative: no setting (the role's or server's value applies).
	dn := db.New(pool, &db.Config{StatementTimeout: -1})
	if v := show(read(dn)); v != "0" {
		t.Fatalf("disabled: statement_timeout %q, want the server's 0", v)
	}
}

// A statement over its budget is cancelled by Postgres and answers 503
// with Retry-After; the connection stays in the pool.
func TestStatementOverBudgetAnswers503(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	pool := budgetPool(t, u, 2, nil)
	d := db.New(pool, &db.Config{StatementTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	for name, scope := range map[string]func(context.Context, db.Caller, func(db.Querier) error) error{
		"read": read(d), "tx": inTx(d),
	} {
		start := time.Now()
		// 60 s unless the budget stops it: the bound below can be
		// generous for a loaded machine (a first connection, -race) and
		// still tell a missing budget apart.
		err := scope(ctx, anonCaller, func(q db.Querier) error {
			_, err := q.Exec(ctx, "select pg_sleep(60)")
			return err
		})
		el := time.Since(start)
		p, ok := problem.As(rest.DBProblem(err))
		if !ok || p.Status != 503 || p.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %v → %+v, want 503 with Retry-After", name, err, p)
		}
		if el > 10*time.Second {
			t.Fatalf("%s: the budget of 200ms took %v", name, el)
		}
	}
	if n := pool.Stat().TotalConns(); n < 1 {
		t.Fatalf("the cancelled statement cost its connection (pool %d)", n)
	}
}

// Go code that holds a transaction open past the budget (a hook waiting on
// a neighbour that hangs) does not hold its locks past the budget: Postgres
// ends the idle transaction, another writer gets the row while the hook
// still waits, the late statement answers 503 and nothing is committed.
func TestIdleTransactionOverBudget(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	admin := pgtest.Pool(t, u)
	setupNotes(t, admin)
	pool := budgetPool(t, u, 2, nil)
	d := db.New(pool, &db.Config{StatementTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	alice := user(claims{"sub": alice})

	other := make(chan error, 1)
	err := d.Run(ctx, alice, db.RunOpts{Tx: true}, func(q db.Querier) error {
		if _, err := q.Exec(ctx, "update notes set body = 'hook' where id = 1"); err != nil {
			return err
		}
		// The row is locked. Another writer that waits up to 8 s for it
		// gets it only if the idle transaction is ended meanwhile.
		go func() {
			_, err := admin.Exec(ctx, "set lock_timeout = '8s'; update notes set body = 'other' where id = 1")
			other <- err
		}()
		select {
		case err := <-other:
			if err != nil {
				t.Errorf("the other writer: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("the other writer still waits: the idle transaction kept its lock")
		}
		_, err := q.Exec(ctx, "select 1")
		return err
	})
	p, ok := problem.As(rest.DBProblem(err))
	if !ok || p.Status != 503 || p.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "time budget") {
		t.Fatalf("statement after an idle pause over budget: %v → %+v, want 503 naming the time budget", err, p)
	}
	var body string
	if err := admin.QueryRow(ctx, "select body from notes where id = 1").Scan(&body); err != nil || body != "other" {
		t.Fatalf("row after the ended transaction: %q %v, want the other writer's (nothing of the hook committed)", body, err)
	}
	// The pool goes on: the ended connection is replaced.
	if got := ids(t, d, alice); len(got) != 1 || got[0] != 1 {
		t.Fatalf("a request after the ended transaction: %v", got)
	}
}

// With every connection busy, a request waits at most AcquireTimeout and
// answers 503 with Retry-After (ErrPoolBusy), never hangs.
func TestAcquireBoundedWhenPoolBusy(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	pool := budgetPool(t, u, 1, nil)
	d := db.New(pool, &db.Config{AcquireTimeout: 150 * time.Millisecond, StatementTimeout: 10 * time.Second, MaxConnsPerCaller: -1})
	ctx := context.Background()
	hold := make(chan struct{})
	held := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	holdErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		holdErr <- d.Run(ctx, anonCaller, db.RunOpts{Tx: true}, func(q db.Querier) error {
			if _, err := q.Exec(ctx, "select 1"); err != nil {
				return err
			}
			close(held)
			<-hold
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-holdErr:
		t.Fatalf("holding the only connection: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("could not take the only connection within 10s")
	}
	defer func() { close(hold); wg.Wait() }()
	for name, scope := range map[string]func(context.Context, db.Caller, func(db.Querier) error) error{
		"read": read(d), "tx": inTx(d),
	} {
		start := time.Now()
		err := scope(ctx, anonCaller, func(q db.Querier) error {
			_, err := q.Exec(ctx, "select 1")
			return err
		})
		el := time.Since(start)
		if !errors.Is(err, db.ErrPoolBusy) {
			t.Fatalf("%s: %v, want ErrPoolBusy", name, err)
		}
		// The connection is held until the test ends: the upper bound only
		// has to tell a bounded wait from an endless one.
		if el < 100*time.Millisecond || el > 10*time.Second {
			t.Fatalf("%s: waited %v for a connection, want about 150ms", name, el)
		}
		p, _ := problem.As(rest.DBProblem(err))
		if p == nil || p.Status != 503 || p.Header.Get("Retry-After") == "" {
			t.Fatalf("%s: %+v, want 503 with Retry-After", name, p)
		}
	}
	// Readiness: a busy pool is not a database that is down.
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := db.Ready(rctx, pool); err != nil {
		t.Fatalf("Ready with a saturated pool: %v, want nil (busy is not down)", err)
	}
}

// A closed pool (shutdown) answers 503, never 500 "closed pool".
func TestClosedPoolAnswers503(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	pool := budgetPool(t, u, 1, nil)
	d := db.New(pool, nil)
	pool.Close()
	err := d.Run(context.Background(), anonCaller, db.RunOpts{}, func(q db.Querier) error {
		_, err := q.Exec(context.Background(), "select 1")
		return err
	})
	if !errors.Is(err, db.ErrPoolClosed) {
		t.Fatalf("closed pool: %v, want ErrPoolClosed", err)
	}
	if p, _ := problem.As(rest.DBProblem(err)); p == nil || p.Status != 503 {
		t.Fatalf("closed pool: %+v, want 503", p)
	}
	if err := db.Ready(context.Background(), pool); !errors.Is(err, db.ErrNotReady) {
		t.Fatalf("Ready on a closed pool: %v", err)
	}
}

func TestDefaultMaxConns(t *testing.T) {
	if n := db.DefaultMaxConns(); n < 16 || n > 64 {
		t.Fatalf("DefaultMaxConns %d outside 16..64", n)
	}
}
