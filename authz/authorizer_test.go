package authz_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"testing"

	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/dbsqlc"
)

// tenantRules are the rules of the HTTP scenarios: delete by claim role,
// the rest by tenant membership (update needs the editor role in it).
func tenantRules() authz.Rules {
	member := authz.Member("tenant", authz.RowColumn("tenant_id"))
	return authz.Rules{
		"todos.delete": authz.Role("admin"),
		"todos.list":   member,
		"todos.get":    member,
		"todos.create": member,
		"todos.update": authz.Member("tenant", authz.RowColumn("tenant_id"), "editor", "owner"),
	}
}

func membershipsClaim(entries ...string) string {
	s := `"memberships":[`
	for i, e := range entries {
		if i > 0 {
			s += ","
		}
		s += e
	}
	return s + "]"
}

func tm(tenant string, roles ...string) string {
	r := "["
	for i, x := range roles {
		if i > 0 {
			r += ","
		}
		r += strconv.Quote(x)
	}
	return `{"scope":"tenant","id":"` + tenant + `","roles":` + r + "]}"
}

// TestClaimsAuthorizerHTTP: per role and per membership, through the rest
// HTTP handlers on real Postgres.
func TestClaimsAuthorizerHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := mustAuthz(t)(authz.Claims(tenantRules(), nil))
	s := b.serve(a)
	idA := b.todo(tenantA, "a1")
	idB := b.todo(tenantB, "b1")

	admin := claims(alice, `"roles":["admin"]`)
	adminInAppMeta := claims(alice, `"app_metadata":{"roles":["admin"]}`)
	adminInUserMeta := claims(alice, `"user_metadata":{"roles":["admin"],"memberships":[`+tm(tenantA, "editor")+`]}`)
	memberA := claims(bob, membershipsClaim(tm(tenantA)))
	editorA := claims(bob, membershipsClaim(tm(tenantA, "editor")))
	memberAInAppMeta := claims(bob, `"app_metadata":{`+membershipsClaim(tm(tenantA))+`}`)
	memberB := claims(carol, membershipsClaim(tm(tenantB, "owner")))
	otherScope := claims(carol, `"memberships":[{"scope":"project","id":"`+tenantA+`","roles":["owner"]}]`)

	path := func(id int64) string { return "/api/todos/" + strconv.FormatInt(id, 10) }
	type sc struct {
		name, method, path, who, body string
		status                        int
		perm                          string // expected permission of a 403
	}
	scenarios := []sc{
		{"member reads own tenant's row", "GET", path(idA), memberA, "", 200, ""},
		{"member via app_metadata", "GET", path(idA), memberAInAppMeta, "", 200, ""},
		{"member of another tenant", "GET", path(idA), memberB, "", 403, "todos.get"},
		{"same id in another scope", "GET", path(idA), otherScope, "", 403, "todos.get"},
		{"user_metadata grants nothing", "GET", path(idA), adminInUserMeta, "", 403, "todos.get"},
		{"anon", "GET", path(idA), "", "", 403, "todos.get"},
		{"service allowed by default", "GET", path(idB), "service", "", 200, ""},
		{"update needs editor", "PATCH", path(idA), memberA, `{"title":"x"}`, 403, "todos.update"},
		{"editor updates", "PATCH", path(idA), editorA, `{"title":"x"}`, 200, ""},
		{"owner of B updates B", "PATCH", path(idB), memberB, `{"title":"y"}`, 200, ""},
		{"create in own tenant", "POST", "/api/todos", memberA, `{"tenant_id":"` + tenantA + `","title":"n"}`, 201, ""},
		{"create in another tenant", "POST", "/api/todos", memberA, `{"tenant_id":"` + tenantB + `","title":"n"}`, 403, "todos.create"},
		{"delete without admin", "DELETE", path(idB), memberB, "", 403, "todos.delete"},
		{"delete: admin role in user_metadata", "DELETE", path(idB), adminInUserMeta, "", 403, "todos.delete"},
		{"delete: admin role in app_metadata", "DELETE", path(idB), adminInAppMeta, "", 204, ""},
		{"delete: admin role claim", "DELETE", path(idA), admin, "", 204, ""},
	}
	for _, c := range scenarios { // in order: later rows depend on earlier ones
		r := do(t, s, c.method, c.path, c.who, c.body)
		if c.status == 403 {
			expectProblem(t, r, 403, "PERMISSION_DENIED", c.perm)
			continue
		}
		if r.status != c.status {
			t.Fatalf("%s: got %s, want %d", c.name, r, c.status)
		}
	}
	if n := b.scalar("select count(*) from todos where id in ($1, $2)", idA, idB).(int64); n != 0 {
		t.Fatalf("admins should have deleted both rows, %d left", n)
	}
	if n := b.members.n.Load(); n != 0 {
		t.Fatalf("the claims authorizer read tablegate.memberships %d times", n)
	}

	// Service callers refused when configured.
	strict := mustAuthz(t)(authz.Claims(tenantRules(), &authz.Config{DenyServices: true}))
	s2 := b.serve(strict)
	idC := b.todo(tenantC, "c")
	expectProblem(t, do(t, s2, "GET", path(idC), "service", ""), 403, "PERMISSION_DENIED", "todos.get")
}

