package server

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/internal/syncbuf"
)

// Once the migrations check has seen the expected version, a probe never
// waits for the pool, also past the recheck interval with every connection
// busy (a probe must answer inside an orchestrator's one-second timeout);
// a version found behind still fails it.
func TestMigrationsCheckNeverQueuesOnceSeen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(cfg)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	m := &migrationsCheck{pool: pool, recheck: 100 * time.Millisecond, turn: make(chan struct{}, 1)}
	probe := func() (time.Duration, error) {
		pctx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		start := time.Now()
		err := m.check(pctx)
		return time.Since(start), err
	}
	if _, err := probe(); err != nil {
		t.Fatalf("first probe, pool idle: %v", err)
	}
	held, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Past the recheck, a background read waits for the pool meanwhile.
	for round := range 3 {
		// sleep: the recheck interval (100 ms) must pass in real time so that each round's probe starts a background read
		time.Sleep(150 * time.Millisecond)
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				took, err := probe()
				if err != nil || took > 500*time.Millisecond {
					t.Errorf("round %d, pool saturated: %v in %v, want nil at once", round, err, took)
				}
			})
		}
		wg.Wait()
	}
	held.Release()

	// A version behind the build's fails the check again.
	mig, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mig.Down(ctx); err != nil {
		t.Fatal(err)
	}
	_ = mig.Close()
	// sleep: the poll step of the bounded wait for the check to fail
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := probe(); err != nil {
			if !strings.Contains(err.Error(), "this build expects") {
				t.Fatalf("behind: %v", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the check still passes 10 s after the database went one migration back")
		}
	}
}

// TestReadinessCauseLogged: the error behind a failing check (which
// /readyz does not show) is logged once per change, not at every probe.
func TestReadinessCauseLogged(t *testing.T) {
	var buf syncbuf.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	var c causeLog
	refused := &checkError{"the database does not answer", errors.New("dial tcp 127.0.0.1:1: connect: connection refused")}
	for range 3 {
		c.note("cause-test", refused)
	}
	c.note("cause-test", nil)
	c.note("cause-test", refused)
	lines := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		if strings.Contains(l, "check=cause-test") {
			lines++
			if !strings.Contains(l, "connection refused") {
				t.Errorf("the cause is not logged: %s", l)
			}
		}
	}
	if lines != 2 {
		t.Errorf("want 2 lines (first failure, failure after recovery), got %d:\n%s", lines, buf.String())
	}
}
