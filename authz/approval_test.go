package authz_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Callers of the approval scenarios: alice asks, dave approves, bob is
// neither, carol is an approver who also asks.
var (
	asker       = claims(alice, "")
	approver    = claims(dave, `"roles":["approver"]`)
	bystander   = claims(bob, `"roles":["admin"]`)
	selfAsker   = claims(carol, `"app_metadata":{"roles":["approver"]}`)
	guestApprov = claims("55555555-5555-5555-5555-555555555555", `"is_anonymous":true,"roles":["approver"]`)
)

func gatedRules() authz.Rules {
	return authz.Rules{
		"todos.purge":  authz.SignedIn(),
		"todos.delete": authz.Role("admin"),
	}
}

func (b *bundle) gated(o *authz.ApprovalConfig) *httptest.Server {
	b.t.Helper()
	if o == nil {
		o = &authz.ApprovalConfig{}
	}
	o.DB = b.db
	o.Permissions = []string{"todos.purge"}
	return b.serve(mustAuthz(b.t)(authz.Claims(gatedRules(), &authz.Config{Approvals: o})))
}

func purgePath(id int64) string { return "/api/todos/" + strconv.FormatInt(id, 10) + "/purge" }

// approvalID asserts a 403 APPROVAL_REQUIRED and returns approval.id.
func approvalID(t *testing.T, r resp) string {
	t.Helper()
	m := expectProblem(t, r, 403, "APPROVAL_REQUIRED", "todos.purge")
	ap, _ := m["approval"].(map[string]any)
	id, _ := ap["id"].(string)
	if id == "" {
		t.Fatalf("no approval.id in %s", r)
	}
	return id
}

func (b *bundle) purged(id int64) bool {
	b.t.Helper()
	return b.scalar("select purged from todos where id = $1", id).(bool)
}

