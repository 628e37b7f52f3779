package events

import (
	"context"
	"testing"
	"time"

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
	pool := pgtest.DB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `create table pe (id int primary key); grant all on pe to service_role;
select tablegate.enable_events('pe');
insert into pe select generate_series(1, 6)`); err != nil {
		t.Fatal(err)
	}
	h, err := New(ctx, &Config{DB: db.New(pool, nil), Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Wait until the hub has numbered the six events.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := pool.QueryRow(ctx, `select count(seq) from tablegate.events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 6 events numbered", n)
		}
	}
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
	pool := pgtest.DB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `create table pl (id int primary key); grant all on pl to service_role;
select tablegate.enable_events('pl');
insert into pl select generate_series(1, 7)`); err != nil {
		t.Fatal(err)
	}
	// Set before the hub's loop starts, restored after it stopped.
	defer func(b int) { pruneBatch = b }(pruneBatch)
	pruneBatch = 2
	h, err := New(ctx, &Config{DB: db.New(pool, nil), Retention: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := pool.QueryRow(ctx, `select count(seq) from tablegate.events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 7 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 7 events numbered", n)
		}
	}
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
