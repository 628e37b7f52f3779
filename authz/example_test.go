package authz_test

import (
	"context"
	"log"
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// Example_demo wires the demo's permissions: todos.delete for claim role
// admin, todos.purge (an action) approval-gated and approved by callers
// with claim role approver, and the approver endpoint at /api/approvals.
func Example_demo() {
	ctx := context.Background()
	pool, err := db.NewPool(ctx, "postgres://127.0.0.1:5432/app")
	if err != nil {
		log.Fatal(err)
	}
	d := db.New(pool, nil)
	// Approvals are recorded on a small pool of their own.
	adb, err := authz.NewApprovalDB(ctx, pool, nil, 2)
	if err != nil {
		log.Fatal(err)
	}
	a, err := authz.Claims(authz.Rules{
		"todos.delete": authz.Role("admin"),
		"todos.purge":  authz.SignedIn(), // who may ask for it
	}, &authz.Config{Approvals: &authz.ApprovalConfig{
		DB: adb, Permissions: []string{"todos.purge"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	callerOf := func(r *http.Request) (authctx.Auth, error) {
		return authctx.Anon(authctx.ReasonNone), nil // the app's resolver here
	}
	purge := rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.None]{
		Method: http.MethodPost, Path: "/{id}/purge", Permission: "todos.purge",
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.None, error) {
			_, err := c.DB.Exec(c, "delete from todos where id = $1", in.ID)
			return rest.None{}, err
		},
	})
	todos, err := rest.NewResource(ctx, d, "todos", &rest.Config{
		Authorizer: a, PermissionsFromAuthorizer: true, Caller: callerOf,
		Actions: map[string]*rest.Action{"purge": purge},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	// Each mount serves its collection at both /x and /x/ (no redirect).
	mux.Handle("/api/todos", http.StripPrefix("/api/todos", todos))
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", todos))
	approvals := http.StripPrefix("/api/approvals",
		authz.NewApprovals(d).Handler(&authz.HandlerConfig{Caller: callerOf}))
	mux.Handle("/api/approvals", approvals)
	mux.Handle("/api/approvals/", approvals)
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
