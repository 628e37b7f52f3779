package rest

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tablegate/tablegate/problem"
)

// TestDecisionThen: a refusing decision's Then runs after the request's
// transaction has ended and released its connection; its refusal is the
// answer; its Allow runs the request once more (and only once).
func TestDecisionThen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var calls, thens atomic.Int64
	var acquiredInThen atomic.Int64
	mode := "pending"
	authz := AuthorizerFunc(func(ctx context.Context, req *AuthzRequest) (Decision, error) {
		n := calls.Add(1)
		if mode == "allow-on-retry" && n == 2 {
			return Allowed(), nil
		}
		return Decision{Effect: NeedsApproval, Then: func(ctx context.Context) (Decision, error) {
			thens.Add(1)
			acquiredInThen.Store(int64(b.pool.Stat().AcquiredConns()))
			switch mode {
			case "pending":
				return ApprovalRequired("a1"), nil
			case "deny":
				return Denied(), nil
			}
			return Allowed(), nil // allow-on-retry, allow-always
		}}, nil
	})
	r := b.resource("todos", &Config{Authorizer: authz, Permissions: map[Operation]string{OpCreate: "todos.create"}})
	create := func() (*Result, error) {
		return r.Do(context.Background(), &Call{Operation: OpCreate, Body: []byte(`{"title":"t"}`), Auth: user(alice)})
	}
	count := func() int {
		var n int
		if err := b.pool.QueryRow(context.Background(), `select count(*) from todos`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	_, err := create()
	if p, _ := problem.As(err); p == nil || p.Code != problem.CodeApprovalRequired || p.Approval == nil || p.Approval.ID != "a1" {
		t.Fatalf("pending: %v", err)
	}
	if got := acquiredInThen.Load(); got != 0 {
		t.Errorf("Then ran while %d connection(s) were held: the request's transaction had not released its own", got)
	}
	mode = "deny"
	if _, err := create(); err == nil {
		t.Fatal("deny: allowed")
	} else if p, _ := problem.As(err); p.Status != http.StatusForbidden || p.Code != problem.CodePermissionDenied {
		t.Fatalf("deny: %v", err)
	}
	calls.Store(0)
	mode = "allow-on-retry"
	if res, err := create(); err != nil || res.Status != http.StatusCreated {
		t.Fatalf("allow on retry: %v", err)
	}
	if calls.Load() != 2 || count() != 1 {
		t.Fatalf("allow on retry: %d authorizer calls, %d rows", calls.Load(), count())
	}
	// Then allows, but the retry is refused again: no third attempt.
	calls.Store(0)
	thens.Store(0)
	mode = "allow-always"
	if _, err := create(); err == nil {
		t.Fatal("a second Allow from Then passed")
	}
	if calls.Load() != 2 || thens.Load() != 2 || count() != 1 {
		t.Fatalf("bounded retry: %d calls, %d thens, %d rows", calls.Load(), thens.Load(), count())
	}
}

// admitting is an authorizer that also implements Admission.
type admitting struct {
	AuthorizerFunc
	admit func(ctx context.Context, perm string) (func(), error)
}

func (a admitting) Admit(ctx context.Context, perm string) (func(), error) { return a.admit(ctx, perm) }

// TestAdmission: an Admission authorizer admits every request with a
// permission before its transaction opens, releases it when the request
// is done, is not asked for lists, and its error ends the request.
func TestAdmission(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var admitted, released atomic.Int64
	var heldAtAdmit atomic.Int64
	refuse := false
	a := admitting{
		AuthorizerFunc: func(ctx context.Context, req *AuthzRequest) (Decision, error) { return Allowed(), nil },
		admit: func(ctx context.Context, perm string) (func(), error) {
			if refuse {
				return nil, problem.New(problem.KindUnavailable, "busy")
			}
			admitted.Add(1)
			heldAtAdmit.Store(int64(b.pool.Stat().AcquiredConns()))
			return func() { released.Add(1) }, nil
		},
	}
	r := b.resource("todos", &Config{Authorizer: a,
		Permissions: map[Operation]string{OpCreate: "todos.create", OpList: "todos.list"}})
	if _, err := r.Do(context.Background(), &Call{Operation: OpCreate, Body: []byte(`{"title":"t"}`), Auth: user(alice)}); err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != 1 || released.Load() != 1 || heldAtAdmit.Load() != 0 {
		t.Fatalf("admitted %d, released %d, connections held at admission %d", admitted.Load(), released.Load(), heldAtAdmit.Load())
	}
	if _, err := r.Do(context.Background(), &Call{Operation: OpList, Auth: user(alice)}); err != nil {
		t.Fatal(err)
	}
	if admitted.Load() != 1 {
		t.Fatal("a list was admitted")
	}
	refuse = true
	_, err := r.Do(context.Background(), &Call{Operation: OpCreate, Body: []byte(`{"title":"t"}`), Auth: user(alice)})
	if p, _ := problem.As(err); p == nil || p.Status != http.StatusServiceUnavailable {
		t.Fatalf("refused admission: %v", err)
	}
}