// TestApprovalLifecycle: pending → approved → passes once, end to end
// through the rest handlers and the approvals endpoint.
func TestApprovalLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	row := b.todo(tenantA, "keep me")

	// First attempt: a pending approval, refused with its id; the refused
	// request's transaction rolled back, the approval did not.
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if b.purged(row) {
		t.Fatal("the action ran without an approval")
	}
	// Second attempt: the same pending approval.
	if again := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}")); again != id {
		t.Fatalf("second attempt opened %s, want the pending %s", again, id)
	}
	if n := b.scalar("select count(*) from tablegate.approvals").(int64); n != 1 {
		t.Fatalf("%d approvals, want 1", n)
	}
	// Another key is another approval.
	other := b.todo(tenantA, "other")
	if id2 := approvalID(t, do(t, s, "POST", purgePath(other), asker, "{}")); id2 == id {
		t.Fatal("a different key reused the approval")
	}

	// The requester reads it; a bystander cannot see it.
	r := do(t, s, "GET", "/api/approvals/"+id, asker, "")
	if r.status != 200 {
		t.Fatalf("requester get: %s", r)
	}
	m := r.json(t)
	if m["state"] != "pending" || m["actor"] != alice || m["permission"] != "todos.purge" ||
		m["target_table"] != "todos" || m["target_key"] != strconv.FormatInt(row, 10) {
		t.Fatalf("approval: %v", m)
	}
	expectProblem(t, do(t, s, "GET", "/api/approvals/"+id, bystander, ""), 404, "", "")

	// Who may decide: not the requester, not a non-approver, not an
	// anonymous sign-in holding the role, not a service, not anon.
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", asker, ""), 403, "PERMISSION_DENIED", "approvals.decide")
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", bystander, ""), 403, "PERMISSION_DENIED", "approvals.decide")
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", guestApprov, ""), 403, "PERMISSION_DENIED", "approvals.decide")
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", "service", ""), 403, "PERMISSION_DENIED", "approvals.decide")
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", "", ""), 401, "AUTH_REQUIRED", "")
	if st := b.scalar("select state from tablegate.approvals where id = $1", id); st != "pending" {
		t.Fatalf("refused decisions changed the state to %v", st)
	}

	// The approver lists pending approvals and approves.
	r = do(t, s, "GET", "/api/approvals?state=pending", approver, "")
	if r.status != 200 || len(r.json(t)["items"].([]any)) != 2 {
		t.Fatalf("approver list: %s", r)
	}
	r = do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, "")
	if r.status != 200 {
		t.Fatalf("approve: %s", r)
	}
	m = r.json(t)
	if m["state"] != "approved" || m["decided_by"] != dave {
		t.Fatalf("approved: %v", m)
	}
	// Deciding twice is a conflict.
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/deny", approver, ""), 409, "", "")

	// A request that fails after the authorizer passed rolls back and
	// keeps the approval unused.
	r = do(t, s, "POST", purgePath(row), asker, `{"fail":true}`)
	if r.status != 500 {
		t.Fatalf("failing handler: %s", r)
	}
	if b.purged(row) || b.scalar("select used_at is null from tablegate.approvals where id = $1", id) != true {
		t.Fatal("a rolled-back request spent the approval")
	}

	// Now it passes, once.
	r = do(t, s, "POST", purgePath(row), asker, "{}")
	if r.status != 200 || !b.purged(row) {
		t.Fatalf("approved request: %s", r)
	}
	if b.scalar("select used_at is not null from tablegate.approvals where id = $1", id) != true {
		t.Fatal("used_at not set")
	}
	// Only the requester's own request: the approval is not dave's.
	if next := approvalID(t, do(t, s, "POST", purgePath(row), approver, "{}")); next == id {
		t.Fatal("another user's request used alice's approval")
	}
	// The next attempt of alice needs a new approval.
	next := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if next == id {
		t.Fatal("a used approval admitted a second request")
	}

	// The requester cannot decide their own approval even as an approver.
	own := approvalID(t, do(t, s, "POST", purgePath(row), selfAsker, "{}"))
	p := expectProblem(t, do(t, s, "POST", "/api/approvals/"+own+"/approve", selfAsker, ""), 403, "PERMISSION_DENIED", "approvals.decide")
	if p["detail"] != "Approvers cannot decide their own request." {
		t.Fatalf("own request detail: %v", p["detail"])
	}
	// Service callers pass without approval (default), anon is refused by
	// the rule before any approval is opened.
	if r := do(t, s, "POST", purgePath(other), "service", "{}"); r.status != 200 {
		t.Fatalf("service: %s", r)
	}
	before := b.scalar("select count(*) from tablegate.approvals").(int64)
	expectProblem(t, do(t, s, "POST", purgePath(other), "", "{}"), 403, "PERMISSION_DENIED", "todos.purge")
	if after := b.scalar("select count(*) from tablegate.approvals").(int64); after != before {
		t.Fatal("an anon attempt opened an approval")
	}
}

// TestApprovalDenied: a denial answers PERMISSION_DENIED until the
// approval's expires_at, then a new attempt asks again.
func TestApprovalDenied(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	r := do(t, s, "POST", "/api/approvals/"+id+"/deny", approver, "")
	if r.status != 200 || r.json(t)["state"] != "denied" {
		t.Fatalf("deny: %s", r)
	}
	for range 2 {
		expectProblem(t, do(t, s, "POST", purgePath(row), asker, "{}"), 403, "PERMISSION_DENIED", "todos.purge")
	}
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, ""), 409, "", "")
	if b.purged(row) {
		t.Fatal("denied request ran")
	}
	// The denial runs out: a new attempt opens a new approval.
	b.exec("update tablegate.approvals set expires_at = now() - interval '1 second' where id = $1", id)
	if next := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}")); next == id {
		t.Fatal("reused a denied approval")
	}
}

