package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// Regression: a Querier that escapes Tx into a goroutine (a hook that
// forgets to wait) raced with the commit and the release of the
// connection; a statement could then run on the connection after it went
// back to the pool, inside another caller's transaction. After Tx returns
// the escaped Querier must only ever fail. Run with -race.
func TestEscapedTxQuerierNeverRunsAfterTx(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	ctx := context.Background()
	alice := user(claims{"sub": alice, "role": "authenticated"})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var okAfter int
	for i := 0; i < 20; i++ {
		finished := make(chan struct{})
		err := d.Run(ctx, alice, db.RunOpts{Tx: true}, func(q db.Querier) error {
			if _, err := q.Exec(ctx, "select 1"); err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, err := q.Exec(ctx, "select 1")
					select {
					case <-finished:
						// A try strictly after Tx returned (the one in flight
						// may have run before the commit).
						if _, err := q.Exec(ctx, "select 1"); err == nil {
							mu.Lock()
							okAfter++
							mu.Unlock()
						}
						return
					default:
					}
					if err != nil && errors.Is(err, context.Canceled) {
						return
					}
				}
			}()
			return nil
		})
		close(finished)
		_ = err // the commit may fail while the escaped goroutine holds the connection
	}
	wg.Wait()
	if okAfter > 0 {
		t.Fatalf("%d statements ran through an escaped Querier after Tx returned", okAfter)
	}
}
