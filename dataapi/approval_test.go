package dataapi

import (
	"context"
	"sync"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
)

// TestDeclaredApprovals: a permission whose decision needs work outside
// the transaction (Decision.Then) is decided as on the native routes:
// the transaction rolls back and releases its connection, Then runs; an
// approval it records answers 403 APPROVAL_REQUIRED naming it, an Allow
// runs the request once more (once: a second deferral is a denial). A
// decision that needs an approval at once answers the same way.
func TestDeclaredApprovals(t *testing.T) {
	b := newBundle(t)
	var mu sync.Mutex
	approved := map[string]bool{}
	thenRuns, heldInThen := 0, int32(0)
	authz := rest.AuthorizerFunc(func(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
		title, _ := req.Data["title"].(string)
		mu.Lock()
		ok := approved[title]
		mu.Unlock()
		switch {
		case ok || title == "" || title == "plain":
			return rest.Allowed(), nil
		case title == "direct":
			return rest.Decision{Effect: rest.NeedsApproval, ApprovalID: "ap-direct"}, nil
		}
		return rest.Decision{Effect: rest.Deny, Then: func(ctx context.Context) (rest.Decision, error) {
			mu.Lock()
			defer mu.Unlock()
			thenRuns++
			heldInThen += b.pool.Stat().AcquiredConns()
			switch title {
			case "wait":
				return rest.Decision{Effect: rest.NeedsApproval, ApprovalID: "ap-1"}, nil
			case "later":
				approved[title] = true
				return rest.Allowed(), nil
			}
			return rest.Allowed(), nil // "loop": allowed, but deferred again
		}}, nil
	})
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Select: []string{"id", "title"}, Operations: rest.CRUD(), Caller: testCaller, Authorizer: authz,
		Permissions: map[rest.Operation]string{rest.OpCreate: "todos.create"},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"todos": {Resource: res, Allow: []authctx.Allow{authctx.AllowUser}}}})
	written := func(title string) int { return b.count("select count(*) from todos where title = '" + title + "'") }

	r := b.do("POST", "/todos", alice, `{"title":"wait"}`)
	if m, _ := r.json(t).(map[string]any); r.status != 403 || m["code"] != "APPROVAL_REQUIRED" ||
		m["details"] != "permission todos.create, approval ap-1" || m["hint"] == nil || written("wait") != 0 {
		t.Errorf("approval recorded by Then: %d %s", r.status, r.body)
	}
	if thenRuns != 1 || heldInThen != 0 {
		t.Errorf("Then ran %d times holding %d connections", thenRuns, heldInThen)
	}
	r = b.do("POST", "/todos", alice, `{"title":"later"}`)
	if r.status != 201 || written("later") != 1 {
		t.Errorf("allowed by Then: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos", alice, `{"title":"loop"}`)
	if m, _ := r.json(t).(map[string]any); r.status != 403 || m["code"] != "PERMISSION_DENIED" || written("loop") != 0 {
		t.Errorf("deferred twice: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos", alice, `{"title":"direct"}`)
	if m, _ := r.json(t).(map[string]any); r.status != 403 || m["code"] != "APPROVAL_REQUIRED" || m["details"] != "permission todos.create, approval ap-direct" || written("direct") != 0 {
		t.Errorf("needs an approval: %d %s", r.status, r.body)
	}
	// A bulk insert with one deferred row writes nothing until allowed.
	r = b.do("POST", "/todos", alice, `[{"title":"plain"},{"title":"wait"}]`)
	if r.status != 403 || written("plain") != 0 {
		t.Errorf("bulk with a row waiting for approval: %d %s", r.status, r.body)
	}
}