// TestApprovalExpired: an undecided approval expires; the attempt that
// finds it expired is refused, the next one asks again; an approved but
// unused approval expires too; expired approvals cannot be decided.
func TestApprovalExpired(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(&authz.ApprovalConfig{TTL: time.Hour, ValidFor: time.Minute})
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if got := b.scalar("select round(extract(epoch from expires_at - requested_at)) from tablegate.approvals where id = $1", id); got == nil {
		t.Fatal("no expiry")
	}
	if secs := b.scalar("select extract(epoch from expires_at - requested_at)::int from tablegate.approvals where id = $1", id).(int32); secs != 3600 {
		t.Fatalf("TTL: expires after %d s, want 3600", secs)
	}
	b.exec("update tablegate.approvals set expires_at = now() - interval '1 second' where id = $1", id)

	// Reads show expired; approvers can no longer decide it.
	if st := do(t, s, "GET", "/api/approvals/"+id, asker, "").json(t)["state"]; st != "expired" {
		t.Fatalf("state %v, want expired", st)
	}
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, ""), 409, "", "")
	expectProblem(t, do(t, s, "POST", purgePath(row), asker, "{}"), 403, "PERMISSION_DENIED", "todos.purge")
	if st := b.scalar("select state from tablegate.approvals where id = $1", id); st != "expired" {
		t.Fatalf("stored state %v, want expired", st)
	}
	next := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if next == id {
		t.Fatal("expired approval reused")
	}

	// Approved: valid for ValidFor from the decision; unused past it, it
	// expires and refuses.
	r := do(t, s, "POST", "/api/approvals/"+next+"/approve", approver, "")
	if r.status != 200 {
		t.Fatalf("approve: %s", r)
	}
	if secs := b.scalar("select extract(epoch from expires_at - decided_at)::int from tablegate.approvals where id = $1", next).(int32); secs != 60 {
		t.Fatalf("ValidFor: expires %d s after the decision, want 60", secs)
	}
	b.exec("update tablegate.approvals set expires_at = now() - interval '1 second' where id = $1", next)
	expectProblem(t, do(t, s, "POST", purgePath(row), asker, "{}"), 403, "PERMISSION_DENIED", "todos.purge")
	if b.purged(row) {
		t.Fatal("an expired approval admitted the request")
	}
}

// TestApprovalReusable: with Reusable an approval admits every matching
// request until it expires.
func TestApprovalReusable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(&authz.ApprovalConfig{Reusable: true})
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if r := do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, ""); r.status != 200 {
		t.Fatalf("approve: %s", r)
	}
	for i := range 3 {
		if r := do(t, s, "POST", purgePath(row), asker, "{}"); r.status != 200 {
			t.Fatalf("use %d: %s", i, r)
		}
	}
	b.exec("update tablegate.approvals set expires_at = now() - interval '1 second' where id = $1", id)
	expectProblem(t, do(t, s, "POST", purgePath(row), asker, "{}"), 403, "PERMISSION_DENIED", "todos.purge")
}

// TestApprovalSingleUseConcurrent: concurrent requests on one single-use
// approval: exactly one passes; the others wait for a new approval (all the
// same one).
func TestApprovalSingleUseConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if r := do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, ""); r.status != 200 {
		t.Fatalf("approve: %s", r)
	}
	const n = 4
	var wg sync.WaitGroup
	res := make([]resp, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = do(t, s, "POST", purgePath(row), asker, "{}")
		}()
	}
	wg.Wait()
	passed, ids := 0, map[string]bool{}
	for _, r := range res {
		if r.status == 200 {
			passed++
			continue
		}
		ids[approvalID(t, r)] = true
	}
	if passed != 1 || len(ids) != 1 || ids[id] {
		t.Fatalf("passed %d (want 1), new approvals %v (want one, not %s): %v", passed, ids, id, res)
	}
}

