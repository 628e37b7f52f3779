package migrations_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// execScript runs several statements as the admin (fixtures only).
func execScript(t testing.TB, pool *pgxpool.Pool, sql string) {
	t.Helper()
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().Exec(t.Context(), sql).ReadAll(); err != nil {
		t.Fatalf("fixture: %v\n%s", err, sql)
	}
}

// answer evaluates sql (one row of text columns) as the caller, or returns
// the SQLSTATE of its error.
func answer(ctx context.Context, d *db.DB, c authctx.Auth, sql string) string {
	var out []string
	err := d.Run(ctx, c.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
		rows, err := q.Query(ctx, sql)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				return err
			}
			for _, v := range vals {
				out = append(out, fmt.Sprint(v))
			}
		}
		return rows.Err()
	})
	if err != nil {
		return "error " + sqlState(err)
	}
	return strings.Join(out, ",")
}

// callerKinds are the kinds of caller every helper and policy is answered for.
func callerKinds() []caller {
	meta := func(m map[string]any) authctx.Claims {
		return authctx.Claims{"sub": userA1, "is_anonymous": false, "app_metadata": m}
	}
	return []caller{
		{"full user of A", user(userA1, tenantA)},
		{"second user of A (admin)", user(userA2, tenantA)},
		{"user of B", user(userB1, tenantB)},
		{"user of A naming tenant B", user(userA1, tenantB)},
		{"user without tenant", user(userA1, "")},
		{"anonymous sign-in of A (member)", guest(guestA, tenantA)},
		{"anonymous sign-in of B (not member)", guest(guestA, tenantB)},
		{"no session", noSession},
		{"service role", service},
		{"tenant in app_metadata", withClaims(meta(map[string]any{"tenant_id": tenantA}))},
		{"renamed claim app_metadata.org_id naming B", withClaims(meta(map[string]any{"org_id": tenantB}))},
		{"renamed claim app_metadata.org_id naming A", withClaims(meta(map[string]any{"org_id": tenantA}))},
		{"both tenant claims", withClaims(authctx.Claims{"sub": userA1, "tenant_id": tenantA, "app_metadata": map[string]any{"tenant_id": tenantB, "org_id": tenantB}})},
		{"upper-case tenant", user(userA1, strings.ToUpper(tenantA))},
		{"tenant not a uuid", withClaims(authctx.Claims{"sub": userA1, "tenant_id": "acme"})},
		{"tenant a number", withClaims(authctx.Claims{"sub": userA1, "tenant_id": 42})},
		{"tenant in user_metadata only", withClaims(authctx.Claims{"sub": userA1, "user_metadata": map[string]any{"tenant_id": tenantA,
			"roles": []any{"admin", "approver"}, "memberships": []any{map[string]any{"scope": "tenant", "id": tenantB}}}})},
		{"memberships claim", withClaims(authctx.Claims{"sub": userB1, "tenant_id": tenantA, "is_anonymous": false, "memberships": []any{
			map[string]any{"scope": "tenant", "id": tenantA, "roles": []any{"owner"}},
			map[string]any{"scope": "project", "id": "p1"}}})},
		{"memberships claim in app_metadata", withClaims(authctx.Claims{"sub": userB1, "tenant_id": tenantA, "app_metadata": map[string]any{
			"memberships": []any{map[string]any{"scope": "tenant", "id": tenantA, "roles": "owner"}}}})},
		{"memberships claim not an array", withClaims(authctx.Claims{"sub": userB1, "tenant_id": tenantA, "memberships": map[string]any{"scope": "tenant", "id": tenantA}})},
		{"memberships claim with odd elements", withClaims(authctx.Claims{"sub": userB1, "tenant_id": tenantA, "memberships": []any{
			"tenant", 42, nil, map[string]any{"scope": "tenant", "id": 7}, map[string]any{"scope": "tenant", "id": strings.ToUpper(tenantA)}}})},
		{"roles claim", withClaims(authctx.Claims{"sub": userA2, "tenant_id": tenantA, "roles": []any{"admin", "approver"}})},
		{"roles in app_metadata", withClaims(authctx.Claims{"sub": userA2, "tenant_id": tenantA, "app_metadata": map[string]any{"roles": []any{"approver"}}})},
		{"roles not an array", withClaims(authctx.Claims{"sub": userA2, "tenant_id": tenantA, "roles": "approver"})},
		{"approver, anonymous sign-in", withClaims(authctx.Claims{"sub": userA2, "tenant_id": tenantA, "is_anonymous": true, "roles": []any{"approver"}})},
		{"is_anonymous as a string", withClaims(authctx.Claims{"sub": userA1, "tenant_id": tenantA, "is_anonymous": "true"})},
		{"sub not a uuid", withClaims(authctx.Claims{"sub": "not-a-uuid", "tenant_id": tenantA})},
		{"sub without hyphens", withClaims(authctx.Claims{"sub": strings.ReplaceAll(userA1, "-", ""), "tenant_id": tenantA})},
		{"upper-case sub", withClaims(authctx.Claims{"sub": strings.ToUpper(userA1), "tenant_id": tenantA})},
		{"no sub", withClaims(authctx.Claims{"tenant_id": tenantA})},
		{"sub of x's in a uuid's shape", withClaims(authctx.Claims{"sub": "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", "tenant_id": tenantA})},
	}
}

