package events_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// TestHubChecksOutsideSubscriberShare: a subscriber that keeps its own
// share of the pool busy (slow requests of its own) neither delays the
// delivery to other subscribers nor gets its streams ended: the hub's
// checks run outside the subscribers' shares.
func TestHubChecksOutsideSubscriberShare(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	sb := b.subscribe("/api/todos/events", "Authorization", "Bearer "+bobTok)
	if sa.status != 200 || sb.status != 200 {
		t.Fatalf("subscribe %d %d", sa.status, sb.status)
	}
	share := int(b.pool.Config().MaxConns) / 2
	ac := authctx.NewUser(authctx.Claims{"sub": alice, "role": "authenticated", "tenant_id": tenantA}, "tok", nil)
	held := make(chan struct{}, share)
	var wg sync.WaitGroup
	for range share {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = b.db.Run(context.Background(), ac.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
				held <- struct{}{}
				_, err := q.Exec(context.Background(), "select pg_sleep(3)")
				return err
			})
		}()
	}
	for range share {
		<-held
	}
	// The statements are running once Postgres shows them active.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		var n int
		if err := b.pool.QueryRow(context.Background(), `select count(*) from pg_stat_activity where state = 'active' and query = 'select pg_sleep(3)'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n >= share {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d statements running after 10 s", n, share)
		}
	}
	start := time.Now()
	b.create(bobTok, "while alice is busy")
	if ev, err := sb.next(10 * time.Second); err != nil || ev.Name != "todos.created" {
		t.Fatalf("bob: %v %v", ev.Name, err)
	}
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Errorf("bob's event took %v while alice held her share (the acquire timeout is 2 s)", el)
	}
	if ev, err := sa.next(10 * time.Second); err != nil || ev.Name != "todos.created" {
		t.Errorf("alice's stream: %v %v (ended?)", ev.Name, err)
	}
	wg.Wait()
}