// TestApprovalsGo: the Go helpers return problems wrapping the sentinels.
func TestApprovalsGo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	ap := authz.NewApprovals(b.db)
	ctx := context.Background()

	check := func(err error, sentinel error, status int) {
		t.Helper()
		if !errors.Is(err, sentinel) {
			t.Fatalf("error %v does not wrap %v", err, sentinel)
		}
		p, ok := problem.As(err)
		if !ok || p.Status != status {
			t.Fatalf("problem %v, want status %d", err, status)
		}
	}
	_, err := ap.Decide(ctx, caller(t, asker), id, true)
	check(err, authz.ErrNotApprover, 403)
	_, err = ap.Decide(ctx, caller(t, approver), "00000000-0000-0000-0000-000000000000", true)
	check(err, authz.ErrApprovalNotFound, 404)
	_, err = ap.Decide(ctx, caller(t, approver), "not-a-uuid", true)
	check(err, authz.ErrApprovalNotFound, 404)
	_, err = ap.Get(ctx, caller(t, bystander), id)
	check(err, authz.ErrApprovalNotFound, 404)

	got, err := ap.Decide(ctx, caller(t, approver), id, true)
	if err != nil || got.State != authz.StateApproved || got.DecidedBy == nil || *got.DecidedBy != dave {
		t.Fatalf("decide: %+v, %v", got, err)
	}
	_, err = ap.Decide(ctx, caller(t, approver), id, false)
	check(err, authz.ErrNotPending, 409)

	mine, err := ap.List(ctx, caller(t, asker), nil)
	if err != nil || len(mine) != 1 || mine[0].ID != id {
		t.Fatalf("requester list: %+v, %v", mine, err)
	}
	none, err := ap.List(ctx, caller(t, bystander), nil)
	if err != nil || len(none) != 0 {
		t.Fatalf("bystander list: %+v, %v", none, err)
	}
	if _, err := ap.List(ctx, caller(t, approver), &authz.ListOpts{State: "bogus"}); err == nil {
		t.Fatal("bogus state accepted")
	}
}

// TestApprovalsEndpoint: listing with filters and cursors, and the errors
// of the endpoint.
func TestApprovalsEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	var ids []string
	for i := range 5 {
		row := b.todo(tenantA, strconv.Itoa(i))
		ids = append(ids, approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}")))
	}
	if r := do(t, s, "POST", "/api/approvals/"+ids[0]+"/deny", approver, ""); r.status != 200 {
		t.Fatal(r)
	}
	seen := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		path := "/api/approvals?limit=2&actor=" + alice
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		r := do(t, s, "GET", path, approver, "")
		if r.status != 200 {
			t.Fatalf("page %d: %s", page, r)
		}
		m := r.json(t)
		for _, it := range m["items"].([]any) {
			id := it.(map[string]any)["id"].(string)
			if seen[id] {
				t.Fatalf("%s seen twice", id)
			}
			seen[id] = true
		}
		nc, _ := m["next_cursor"].(string)
		if nc == "" {
			break
		}
		cursor = nc
		if page > 5 {
			t.Fatal("cursor does not end")
		}
	}
	if len(seen) != 5 {
		t.Fatalf("walked %d approvals, want 5", len(seen))
	}
	if r := do(t, s, "GET", "/api/approvals?state=denied", approver, ""); len(r.json(t)["items"].([]any)) != 1 {
		t.Fatalf("denied filter: %s", r)
	}

	for _, c := range []struct {
		method, path, who string
		status            int
	}{
		{"GET", "/api/approvals?state=bogus", approver, 400},
		{"GET", "/api/approvals?limit=0", approver, 400},
		{"GET", "/api/approvals?limit=x", approver, 400},
		{"GET", "/api/approvals?cursor=!!!", approver, 400},
		{"GET", "/api/approvals?cursor=e30", approver, 400},
		{"GET", "/api/approvals?actor=nope", approver, 400},
		{"GET", "/api/approvals?state=pending&state=denied", approver, 400},
		{"GET", "/api/approvals?status=pending", approver, 400},
		{"GET", "/api/approvals/nope", approver, 404},
		{"GET", "/api/approvals/" + ids[1] + "/x", approver, 404},
		{"DELETE", "/api/approvals/" + ids[1], approver, 405},
		{"GET", "/api/approvals/" + ids[1] + "/approve", approver, 405},
		{"GET", "/api/approvals", "", 401},
	} {
		r := do(t, s, c.method, c.path, c.who, "")
		expectProblem(t, r, c.status, "", "")
		if c.status == 405 && r.header.Get("Allow") == "" {
			t.Fatalf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
}

// TestApprovalTablePolicies: the API roles cannot write approvals
// directly; every change goes through the functions.
func TestApprovalTablePolicies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	ctx := context.Background()
	for _, who := range []string{asker, approver} {
		for _, stmt := range []string{
			"update tablegate.approvals set state = 'approved' where id = '" + id + "'",
			"insert into tablegate.approvals (permission, actor, expires_at) values ('todos.purge', '" + alice + "', now() + interval '1 hour')",
			"delete from tablegate.approvals where id = '" + id + "'",
		} {
			err := b.db.Run(ctx, caller(t, who).DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
				_, err := q.Exec(ctx, stmt)
				return err
			})
			if p, ok := problem.As(rest.DBProblem(err)); err == nil || !ok || p.Status != 403 {
				t.Fatalf("%s as %s: %v", stmt, who, err)
			}
		}
	}
	// anon cannot read approvals at all.
	err := b.db.Run(ctx, authctxAnon().DBCaller(), db.RunOpts{}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select * from tablegate.approvals")
		return err
	})
	if err == nil {
		t.Fatal("anon read the approvals table")
	}
	if st := b.scalar("select state from tablegate.approvals where id = $1", id); st != "pending" {
		t.Fatalf("state changed to %v", st)
	}
}

