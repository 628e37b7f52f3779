package events

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestPruneKeepsTheHorizonBelowRetainedEvents: the pruned horizon (what
// a resume from before it is told it missed) never passes an event still
// in the outbox. An event written by a transaction that ran longer than
// the retention carries an old time but a late sequence number; pruning
// by time alone set the horizon to its number, and resumes then skipped
// the retained events numbered below it.
func TestPruneKeepsTheHorizonBelowRetainedEvents(t *testing.T) {
	t.Parallel()
	pool, h := prunedOutbox(t, 6)
	ctx := context.Background()
	// The two oldest by number are past the retention, and so is the
	// newest (its transaction began long ago); the three between are not.
	if _, err := pool.Exec(ctx, `with o as (select id, row_number() over (order by seq) n from tablegate.events)
update tablegate.events e set at = case when o.n in (1, 2, 6) then now() - interval '2 hours' else now() end
from o where o.id = e.id`); err != nil {
		t.Fatal(err)
	}
	h.prune()
	var horizon, minLeft int64
	var left int
	if err := pool.QueryRow(ctx, `select (select pruned from tablegate.event_horizon), coalesce(min(seq), 0), count(*) from tablegate.events`).Scan(&horizon, &minLeft, &left); err != nil {
		t.Fatal(err)
	}
	if left == 0 || horizon >= minLeft {
		t.Fatalf("horizon %d, oldest retained event %d (%d left): a resume would skip retained events", horizon, minLeft, left)
	}
	if left != 4 {
		t.Errorf("%d events left, want 4 (the two oldest pruned; the late one waits behind the retained ones)", left)
	}
}

// TestPruneLoopsOverFullBatches: one prune pass deletes every expired event
// in as many batches as it takes (up to its bound), not one batch a
// minute, so that a busy outbox does not grow without bound.
func TestPruneLoopsOverFullBatches(t *testing.T) {
	// Set before the hub's loop starts, restored after it stopped (the
	// hub's Cleanup, registered later, runs first).
	old := pruneBatch
	t.Cleanup(func() { pruneBatch = old })
	pruneBatch = 2
	pool, h := prunedOutbox(t, 7)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `update tablegate.events set at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	h.prune()
	var left int
	if err := pool.QueryRow(ctx, `select count(*) from tablegate.events`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d expired events left after one pass of batches of 2", left)
	}
}

// prunedOutbox is a database with n events of one table, numbered by a
// running hub (closed at the end of the test).
func prunedOutbox(t *testing.T, n int) (*pgxpool.Pool, *Hub) {
	t.Helper()
	pool := pgtest.DB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `create table pe (id int primary key); grant all on pe to service_role;
select tablegate.enable_events('pe')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `insert into pe select generate_series(1, $1)`, n); err != nil {
		t.Fatal(err)
	}
	h, err := New(ctx, &Config{DB: db.New(pool, nil), Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		var got int
		if err := pool.QueryRow(ctx, `select count(seq) from tablegate.events`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got == n {
			return pool, h
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events numbered", got, n)
		}
	}
}