// listIDs returns the tenant ids of a list response's items.
func listTenants(t *testing.T, r resp) []string {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("list: %s", r)
	}
	items, _ := r.json(t)["items"].([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		out = append(out, it.(map[string]any)["tenant_id"].(string))
	}
	return out
}

func countOf(ts []string) map[string]int {
	m := map[string]int{}
	for _, x := range ts {
		m[x]++
	}
	return m
}

// TestListBatchFiltering: a list page is decided in one batch; the
// memberships authorizer asks the table exactly once per page.
func TestListBatchFiltering(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 30 {
		b.todo([]string{tenantA, tenantB, tenantC}[i%3], fmt.Sprint("t", i))
	}
	// bob: member of A (claims only), of A and C in the table.
	b.exec(`insert into tablegate.memberships (user_id, scope, scope_id, roles) values
	  ($1, 'tenant', $2, '{}'), ($1, 'tenant', $3, '{viewer}')`, bob, tenantA, tenantC)
	who := claims(bob, membershipsClaim(tm(tenantA)))

	t.Run("claims", func(t *testing.T) {
		s := b.serve(mustAuthz(t)(authz.Claims(tenantRules(), nil)))
		before := b.members.n.Load()
		got := countOf(listTenants(t, do(t, s, "GET", "/api/todos?limit=30", who, "")))
		if got[tenantA] != 10 || len(got) != 1 {
			t.Fatalf("claims list: got %v, want 10 rows of tenant A only", got)
		}
		if d := b.members.n.Load() - before; d != 0 {
			t.Fatalf("claims authorizer sent %d membership queries", d)
		}
	})
	t.Run("memberships table", func(t *testing.T) {
		s := b.serve(mustAuthz(t)(authz.Memberships(tenantRules(), nil)))
		before := b.members.n.Load()
		got := countOf(listTenants(t, do(t, s, "GET", "/api/todos?limit=30", who, "")))
		if got[tenantA] != 10 || got[tenantC] != 10 || len(got) != 2 {
			t.Fatalf("memberships list: got %v, want 10 rows each of tenants A and C", got)
		}
		if d := b.members.n.Load() - before; d != 1 {
			t.Fatalf("one list page of 30 rows over 3 tenants sent %d membership queries, want 1", d)
		}
		// A page of another user with no memberships: still one query.
		before = b.members.n.Load()
		if got := listTenants(t, do(t, s, "GET", "/api/todos?limit=30", claims(dave, ""), "")); len(got) != 0 {
			t.Fatalf("dave sees %v", got)
		}
		if d := b.members.n.Load() - before; d != 1 {
			t.Fatalf("dave's page sent %d membership queries, want 1", d)
		}
		// Role-qualified membership over a batch: C holds viewer only.
		viewer := mustAuthz(t)(authz.Memberships(authz.Rules{
			"todos.list": authz.Any(authz.Member("tenant", authz.RowColumn("tenant_id"), "viewer"), authz.Role("auditor")),
		}, nil))
		s2 := b.serve(viewer)
		before = b.members.n.Load()
		got = countOf(listTenants(t, do(t, s2, "GET", "/api/todos?limit=30", who, "")))
		if got[tenantC] != 10 || len(got) != 1 {
			t.Fatalf("viewer list: got %v, want tenant C only", got)
		}
		if d := b.members.n.Load() - before; d != 1 {
			t.Fatalf("viewer page sent %d membership queries, want 1", d)
		}
		// auditor role from claims: every row, and still one query.
		got = countOf(listTenants(t, do(t, s2, "GET", "/api/todos?limit=30", claims(dave, `"roles":["auditor"]`), "")))
		if got[tenantA]+got[tenantB]+got[tenantC] != 30 {
			t.Fatalf("auditor list: got %v", got)
		}
	})
}