// approvalsOwner is a role that is neither superuser nor bypassrls, as a
// managed Postgres owner is. Cluster-global: created only where missing.
const approvalsOwner = "tg_test_authz_owner"

// TestApprovalFunctionsNonSuperuserOwner: with the approvals table and
// its SECURITY DEFINER functions owned by a role that neither is superuser
// nor bypasses RLS (forced RLS binds it), the lifecycle still works. (It
// fails without the policy approvals_owner.)
func TestApprovalFunctionsNonSuperuserOwner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// Roles are cluster-global: create it only where missing, under a lock
	// held for this one statement (a session lock taken through the pool
	// could be released on another connection, or never).
	b.exec(`do $$ begin
	  perform pg_advisory_xact_lock(hashtext('tablegate.test.roles'));
	  if not exists (select 1 from pg_roles where rolname = '` + approvalsOwner + `') then
	    create role ` + approvalsOwner + ` nologin nosuperuser nobypassrls;
	  end if;
	end $$`)
	for _, s := range []string{
		`grant usage on schema tablegate, auth to ` + approvalsOwner,
		`grant select on tablegate.settings, tablegate.memberships to ` + approvalsOwner,
		`alter table tablegate.approvals owner to ` + approvalsOwner,
		`alter function tablegate.approval_request(text, text, text, interval, interval) owner to ` + approvalsOwner,
		`alter function tablegate.approval_use(text, text, text, boolean) owner to ` + approvalsOwner,
		`alter function tablegate.approval_decide(uuid, boolean) owner to ` + approvalsOwner,
	} {
		b.exec(s)
	}
	var super, bypass bool
	if err := b.pool.QueryRow(context.Background(), `select rolsuper, rolbypassrls from pg_roles r
	  join pg_class c on c.relowner = r.oid where c.oid = 'tablegate.approvals'::regclass`).Scan(&super, &bypass); err != nil || super || bypass {
		t.Fatalf("owner superuser=%v bypassrls=%v (%v)", super, bypass, err)
	}
	s := b.gated(nil)
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if again := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}")); again != id {
		t.Fatalf("pending not reused: %s vs %s", again, id)
	}
	expectProblem(t, do(t, s, "POST", "/api/approvals/"+id+"/approve", asker, ""), 403, "PERMISSION_DENIED", "approvals.decide")
	if r := do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, ""); r.status != 200 {
		t.Fatalf("approve: %s", r)
	}
	if r := do(t, s, "POST", purgePath(row), asker, "{}"); r.status != 200 || !b.purged(row) {
		t.Fatalf("approved request: %s", r)
	}
	if next := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}")); next == id {
		t.Fatal("single use not enforced")
	}
}

