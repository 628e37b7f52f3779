package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablegate/tablegate/events"
)

// TestPruneDoesNotPauseDelivery: the hub prunes more than 50 000 expired
// events while a subscriber receives a steady trickle of new ones; events
// keep arriving while the prune runs (pruning runs beside delivery, in
// short batches), with no pause near the length of the prune. Before, the
// prune ran inside the delivery loop and nothing was delivered until it
// ended (1.4 s for 72 000 rows).
func TestPruneDoesNotPauseDelivery(t *testing.T) {
	t.Cleanup(events.SetPruneEvery(200 * time.Millisecond))
	const expired = 52000
	b := setup(t, &fixtureOpts{hub: &events.Config{PollInterval: 100 * time.Millisecond, Heartbeat: time.Second}})
	ctx := context.Background()
	if _, err := b.pool.Exec(ctx, `insert into public.todos (tenant_id, owner_id, title)
select '`+tenantA+`', '`+alice+`', 'old ' || g from generate_series(1, $1) g`, expired); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); b.hub.Stats().Head < expired; time.Sleep(50 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			t.Fatalf("the hub read %d of %d events", b.hub.Stats().Head, expired)
		}
	}
	c := b.subscribe("/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false))
	if c.status != 200 {
		t.Fatalf("subscribe: %d %s", c.status, c.body)
	}
	var arrivals []time.Time
	got := make(chan struct{})
	go func() {
		defer close(got)
		for range c.events {
			arrivals = append(arrivals, time.Now())
		}
	}()
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			_, _ = b.pool.Exec(ctx, `insert into public.todos (tenant_id, owner_id, title) values ('`+tenantA+`', '`+alice+`', 'new')`)
		}
	}()
	time.Sleep(500 * time.Millisecond) // sleep: the writer runs for a while before the prune
	// Expire the old events; the next prune pass deletes them.
	if _, err := b.pool.Exec(ctx, `update tablegate.events set at = now() - interval '2 hours' where seq <= $1`, expired); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		var n int
		if err := b.pool.QueryRow(ctx, `select count(*) from tablegate.events where seq <= $1`, expired).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var began, ended time.Time
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		n := count()
		if began.IsZero() && n < expired {
			began = time.Now()
		}
		if n == 0 {
			ended = time.Now()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d expired events left after a minute", n)
		}
	}
	time.Sleep(500 * time.Millisecond) // sleep: the writer runs on for a while after the prune
	close(stop)
	<-writer
	c.close()
	<-got
	var during int
	var worst time.Duration
	prev := began
	for _, at := range arrivals {
		if at.Before(began) {
			continue
		}
		if at.After(ended) {
			worst = max(worst, at.Sub(prev))
			break
		}
		during++
		worst = max(worst, at.Sub(prev))
		prev = at
	}
	took := ended.Sub(began)
	t.Logf("pruned %d events in about %v; %d events delivered meanwhile, longest wait between two %v (%d in all)",
		expired, took, during, worst, len(arrivals))
	if took > 400*time.Millisecond && during == 0 {
		t.Errorf("no event delivered during a prune of %v", took)
	}
	// New events are written every 20 ms and delivered within about a
	// PollInterval (100 ms); a loose bound on any pause.
	if worst > time.Second {
		t.Errorf("delivery paused %v during the prune", worst)
	}
}