// helperExpressions are the helper calls answered, as one select each.
var helperExpressions = []string{
	`auth.uid()::text`,
	`tablegate.tenant_claim()`,
	`tablegate.current_tenant_id()::text`,
	`tablegate.claim_text('tenant_id')`,
	`tablegate.claim_text('app_metadata.org_id')`,
	`tablegate.claim_array('roles')::text`,
	`tablegate.claim_array('memberships')::text`,
	`tablegate.is_anonymous()`,
	`tablegate.is_full_user()`,
	`tablegate.has_role('admin')`,
	`tablegate.has_role('approver')`,
	`tablegate.approver_role()`,
	`tablegate.is_approver()`,
	`tablegate.is_member('tenant', '` + tenantA + `')`,
	`tablegate.is_member('tenant', '` + tenantA + `', 'admin')`,
	`tablegate.is_member('tenant', '` + tenantA + `', 'owner')`,
	`tablegate.is_member('tenant', '` + tenantB + `')`,
	`tablegate.is_member('tenant', '` + strings.ToUpper(tenantA) + `')`,
	`tablegate.is_member('tenant', '7')`,
	`tablegate.is_member('project', 'p1')`,
	`tablegate.is_member(null, '` + tenantA + `')`,
	`tablegate.is_member('tenant', null)`,
	`tablegate.is_member('tenant', tablegate.current_tenant_id()::text)`,
	`tablegate.tenant_topic_allowed('tenant:` + tenantA + `')`,
	`tablegate.tenant_topic_allowed('tenant:` + tenantA + `:todos')`,
	`tablegate.tenant_topic_allowed('tenant:` + tenantA + `:todos:x')`,
	`tablegate.tenant_topic_allowed('tenant:` + tenantA + `x')`,
	`tablegate.tenant_topic_allowed('tenant:` + tenantB + `:todos')`,
	`tablegate.tenant_topic_allowed('tenants:` + tenantA + `')`,
	`tablegate.tenant_topic_allowed('tenant:` + strings.ToUpper(tenantA) + `')`,
	`tablegate.tenant_topic_allowed('tenant:')`,
	`tablegate.tenant_topic_allowed(null)`,
}

// memberTenantByIsMember is what member_tenant_id(role) answers, written
// with is_member and current_tenant_id(): the membership check in its
// plainest form.
const memberTenantByIsMember = `case when tablegate.is_member('tenant', tablegate.current_tenant_id()::text%s) then tablegate.current_tenant_id() end::text`

