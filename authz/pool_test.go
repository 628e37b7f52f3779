package authz_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/problem"
)

// burst sends n concurrent first attempts on distinct rows and returns the
// statuses.
func burst(t *testing.T, b *bundle, o *authz.ApprovalConfig, n int) (map[int]int, time.Duration) {
	t.Helper()
	s := b.serve(mustAuthz(t)(authz.Claims(gatedRules(), &authz.Config{Approvals: o})))
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

// TestApprovalBurstOwnPool: with ApprovalConfig.DB over a pool of its
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
	got, took := burst(t, b, &authz.ApprovalConfig{DB: own, Permissions: []string{"todos.purge"}}, 24)
	if got[403] != 24 {
		t.Fatalf("statuses %v", got)
	}
	t.Logf("24 concurrent first attempts, request pool %d, approvals pool 2: %v", b.pool.Config().MaxConns, took)
}

// TestApprovalBurstSharedPool: sharing the request pool, a burst larger
// than the pool no longer exhausts it: each refused request releases its
// connection before the approval is recorded (rest's Decision.Then), so
// every attempt gets its APPROVAL_REQUIRED and none waits into the
// Timeout (503). Before, most of the 24 answered 503: requests holding
// every connection each waited for another one, until the Timeout. That
// wait never ends by itself, so a generous Timeout (10 s) still shows it,
// while 24 recordings on a loaded machine have room to queue for their
// turns (MaxConcurrent) and connections.
func TestApprovalBurstSharedPool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	got, took := burst(t, b, &authz.ApprovalConfig{DB: b.db, Permissions: []string{"todos.purge"}, Timeout: 10 * time.Second}, 24)
	t.Logf("24 concurrent first attempts, shared pool of %d: statuses %v in %v", b.pool.Config().MaxConns, got, took)
	if got[403] != 24 {
		t.Fatalf("statuses %v, want 24 x 403", got)
	}
	if took > 30*time.Second {
		t.Fatalf("took %v: the timeout did not bound the wait", took)
	}
}

// TestApprovalGatedInFlight: at most MaxInFlight requests under gated keys
// are admitted at once (rest.Admission); the next waits up to Timeout and
// then gets 503 with Retry-After; other keys are never held back.
func TestApprovalGatedInFlight(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a, err := authz.Claims(gatedRules(), &authz.Config{Approvals: &authz.ApprovalConfig{DB: b.db,
		Permissions: []string{"todos.purge"}, MaxInFlight: 1, Timeout: 100 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	release, err := a.Admit(ctx, "todos.purge")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := a.Admit(ctx, "todos.purge"); err == nil {
		t.Fatal("a second gated request was admitted with MaxInFlight 1")
	} else if p, ok := problem.As(err); !ok || p.Status != 503 || p.Header.Get("Retry-After") == "" {
		t.Fatalf("over the bound: %v", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond || d > 5*time.Second {
		t.Errorf("waited %v, want about the Timeout", d)
	}
	other, err := a.Admit(ctx, "todos.delete")
	if err != nil {
		t.Fatalf("an ungated key was held back: %v", err)
	}
	other()
	release()
	again, err := a.Admit(ctx, "todos.purge")
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}