// TestApprovalGatedCreate: a gated operation without a key (create) is
// approved for the table as a whole: target_key is empty.
func TestApprovalGatedCreate(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := mustAuthz(t)(authz.Claims(authz.Rules{"todos.create": authz.SignedIn()}, &authz.Config{
		Approvals: &authz.ApprovalConfig{DB: b.db, Permissions: []string{"todos.create"}}}))
	s := b.serve(a)
	body := `{"tenant_id":"` + tenantA + `","title":"needs a yes"}`
	m := expectProblem(t, do(t, s, "POST", "/api/todos", asker, body), 403, "APPROVAL_REQUIRED", "todos.create")
	id := m["approval"].(map[string]any)["id"].(string)
	ap := do(t, s, "GET", "/api/approvals/"+id, approver, "").json(t)
	if ap["target_table"] != "todos" || ap["target_key"] != "" {
		t.Fatalf("target: %v", ap)
	}
	if n := b.scalar("select count(*) from todos").(int64); n != 0 {
		t.Fatalf("%d rows created before approval", n)
	}
	if r := do(t, s, "POST", "/api/approvals/"+id+"/approve", approver, ""); r.status != 200 {
		t.Fatal(r)
	}
	if r := do(t, s, "POST", "/api/todos", asker, body); r.status != 201 {
		t.Fatalf("approved create: %s", r)
	}
	expectProblem(t, do(t, s, "POST", "/api/todos", asker, body), 403, "APPROVAL_REQUIRED", "todos.create")
}

// TestApprovalExempt: ApprovalConfig.Exempt lets callers it grants pass
// a gated key without an approval; everyone else still needs one.
func TestApprovalExempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(&authz.ApprovalConfig{Exempt: authz.Role("approver")})
	row := b.todo(tenantA, "x")
	if r := do(t, s, "POST", purgePath(row), approver, "{}"); r.status != 200 {
		t.Fatalf("exempt approver: %s", r)
	}
	approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))
	if n := b.scalar("select count(*) from tablegate.approvals where actor = $1", dave).(int64); n != 0 {
		t.Fatalf("the exempt caller opened %d approvals", n)
	}
}

// TestApprovalLongTarget: a key longer than tablegate.approvals records is
// refused (403), never a 500.
func TestApprovalLongTarget(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := mustAuthz(t)(authz.Claims(gatedRules(), &authz.Config{Approvals: &authz.ApprovalConfig{
		DB: b.db, Permissions: []string{"todos.purge"}}}))
	ctx := context.Background()
	c := caller(t, asker)
	long := make([]byte, 501)
	for i := range long {
		long[i] = 'k'
	}
	err := b.db.Run(ctx, c.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		for _, k := range []any{string(long), string(long[:500])} {
			d, err := a.Authorize(ctx, &rest.AuthzRequest{Permission: "todos.purge", Table: "todos", Key: k, Caller: c, DB: q})
			if err != nil {
				return err
			}
			want := rest.Deny
			if len(k.(string)) == 500 {
				want = rest.Defer
			}
			if d.Effect != want {
				t.Errorf("key of %d: %v, want %v", len(k.(string)), d, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestApprovalsHandlerDefaultCaller: without HandlerConfig.Caller the
// handler reads the caller authctx middleware stored in the context.
func TestApprovalsHandlerDefaultCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.gated(nil)
	row := b.todo(tenantA, "x")
	id := approvalID(t, do(t, s, "POST", purgePath(row), asker, "{}"))

	h := authz.NewApprovals(b.db).Handler(nil)
	withCaller := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := testCaller(r)
		if err != nil {
			t.Error(err)
		}
		h.ServeHTTP(w, r.WithContext(authctx.WithResult(r.Context(), authctx.Result{Auth: a})))
	})
	mw := httptest.NewServer(http.StripPrefix("/api/approvals", withCaller))
	t.Cleanup(mw.Close)
	if r := do(t, mw, "GET", "/api/approvals/"+id, asker, ""); r.status != 200 {
		t.Fatalf("requester through the context: %s", r)
	}
	bare := httptest.NewServer(http.StripPrefix("/api/approvals", h))
	t.Cleanup(bare.Close)
	expectProblem(t, do(t, bare, "GET", "/api/approvals/"+id, asker, ""), 401, "AUTH_REQUIRED", "")
}
