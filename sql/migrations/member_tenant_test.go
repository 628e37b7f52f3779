package migrations_test

import (
	"strings"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestTenantMembersFollowMemberships: tablegate.tenant_members, which the
// member tenant views read, equals the tenant rows of tablegate.memberships
// after every kind of write to memberships, and the views follow at once
// (a removed membership admits no more).
func TestTenantMembersFollowMemberships(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	execScript(t, pool, membershipFixture)
	const diff = `select count(*) from (
	  (select user_id::text, scope_id from tablegate.memberships where scope = 'tenant'
	   except all select user_key, tenant from tablegate.tenant_members)
	  union all
	  (select user_key, tenant from tablegate.tenant_members
	   except all select user_id::text, scope_id from tablegate.memberships where scope = 'tenant')) d`
	check := func(step, wantA1 string) {
		t.Helper()
		var n int
		if err := pool.QueryRow(t.Context(), diff).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: tenant_members differs from memberships in %d rows (%v)", step, n, err)
		}
		if got := answer(t.Context(), d, user(userA1, tenantA), `select (select id from tablegate.member_tenant)::text`); got != wantA1 {
			t.Errorf("%s: member_tenant for user A1 = %q, want %q", step, got, wantA1)
		}
	}
	check("fixture", tenantA)
	for _, step := range []struct{ name, sql, want string }{
		{"roles changed", `update tablegate.memberships set roles = '{admin}' where user_id = '` + userA1 + `'`, tenantA},
		{"moved to tenant B", `update tablegate.memberships set scope_id = '` + tenantB + `' where user_id = '` + userA1 + `' and scope = 'tenant'`, "<nil>"},
		{"moved back", `update tablegate.memberships set scope_id = '` + tenantA + `' where user_id = '` + userA1 + `' and scope = 'tenant'`, tenantA},
		{"scope changed", `update tablegate.memberships set scope = 'project' where user_id = '` + userA1 + `' and scope_id = '` + tenantA + `'`, "<nil>"},
		{"scope back", `update tablegate.memberships set scope = 'tenant' where user_id = '` + userA1 + `' and scope_id = '` + tenantA + `'`, tenantA},
		{"user changed", `update tablegate.memberships set user_id = '` + userB1 + `' where user_id = '` + userA1 + `' and scope = 'tenant'`, "<nil>"},
		{"inserted", `insert into tablegate.memberships (user_id, scope, scope_id) values ('` + userA1 + `', 'tenant', '` + tenantA + `')`, tenantA},
		{"deleted", `delete from tablegate.memberships where user_id = '` + userA1 + `' and scope = 'tenant'`, "<nil>"},
		{"inserted again", `insert into tablegate.memberships (user_id, scope, scope_id) values ('` + userA1 + `', 'tenant', '` + tenantA + `')`, tenantA},
		{"truncated", `truncate tablegate.memberships`, "<nil>"},
	} {
		execScript(t, pool, step.sql)
		check(step.name, step.want)
	}
}

// TestTenantMembersClosedToTheAPI: the API roles read nothing of
// tablegate.tenant_members but through the views, which show a caller its
// own membership of its claimed tenant only; a policy on memberships that
// reads the views does not recurse.
func TestTenantMembersClosedToTheAPI(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	execScript(t, pool, membershipFixture)
	for _, c := range []caller{{"user of A", user(userA1, tenantA)}, {"no session", noSession}, {"service role", service}} {
		if got := answer(t.Context(), d, c.ctx, `select count(*) from tablegate.tenant_members`); !strings.HasPrefix(got, "error 42501") {
			t.Errorf("%s reads tenant_members: %q, want permission denied", c.name, got)
		}
		if got := answer(t.Context(), d, c.ctx, `select count(*) from tablegate.member_tenant`); got != map[string]string{"user of A": "1", "no session": "0", "service role": "0"}[c.name] {
			t.Errorf("%s: %s rows in member_tenant", c.name, got)
		}
	}
	execScript(t, pool, `create policy co_members on tablegate.memberships for select to authenticated
	  using (scope = 'tenant' and scope_id = (select id::text from tablegate.member_tenant))`)
	if got := answer(t.Context(), d, user(userA1, tenantA), `select count(*) from tablegate.memberships where scope = 'tenant'`); got != "3" {
		t.Errorf("a memberships policy reading member_tenant: user A1 sees %q tenant memberships, want 3 (A1, A2 and the guest of A)", got)
	}
}

// TestTenantMembersResync: a write that fires no trigger (replica mode, as
// seed files and data-only restores set it) leaves tenant_members behind
// until the owner runs tablegate.resync_tenant_members(); the sync
// function refuses to run for another table.
func TestTenantMembersResync(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	execScript(t, pool, membershipFixture)
	execScript(t, pool, `begin; set local session_replication_role = replica;
	  delete from tablegate.memberships where user_id = '`+userA1+`'; commit`)
	if got := answer(t.Context(), d, user(userA1, tenantA), `select (select id from tablegate.member_tenant)::text`); got != tenantA {
		t.Fatalf("the replica-mode delete reached tenant_members (%q): the test proves nothing", got)
	}
	var n int64
	if err := pool.QueryRow(t.Context(), `select tablegate.resync_tenant_members()`).Scan(&n); err != nil || n != 4 {
		t.Fatalf("resync: %d rows, %v; want the 4 tenant memberships left", n, err)
	}
	if got := answer(t.Context(), d, user(userA1, tenantA), `select (select id from tablegate.member_tenant)::text`); got != "<nil>" {
		t.Errorf("after resync, the removed member still has tenant %q", got)
	}
	if got := answer(t.Context(), d, user(userA1, tenantA), `select tablegate.resync_tenant_members()`); !strings.HasPrefix(got, "error 42501") {
		t.Errorf("authenticated runs resync_tenant_members: %q", got)
	}
	_, err := pool.Exec(t.Context(), `create temp table fake (user_id uuid, scope text, scope_id text);
	  create trigger fake_sync after insert on pg_temp.fake for each row execute function tablegate.sync_tenant_members();
	  insert into pg_temp.fake values ('`+userA1+`', 'tenant', '`+tenantA+`')`)
	if err == nil || !strings.Contains(err.Error(), "trigger of tablegate.memberships only") {
		t.Errorf("the sync function ran for another table: %v", err)
	}
}
