package db_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// The batches of reads and transactions are reused from call to call: on
// a pool of three connections, concurrent reads and transactions of
// different statements, callers and timeouts, some failing, each get
// their own answer, and every connection's statement cache stays right
// (a batch reused from another connection carries nothing of it).
func TestReusedBatchesKeepEachCallApart(t *testing.T) {
	t.Parallel()
	pool := budgetPool(t, pgtest.URL(t), 3, nil)
	d := db.New(pool, &db.Config{MaxConnsPerCaller: -1})
	ctx := context.Background()
	short := db.RunOpts{StatementTimeout: 900 * time.Millisecond}.Prepare()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := user(claims{"sub": fmt.Sprintf("00000000-0000-4000-8000-%012d", g)})
			if g%3 == 2 {
				c = anonCaller
			}
			for i := range 150 {
				var (
					role, sub string
					n         int
					err       error
				)
				check := func(q db.Querier) error {
					switch i % 4 {
					case 0:
						return q.QueryRow(ctx, "select current_user::text, coalesce(auth.jwt() ->> 'sub', ''), $1::int", i).Scan(&role, &sub, &n)
					case 1:
						return q.QueryRow(ctx, "select current_user::text, coalesce(auth.uid()::text, ''), $1::int + 0", i).Scan(&role, &sub, &n)
					case 2:
						_, err := q.Exec(ctx, "select 1/0") // fails: the next use of the batch must not care
						if err == nil {
							return fmt.Errorf("1/0 succeeded")
						}
						return q.QueryRow(ctx, "select current_user::text, coalesce(auth.jwt() ->> 'sub', ''), $1::int", i).Scan(&role, &sub, &n)
					}
					return q.QueryRow(ctx, "select current_user::text, coalesce(auth.jwt() ->> 'sub', ''), length(current_setting('statement_timeout')) + $1::int - length(current_setting('statement_timeout'))", i).Scan(&role, &sub, &n)
				}
				switch i % 3 {
				case 0:
					err = d.Run(ctx, c, db.RunOpts{}, check)
				case 1:
					err = d.Run(ctx, c, txOpts(short), check)
				default:
					err = d.Run(ctx, c, short, check)
				}
				if i%4 == 2 && i%3 == 1 {
					// In a transaction the failed statement aborts it.
					if err == nil {
						t.Errorf("caller %d call %d: a transaction survived 1/0", g, i)
					}
					continue
				}
				if err != nil {
					t.Errorf("caller %d call %d: %v", g, i, err)
					return
				}
				wantRole, wantSub := db.RoleAuthenticated, fmt.Sprintf("00000000-0000-4000-8000-%012d", g)
				if g%3 == 2 {
					wantRole, wantSub = db.RoleAnon, ""
				}
				if role != wantRole || sub != wantSub || n != i {
					t.Errorf("caller %d call %d: got %s %q %d, want %s %q %d", g, i, role, sub, n, wantRole, wantSub, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}