// TestMembershipsImmediateTruth: a membership granted after the token was
// issued counts at once with the memberships authorizer, and a revoked one
// stops counting; the claims authorizer keeps answering from the token.
func TestMembershipsImmediateTruth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.todo(tenantB, "b")
	path := "/api/todos/" + strconv.FormatInt(id, 10)
	token := claims(bob, membershipsClaim(tm(tenantA))) // issued before the grant
	live := b.serve(mustAuthz(t)(authz.Memberships(tenantRules(), nil)))
	stale := b.serve(mustAuthz(t)(authz.Claims(tenantRules(), nil)))

	expectProblem(t, do(t, live, "GET", path, token, ""), 403, "PERMISSION_DENIED", "todos.get")

	// Grant through the generated query as a service caller (the way an
	// admin endpoint would), then the very same token again.
	q := dbsqlc.New()
	err := b.db.Run(context.Background(), callerService().DBCaller(), db.RunOpts{Tx: true}, func(tx db.Querier) error {
		_, err := q.MembershipUpsert(context.Background(), tx, dbsqlc.MembershipUpsertParams{
			UserID: bob, Scope: "tenant", ScopeID: tenantB, Roles: []string{"editor"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := do(t, live, "GET", path, token, ""); r.status != 200 {
		t.Fatalf("after the grant: %s", r)
	}
	if r := do(t, live, "PATCH", path, token, `{"title":"edited"}`); r.status != 200 {
		t.Fatalf("editor role from the table: %s", r)
	}
	expectProblem(t, do(t, stale, "GET", path, token, ""), 403, "PERMISSION_DENIED", "todos.get")

	b.exec("delete from tablegate.memberships where user_id = $1 and scope_id = $2", bob, tenantB)
	expectProblem(t, do(t, live, "GET", path, token, ""), 403, "PERMISSION_DENIED", "todos.get")
}

// TestForOperation: PermissionsFromAuthorizer picks "<table>.<op>" keys
// present in the rules; Strict refuses uncovered operations.
func TestForOperation(t *testing.T) {
	t.Parallel()
	a := mustAuthz(t)(authz.Claims(authz.Rules{"todos.delete": authz.Role("admin")}, nil))
	for op, want := range map[string]string{"delete": "todos.delete", "get": "", "list": ""} {
		got, err := a.ForOperation("todos", restOp(op))
		if err != nil || got != want {
			t.Fatalf("ForOperation(todos, %s) = %q, %v; want %q", op, got, err, want)
		}
	}
	strict := mustAuthz(t)(authz.Claims(authz.Rules{"todos.delete": authz.Role("admin")}, &authz.Config{Strict: true}))
	if _, err := strict.ForOperation("todos", restOp("get")); err == nil {
		t.Fatal("strict ForOperation accepted an operation without a rule")
	}
	custom := mustAuthz(t)(authz.Claims(authz.Rules{"todo:remove": authz.Role("admin")}, &authz.Config{
		OperationKey: func(table string, op restOp) string {
			if op == "delete" {
				return "todo:remove"
			}
			return table + ":" + string(op)
		}}))
	if got, _ := custom.ForOperation("todos", "delete"); got != "todo:remove" {
		t.Fatalf("custom key: %q", got)
	}

	// Through rest: the strict authorizer makes NewResource fail.
	b := setup(t)
	err := tryServe(b, strict)
	if err == nil {
		t.Fatal("NewResource accepted a strict authorizer without rules for every operation")
	}
	keys := []string{}
	for _, op := range []string{"list", "get", "create", "update", "delete"} {
		k, _ := mustAuthz(t)(authz.Claims(tenantRules(), nil)).ForOperation("todos", restOp(op))
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if fmt.Sprint(keys) != "[todos.create todos.delete todos.get todos.list todos.update]" {
		t.Fatalf("keys %v", keys)
	}
}

// TestConfigErrors: bad configurations fail at construction.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]func() error{
		"nil rule":  func() error { _, err := authz.Claims(authz.Rules{"x": nil}, nil); return err },
		"empty key": func() error { _, err := authz.Claims(authz.Rules{"": authz.Anyone()}, nil); return err },
		"approvals without DB": func() error {
			_, err := authz.Claims(nil, &authz.Config{Approvals: &authz.ApprovalConfig{Permissions: []string{"x"}}})
			return err
		},
		"tenant claim under user_metadata": func() error {
			_, err := authz.Claims(nil, &authz.Config{TenantClaim: "user_metadata.tenant_id"})
			return err
		},
		"negative TTL": func() error {
			_, err := authz.Claims(nil, &authz.Config{Approvals: &authz.ApprovalConfig{DB: &db.DB{}, TTL: -1}})
			return err
		},
	}
	for name, f := range cases {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