// membershipFixture: memberships of the table (user A1 and A2 of tenant A,
// A2 as admin; user B1 of tenant B; the anonymous sign-in guestA of tenant
// A; a project membership; a row whose scope_id is an upper-case uuid).
var membershipFixture = `
insert into tablegate.tenants (id, name) values ('` + tenantA + `', 'A'), ('` + tenantB + `', 'B');
insert into tablegate.memberships (user_id, scope, scope_id, roles) values
  ('` + userA1 + `', 'tenant', '` + tenantA + `', '{member}'),
  ('` + userA2 + `', 'tenant', '` + tenantA + `', '{member,admin}'),
  ('` + userB1 + `', 'tenant', '` + tenantB + `', '{member}'),
  ('` + guestA + `', 'tenant', '` + tenantA + `', '{}'),
  ('` + userA1 + `', 'project', 'p1', '{}'),
  ('` + userB1 + `', 'tenant', '` + strings.ToUpper(tenantA) + `', '{}');
`

// update rewrites the answer tables of testdata/answers from the database
// instead of comparing with them: go test -run TestAnswers -update.
var update = flag.Bool("update", false, "rewrite testdata/answers/*.txt from the database")

// checkAnswers compares got, an answer table, with testdata/answers/name
// (or writes it with -update). The tables are the behaviour of the schema
// for every kind of caller: a change to a helper or a policy shows up as a
// readable diff of them.
func checkAnswers(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "answers", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with go test -run %s -update)", err, t.Name())
	}
	if got == string(want) {
		return
	}
	gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
	n := 0
	for i := 0; i < max(len(gl), len(wl)) && n < 20; i++ {
		var g, w string
		if i < len(gl) {
			g = gl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if g != w {
			t.Errorf("%s line %d:\n got %s\nwant %s", path, i+1, g, w)
			n++
		}
	}
}

// TestAnswersOfHelpers answers every policy helper as every kind of caller
// (run as authenticated, anon or service_role, never as a superuser),
// under the default tenant claim, a renamed claim and approver role, and
// with both settings deleted, and compares the table with
// testdata/answers/helpers.txt. It also checks that the membership checks
// agree with one another: member_tenant_id(role) and the view
// tablegate.member_tenant answer what is_member('tenant',
// current_tenant_id()) says, full_member_tenant_id(role) and
// tablegate.full_member_tenant the same for full users only.
func TestAnswersOfHelpers(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	d := db.New(pool, nil)
	callers := callerKinds()
	var table strings.Builder
	members := 0
	run := func(setting string) {
		fmt.Fprintf(&table, "# %s\n", setting)
		for _, c := range callers {
			fmt.Fprintf(&table, "## %s\n", c.name)
			for _, e := range append(slices.Clone(helperExpressions),
				`tablegate.member_tenant_id()::text`, `tablegate.member_tenant_id('admin')::text`,
				`tablegate.full_member_tenant_id()::text`, `(select id from tablegate.member_tenant)::text`,
				`(select id from tablegate.full_member_tenant)::text`, `tablegate.member_tenant_ids()::text`) {
				fmt.Fprintf(&table, "%s = %s\n", e, answer(t.Context(), d, c.ctx, "select "+e))
			}
			for _, role := range []string{"", ", 'admin'", ", 'owner'"} {
				plain := answer(t.Context(), d, c.ctx, "select "+fmt.Sprintf(memberTenantByIsMember, role))
				full := answer(t.Context(), d, c.ctx, "select case when not tablegate.is_anonymous() then "+fmt.Sprintf(memberTenantByIsMember, role)+" end")
				forms := map[string]string{
					"member_tenant_id(" + strings.TrimPrefix(role, ", ") + ")":      answer(t.Context(), d, c.ctx, "select tablegate.member_tenant_id("+strings.TrimPrefix(role, ", ")+")::text"),
					"full_member_tenant_id(" + strings.TrimPrefix(role, ", ") + ")": answer(t.Context(), d, c.ctx, "select tablegate.full_member_tenant_id("+strings.TrimPrefix(role, ", ")+")::text"),
				}
				if role == "" {
					forms["member_tenant view"] = answer(t.Context(), d, c.ctx, "select (select id from tablegate.member_tenant)::text")
					forms["full_member_tenant view"] = answer(t.Context(), d, c.ctx, "select (select id from tablegate.full_member_tenant)::text")
				}
				for form, got := range forms {
					want := plain
					if strings.HasPrefix(form, "full_") {
						want = full
					}
					if got != want {
						t.Errorf("%s, %s: %s = %q, is_member says %q", setting, c.name, form, got, want)
					}
				}
				if role == "" && plain == tenantA && full == tenantA {
					members++
				}
			}
		}
	}
	run("default claim")
	execScript(t, pool, `select tablegate.set_tenant_claim('app_metadata.org_id'); select tablegate.set_approver_role('admin')`)
	run("renamed claim app_metadata.org_id and approver role admin")
	execScript(t, pool, `delete from tablegate.settings where key in ('tenant_claim', 'approver_role')`)
	run("settings deleted")
	if members == 0 {
		t.Fatal("no caller is a full member of tenant A: the table proves little")
	}
	checkAnswers(t, "helpers.txt", table.String())
}

