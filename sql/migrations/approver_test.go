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
	approverOf := func(c authctx.Caller, tenant string) bool {
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
		c      authctx.Caller
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
	err := d.Tx(t.Context(), table, func(q db.Querier) error {
		_, err := q.Exec(t.Context(), `select tablegate.set_approver_source('global_role')`)
		return err
	})
	if err == nil {
		t.Error("authenticated changed approver_source")
	}
}
