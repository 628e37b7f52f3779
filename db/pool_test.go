package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// disconnectRounds is how many times disconnectBurst cancels reads on
// both pooled connections: 2·disconnectRounds disconnects in all.
const disconnectRounds = 5

// disconnectBurst cancels caller-bound reads mid-query, as clients that
// disconnect do, and returns how many connections the pool had to open
// in all. Each round starts a slow read on both pooled connections and
// cancels their contexts only once Postgres shows both statements inside
// pg_sleep, so every cancel hits a running statement, whatever the load
// (a cancel request that reached an idle backend would be ignored by the
// server, and a context that ended before the statement was sent would
// never use the connection).
func disconnectBurst(t *testing.T, configure bool) int64 {
	t.Helper()
	u := pgtest.URL(t)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 2
	app := fmt.Sprintf("tg-disconnects-%t", configure)
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	if configure {
		db.ConfigurePool(cfg)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	watch := pgtest.Pool(t, u)
	// pgx's default leaves the server running the abandoned statements;
	// end them with the test.
	defer func() {
		_, _ = watch.Exec(context.Background(), `select pg_terminate_backend(pid) from pg_stat_activity
where datname = current_database() and application_name = $1`, app)
	}()
	d := db.New(pool, &db.Config{MaxConnsPerCaller: -1}) // one caller takes the whole pool here
	caller := user(map[string]any{"sub": alice})
	for round := range disconnectRounds {
		sql := fmt.Sprintf("select pg_sleep(30) /* disconnect round %d */", round)
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		var wg sync.WaitGroup
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- d.Run(ctx, caller, db.RunOpts{}, func(q db.Querier) error {
					_, err := q.Exec(ctx, sql)
					return err
				})
			}()
		}
		running := 0
		for deadline := time.Now().Add(30 * time.Second); running < 2; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
			if err := watch.QueryRow(context.Background(), `select count(*) from pg_stat_activity
where datname = current_database() and application_name = $1 and query = $2 and wait_event = 'PgSleep'`,
				app, sql).Scan(&running); err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("round %d: %d of 2 reads running in Postgres after 30 s", round, running)
			}
		}
		cancel()
		wg.Wait()
		close(errs)
		for err := range errs {
			if err == nil {
				t.Fatalf("round %d: a cancelled 30 s read returned no error", round)
			}
		}
	}
	// The pool still serves.
	var one int
	if err := d.Run(context.Background(), caller, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(context.Background(), "select 1").Scan(&one)
	}); err != nil || one != 1 {
		t.Fatalf("pool unusable after the burst: %v", err)
	}
	return pool.Stat().NewConnsCount()
}

// TestDisconnectsKeepConnections: with ConfigurePool, cancelled requests
// cancel their statement on the server and keep the connection; pgx's
// default closes it, so every disconnect costs a new connection.
func TestDisconnectsKeepConnections(t *testing.T) {
	t.Parallel()
	if n := disconnectBurst(t, true); n > 2 {
		t.Fatalf("with ConfigurePool the pool opened %d connections for %d disconnects, want ≤ 2", n, 2*disconnectRounds)
	}
	if n := disconnectBurst(t, false); n < 2*disconnectRounds {
		t.Fatalf("control: pgx's default opened only %d connections for %d disconnects; the test no longer shows the difference", n, 2*disconnectRounds)
	}
}
