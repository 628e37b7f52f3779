package authz_test

import (
	"strconv"
	"testing"

	"github.com/tablegate/tablegate/authz"
)

// Regression: for update, RowColumn read only the CURRENT row, so an
// editor of tenant A could move a row of A into tenant B (where they hold
// no membership) with PATCH {"tenant_id": B}. The rule must grant the
// permission for the row as it is and as it will be.
func TestUpdateCannotMoveRowOutOfReach(t *testing.T) {
	t.Parallel()
	for _, src := range []string{"claims", "memberships"} {
		t.Run(src, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			var a *authz.Authorizer
			editorA := claims(bob, membershipsClaim(tm(tenantA, "editor")))
			if src == "claims" {
				a = mustAuthz(t)(authz.Claims(tenantRules(), nil))
			} else {
				a = mustAuthz(t)(authz.Memberships(tenantRules(), nil))
				b.exec(`insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{editor}')`, bob, tenantA)
				editorA = claims(bob, "")
			}
			s := b.serve(a)
			id := b.todo(tenantA, "a1")
			path := "/api/todos/" + strconv.FormatInt(id, 10)
			r := do(t, s, "PATCH", path, editorA, `{"tenant_id":"`+tenantB+`"}`)
			expectProblem(t, r, 403, "PERMISSION_DENIED", "todos.update")
			if got := b.scalar("select tenant_id::text from todos where id = $1", id); got != tenantA {
				t.Fatalf("row moved to %v", got)
			}
			// Staying in the tenant, or naming it again, is still fine.
			if r := do(t, s, "PATCH", path, editorA, `{"title":"x","tenant_id":"`+tenantA+`"}`); r.status != 200 {
				t.Fatalf("update within tenant: %s", r)
			}
			if r := do(t, s, "PATCH", path, editorA, `{"title":"y"}`); r.status != 200 {
				t.Fatalf("update within tenant: %s", r)
			}
		})
	}
}
