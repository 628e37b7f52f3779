package migrations_test

import (
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestIsApproverOf: who approves for a tenant, under each approver_source,
// asked as the caller (authenticated, RLS on memberships).
func TestIsApproverOf(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	admin(t, pool, `insert into tablegate.memberships (user_id, scope, scope_id, roles) values
	  ($1, 'tenant', $2, '{member,approver}'), ($1, 'tenant', $3, '{member}')`, userA1, tenantA, tenantB)
	approverOf := func(c authctx.Auth, tenant string) bool {
		t.Helper()
		return scalar[bool](t, d, c, `select tablegate.is_approver_of(nullif($1, '')::uuid)`, tenant)
	}
	table := withClaims(authctx.Claims{"sub": userA1, "tenant_id": tenantA})
	claimRole := withClaims(authctx.Claims{"sub": userB1, "tenant_id": tenantA, "roles": []string{"approver"}})
	claimMember := withClaims(authctx.Claims{"sub": userB1, "tenant_id": tenantA,
		"memberships": []map[string]any{{"scope": "tenant", "id": tenantA, "roles": []string{"approver"}}}})
	anonymous := withClaims(authctx.Claims{"sub": userA1, "tenant_id": tenantA, "is_anonymous": true})
	type want struct {
		name   string
		c      authctx.Auth
		tenant string
		ok     bool
	}
	check := func(source string, cases []want) {
		t.Helper()
		for _, w := range cases {
			if got := approverOf(w.c, w.tenant); got != w.ok {
				t.Errorf("%s, %s: %v, want %v", source, w.name, got, w.ok)
			}
		}
	}
	check("memberships (default)", []want{
		{"approver membership of A", table, tenantA, true},
		{"member of B without the role", table, tenantB, false},
		{"claim role only", claimRole, tenantA, false},
		{"claim membership only", claimMember, tenantA, false},
		{"anonymous sign-in with the membership", anonymous, tenantA, false},
		{"tenant-less approval, claim role", claimRole, "", true},
		{"tenant-less approval, no claim role", table, "", false},
		{"no session", noSession, tenantA, false},
	})
	admin(t, pool, `select tablegate.set_approver_source('claims')`)
	check("claims", []want{
		{"claim membership of A", claimMember, tenantA, true},
		{"claim membership, tenant B", claimMember, tenantB, false},
		{"table membership only", table, tenantA, false},
		{"claim role only", claimRole, tenantA, false},
	})
	admin(t, pool, `select tablegate.set_approver_source('global_role')`)
	check("global_role", []want{
		{"claim role, tenant A", claimRole, tenantA, true},
		{"claim role, tenant B", claimRole, tenantB, true},
		{"table membership only", table, tenantA, false},
	})
	if err := func() error {
		_, err := pool.Exec(t.Context(), `select tablegate.set_approver_source('everyone')`)
		return err
	}(); err == nil {
		t.Error("set_approver_source accepted an unknown source")
	}
	// The API roles cannot change the setting.
	err := d.Run(t.Context(), table.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(t.Context(), `select tablegate.set_approver_source('global_role')`)
		return err
	})
	if err == nil {
		t.Error("authenticated changed approver_source")
	}
}

// TestApprovalsNeedMembership: approval_request refuses (42501), and
// approval_use finds nothing for, a caller whose tenant claim names a
// tenant it is not a member of (a removed member), and an anonymous
// sign-in; a member of the tenant, and a user without a tenant claim, ask
// and spend as before.
func TestApprovalsNeedMembership(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	admin(t, pool, `insert into tablegate.tenants (id, name) values ($1, 'A') on conflict do nothing`, tenantA)
	admin(t, pool, `insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{member}')`, userA1, tenantA)
	const ask = `select outcome from tablegate.approval_request('todos.purge', 'todos', '1', interval '1 hour', interval '1 hour')`
	for _, c := range []struct {
		name   string
		caller authctx.Auth
		state  string
	}{
		{"member", user(userA1, tenantA), ""},
		{"no tenant claim", user(userB1, ""), ""},
		{"not a member (removed)", user(userB1, tenantA), "42501"},
		{"anonymous sign-in member", guest(userA1, tenantA), "42501"},
	} {
		if got := sqlState(exec(t, d, c.caller, ask)); got != c.state {
			t.Errorf("approval_request by %s: SQLSTATE %q, want %q", c.name, got, c.state)
		}
	}
	// An approved approval of a user who is then removed is not spent.
	admin(t, pool, `insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{member}')`, userB1, tenantA)
	if err := exec(t, d, user(userB1, tenantA), ask); err != nil {
		t.Fatal(err)
	}
	admin(t, pool, `update tablegate.approvals set state = 'approved', decided_at = now(), decided_by = $1 where actor = $1 and tenant_id = $2`, userB1, tenantA)
	const use = `select coalesce(tablegate.approval_use('todos.purge', 'todos', '1', false)::text, '')`
	if got := scalar[string](t, d, user(userB1, tenantA), use); got == "" {
		t.Fatal("a member could not use an approved approval")
	}
	admin(t, pool, `delete from tablegate.memberships where user_id = $1`, userB1)
	if got := scalar[string](t, d, user(userB1, tenantA), use); got != "" {
		t.Errorf("a removed member used the approval %s", got)
	}
}

// TestKeylessEventsNeedMembership: an event about no row (it reaches the
// writer's tenant's subscribers) is refused (42501) from a writer whose
// tenant claim names a tenant it is not a member of; a member, a writer
// without a tenant claim, and events about a row are unchanged.
func TestKeylessEventsNeedMembership(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	admin(t, pool, `insert into tablegate.tenants (id, name) values ($1, 'A') on conflict do nothing`, tenantA)
	admin(t, pool, `insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{member}')`, userA1, tenantA)
	admin(t, pool, `create table ev (id int primary key); grant select on ev to service_role; insert into ev values (1)`)
	emit := func(claims, key string) string {
		t.Helper()
		tx, err := pool.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(t.Context())
		if _, err := tx.Exec(t.Context(), `select set_config('request.jwt.claims', $1, true)`, claims); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), `set local role service_role`); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(t.Context(), `select tablegate.emit_event('note.posted', 'public.ev', nullif($1, ''), '{}')`, key)
		return sqlState(err)
	}
	claims := func(sub, tenant string) string {
		if tenant == "" {
			return `{"sub":"` + sub + `","role":"authenticated"}`
		}
		return `{"sub":"` + sub + `","role":"authenticated","tenant_id":"` + tenant + `"}`
	}
	for _, c := range []struct {
		name, claims, key, state string
	}{
		{"member, no key", claims(userA1, tenantA), "", ""},
		{"no tenant claim, no key", claims(userB1, ""), "", ""},
		{"not a member, no key", claims(userB1, tenantA), "", "42501"},
		{"not a member, about a row", claims(userB1, tenantA), "1", ""},
	} {
		if got := emit(c.claims, c.key); got != c.state {
			t.Errorf("%s: SQLSTATE %q, want %q", c.name, got, c.state)
		}
	}
	// A row event whose key column is NULL is a row event: the write the
	// caller's policies allow goes through.
	admin(t, pool, `create table notes (id int generated always as identity primary key, slug text, body text);
grant select, insert on notes to authenticated; select tablegate.enable_events('public.notes', 'slug')`)
	d := db.New(pool, nil)
	if err := exec(t, d, user(userB1, tenantA), `insert into notes (slug, body) values (null, 'x')`); err != nil {
		t.Errorf("a row write with a NULL key column: %v", err)
	}
}
