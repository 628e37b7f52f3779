package authz_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authz"
)

// burst sends n concurrent first attempts on distinct rows and returns the
// statuses.
func burst(t *testing.T, b *bundle, o *authz.ApprovalOptions, n int) (map[int]int, time.Duration) {
	t.Helper()
	s := b.serve(mustAuthz(t)(authz.Claims(gatedRules(), &authz.Options{Approvals: o})))
	rows := make([]int64, n)
	for i := range rows {
		rows[i] = b.todo(tenantA, strconv.Itoa(i))
	}
	var mu sync.Mutex
	got := map[int]int{}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := do(t, s, "POST", purgePath(rows[i]), asker, "{}")
			mu.Lock()
			got[r.status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return got, time.Since(start)
}

// TestApprovalBurstOwnPool: with ApprovalOptions.DB over a pool of its
// own, a burst of first attempts larger than the request pool all get
// their APPROVAL_REQUIRED.
func TestApprovalBurstOwnPool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	own, err := authz.NewApprovalDB(context.Background(), b.pool, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(own.Pool().Close)
	got, took := burst(t, b, &authz.ApprovalOptions{DB: own, Permissions: []string{"todos.purge"}}, 24)
	if got[403] != 24 {
		t.Fatalf("statuses %v", got)
	}
	t.Logf("24 concurrent first attempts, request pool %d, approvals pool 2: %v", b.pool.Config().MaxConns, took)
}

// TestApprovalBurstSharedPool: sharing the request pool, a burst larger
// than the pool can exhaust it (every connection held by a request waiting
// for a second one); the Timeout turns that into 503 with Retry-After
// instead of a hang.
func TestApprovalBurstSharedPool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, took := burst(t, b, &authz.ApprovalOptions{DB: b.db, Permissions: []string{"todos.purge"}, Timeout: 500 * time.Millisecond}, 24)
	t.Logf("24 concurrent first attempts, shared pool of %d: statuses %v in %v", b.pool.Config().MaxConns, got, took)
	if got[403]+got[503] != 24 {
		t.Fatalf("statuses %v", got)
	}
	if took > 20*time.Second {
		t.Fatalf("took %v: the timeout did not bound the wait", took)
	}
}