// TestAnswersOfTenantsRead: the tenants each kind of caller reads (all,
// and each by id), in testdata/answers/tenants.txt; the member tenants are
// listed once per statement (an init-plan, not a call in the row filter).
func TestAnswersOfTenantsRead(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture+`
insert into tablegate.tenants (id, name) values ('cccccccc-0000-4000-8000-000000000003', 'C');
insert into tablegate.memberships (user_id, scope, scope_id, roles) values
  ('`+userA1+`', 'tenant', 'cccccccc-0000-4000-8000-000000000003', '{}');`)
	d := db.New(pool, nil)
	const read = `select coalesce(string_agg(id::text, ' ' order by id), '') from tablegate.tenants`
	var table strings.Builder
	seen := map[string]bool{}
	for _, c := range callerKinds() {
		got := answer(t.Context(), d, c.ctx, read)
		seen[got] = true
		fmt.Fprintf(&table, "%s: reads [%s]", c.name, got)
		for _, one := range []string{tenantA, tenantB} {
			fmt.Fprintf(&table, ", by id %s: %s", one[:8], answer(t.Context(), d, c.ctx, `select count(*) from tablegate.tenants where id = '`+one+`'`))
		}
		table.WriteString("\n")
	}
	// Callers with no tenant, one and several must all have been seen.
	if !seen[""] || !seen[tenantA] || !seen[tenantA+" cccccccc-0000-4000-8000-000000000003"] {
		t.Fatalf("the callers read only %v: the table proves too little", seen)
	}
	checkAnswers(t, "tenants.txt", table.String())
	// Any caller may call it, as is_member (a policy without "to" runs it
	// for anon too): it answers only the caller's own memberships.
	if got := answer(t.Context(), d, noSession, `select tablegate.member_tenant_ids()::text`); got != "{}" {
		t.Errorf("member_tenant_ids() without a session = %q, want {}", got)
	}
	plan := answer(t.Context(), d, user(userA1, tenantA), `explain (costs off) select id from tablegate.tenants`)
	if !strings.Contains(plan, "InitPlan") || strings.Contains(plan, "is_member") {
		t.Errorf("tenants read plan checks membership per row:\n%s", plan)
	}
}

// policyOutcome is what a caller may do under a table's policies: the ids
// it reads, and whether an insert into tenant A, an update and a delete of
// the row of tenant A (id 1) succeed (each rolled back).
func policyOutcome(t *testing.T, d *db.DB, c authctx.Auth, table string) string {
	return policyOutcomeOf(t, d, c, table,
		"insert into "+table+" (id, tenant_id, owner_id, title) values (100, '"+tenantA+"', '"+userA1+"', 'new')", "id = 1")
}

// policyOutcomeOf is policyOutcome with the insert statement and the
// condition naming the row of tenant A given.
func policyOutcomeOf(t *testing.T, d *db.DB, c authctx.Auth, table, insert, row string) string {
	t.Helper()
	ctx := t.Context()
	read := answer(ctx, d, c, "select coalesce(string_agg(id::text, ' ' order by id), '') from "+table)
	write := func(sql string) string {
		var n int64
		err := d.Run(ctx, c.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
			tag, err := q.Exec(ctx, sql)
			n = tag.RowsAffected()
			if err == nil {
				err = errRollback
			}
			return err
		})
		if err != errRollback {
			return "error " + sqlState(err)
		}
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("read [%s] insert %s update %s delete %s", read,
		write(insert), write("update "+table+" set title = 'changed' where "+row), write("delete from "+table+" where "+row))
}

