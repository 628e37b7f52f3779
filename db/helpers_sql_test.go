package db_test

import (
	"context"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

const (
	tenantA = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	tenantB = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"
)

// scalar evaluates one SQL expression as the caller.
func scalar[T any](t *testing.T, d *db.DB, c db.Caller, expr string, args ...any) T {
	t.Helper()
	var v T
	if err := d.Run(context.Background(), c, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(context.Background(), "select "+expr, args...).Scan(&v)
	}); err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	return v
}

func TestClaimHelpers(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	ctx := context.Background()

	full := user(claims{"sub": alice, "tenant_id": tenantA, "is_anonymous": false, "roles": []any{"editor"}})
	guest := user(claims{"sub": bob, "is_anonymous": true, "app_metadata": map[string]any{"tenant_id": tenantB}})
	metaRoles := user(claims{"sub": alice, "app_metadata": map[string]any{"roles": []any{"admin"}}})
	userMetaOnly := user(claims{"sub": alice, "user_metadata": map[string]any{"roles": []any{"admin"},
		"tenant_id": tenantA, "memberships": []any{map[string]any{"scope": "tenant", "id": tenantA, "roles": []any{"owner"}}}}})
	badTenant := user(claims{"sub": alice, "tenant_id": "not-a-uuid"})
	rolesNotArray := user(claims{"sub": alice, "roles": "admin"})

	t.Run("is_anonymous", func(t *testing.T) {
		for _, tc := range []struct {
			c    db.Caller
			want bool
		}{{full, false}, {guest, true}, {anonCaller, false}, {serviceCaller, false},
			{user(claims{"sub": alice, "is_anonymous": "true"}), false}} {
			if got := scalar[bool](t, d, tc.c, "tablegate.is_anonymous()"); got != tc.want {
				t.Errorf("%v: got %v want %v", string(tc.c.Claims()), got, tc.want)
			}
		}
	})
	t.Run("has_role", func(t *testing.T) {
		for _, tc := range []struct {
			c    db.Caller
			role string
			want bool
		}{{full, "editor", true}, {full, "admin", false}, {metaRoles, "admin", true},
			{userMetaOnly, "admin", false}, {rolesNotArray, "admin", false}, {anonCaller, "admin", false}} {
			if got := scalar[bool](t, d, tc.c, "tablegate.has_role($1)", tc.role); got != tc.want {
				t.Errorf("%v has_role(%s): got %v want %v", string(tc.c.Claims()), tc.role, got, tc.want)
			}
		}
	})
	t.Run("current_tenant_id", func(t *testing.T) {
		for _, tc := range []struct {
			c    db.Caller
			want string
		}{{full, tenantA}, {guest, tenantB}, {userMetaOnly, ""}, {badTenant, ""}, {anonCaller, ""}} {
			if got := scalar[*string](t, d, tc.c, "tablegate.current_tenant_id()::text"); deref(got) != tc.want {
				t.Errorf("%v: got %v want %q", string(tc.c.Claims()), deref(got), tc.want)
			}
		}
	})
	t.Run("is_member", func(t *testing.T) {
		claimMember := user(claims{"sub": alice, "memberships": []any{
			map[string]any{"scope": "tenant", "id": tenantA, "roles": []any{"owner"}}}})
		if _, err := pool.Exec(ctx, "insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{viewer}')", bob, tenantB); err != nil {
			t.Fatal(err)
		}
		tableMember := user(claims{"sub": bob})
		for _, tc := range []struct {
			c        db.Caller
			id, role string
			want     bool
			comment  string
		}{
			{claimMember, tenantA, "", true, "claim membership"},
			{claimMember, tenantA, "owner", true, "claim role"},
			{claimMember, tenantA, "viewer", false, "claim lacks role"},
			{claimMember, tenantB, "", false, "other tenant"},
			{tableMember, tenantB, "viewer", true, "table membership, immediate"},
			{tableMember, tenantB, "owner", false, "table lacks role"},
			{userMetaOnly, tenantA, "", false, "user_metadata is never read"},
			{anonCaller, tenantA, "", false, "no session"},
			{user(claims{"sub": "not-a-uuid"}), tenantB, "", false, "odd sub is not an error"},
		} {
			var role any
			if tc.role != "" {
				role = tc.role
			}
			if got := scalar[bool](t, d, tc.c, "tablegate.is_member('tenant', $1, $2)", tc.id, role); got != tc.want {
				t.Errorf("%s: got %v want %v", tc.comment, got, tc.want)
			}
		}
	})
	t.Run("renamed tenant claim", func(t *testing.T) {
		// Rename on a database of its own so the other subtests keep the default.
		p2 := pgtest.DB(t)
		d2 := db.New(p2, nil)
		if _, err := p2.Exec(ctx, "select tablegate.set_tenant_claim('app_metadata.org_id')"); err != nil {
			t.Fatal(err)
		}
		org := user(claims{"sub": alice, "tenant_id": tenantB, "app_metadata": map[string]any{"org_id": tenantA}})
		if got := scalar[*string](t, d2, org, "tablegate.current_tenant_id()::text"); deref(got) != tenantA {
			t.Fatalf("renamed claim: got %v", deref(got))
		}
		if got := scalar[string](t, d2, org, "tablegate.tenant_claim()"); got != "app_metadata.org_id" {
			t.Fatalf("tenant_claim() = %q", got)
		}
		// Callers cannot rename it.
		err := d2.Run(ctx, org, db.RunOpts{Tx: true}, func(q db.Querier) error {
			_, err := q.Exec(ctx, "select tablegate.set_tenant_claim('tenant_id')")
			return err
		})
		if st, _ := asProblem(rest.DBProblem(err)); st != 403 {
			t.Fatalf("caller renamed the claim: %v", err)
		}
		for _, bad := range []string{"", "a..b", "x;drop table y", ".a", "1a"} {
			if _, err := p2.Exec(ctx, "select tablegate.set_tenant_claim($1)", bad); err == nil {
				t.Errorf("set_tenant_claim(%q) accepted", bad)
			}
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