var errRollback = fmt.Errorf("roll back")

// TestAnswersOfPolicies: what the tenant policies of enable_tenant_policies
// (with and without require_membership and anon_read, uuid and text tenant
// columns) and the demo's policies (internal/demo/schema.sql) let
// every kind of caller read and write, in testdata/answers/policies.txt.
func TestAnswersOfPolicies(t *testing.T) {
	t.Parallel()
	table := func(name, typ string) string {
		return fmt.Sprintf(`
create table public.%[1]s (id bigint primary key, tenant_id %[2]s not null, owner_id uuid not null default auth.uid(), title text);
insert into public.%[1]s values (1, '%[3]s', '%[5]s', 'a'), (2, '%[3]s', '%[6]s', 'b'), (3, '%[4]s', '%[7]s', 'c');
grant select, insert, update, delete on public.%[1]s to anon, authenticated, service_role;
`, name, typ, tenantA, tenantB, userA1, userA2, userB1)
	}
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	type enabled struct{ table, options string }
	var tables []enabled
	for _, o := range []struct{ typ, args string }{
		{"uuid", ""}, {"uuid", ", require_membership => true"}, {"uuid", ", anon_read => true, require_membership => true"},
		{"text", ", require_membership => true"}, {"uuid", ", anon_read => true"},
	} {
		name := fmt.Sprintf("t%d", len(tables))
		tables = append(tables, enabled{"public." + name, o.typ + o.args})
		execScript(t, pool, table(name, o.typ)+fmt.Sprintf("select tablegate.enable_tenant_policies('public.%s'%s);", name, o.args))
	}
	d := db.New(pool, nil)

	demoSchema, err := os.ReadFile(filepath.Join("..", "..", "internal", "demo", "schema.sql"))
	if err != nil {
		t.Fatal(err)
	}
	demo := pgtest.DB(t)
	execScript(t, demo, membershipFixture)
	execScript(t, demo, string(demoSchema)+`insert into public.todos (tenant_id, owner_id, title) overriding system value
  select * from (values ('`+tenantA+`'::uuid, '`+userA1+`'::uuid, 'a')) v;`)
	demoDB := db.New(demo, nil)
	demoInsert := "insert into public.todos (tenant_id, owner_id, title) values ('" + tenantA + "', '" + userA1 + "', 'new')"

	var out strings.Builder
	outcomes := map[string]bool{}
	for _, c := range callerKinds() {
		fmt.Fprintf(&out, "## %s\n", c.name)
		for _, tb := range tables {
			got := policyOutcome(t, d, c.ctx, tb.table)
			outcomes[got] = true
			fmt.Fprintf(&out, "%s (%s): %s\n", tb.table, tb.options, got)
		}
		// The demo's todos: ids are generated, what is seen and done counts.
		got := policyOutcomeOf(t, demoDB, c.ctx, "public.todos", demoInsert, "title = 'a'")
		outcomes[got] = true
		fmt.Fprintf(&out, "demo public.todos: %s\n", got)
	}
	if len(outcomes) < 4 {
		t.Fatalf("only %d distinct outcomes: the callers do not exercise the policies", len(outcomes))
	}
	checkAnswers(t, "policies.txt", out.String())
}

// TestMemberTenantIDForNullFlag: member_tenant_id_for called directly with
// a NULL exclude_anonymous excludes anonymous sign-ins (the safe reading).
func TestMemberTenantIDForNullFlag(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	d := db.New(pool, nil)
	if got := answer(t.Context(), d, guest(guestA, tenantA), `select tablegate.member_tenant_id_for(null, null)::text`); got != "<nil>" {
		t.Errorf("anonymous member, NULL flag: %q, want none", got)
	}
	if got := answer(t.Context(), d, user(userA1, tenantA), `select tablegate.member_tenant_id_for(null, null)::text`); got != tenantA {
		t.Errorf("full member, NULL flag: %q, want %s", got, tenantA)
	}
}
