package authz_test

import (
	"testing"

	"github.com/tablegate/tablegate/authz"
)

// Regression: the approvals endpoint read its query with URL.Query(),
// which drops undecodable pairs: ?state=%zz listed approvals of every
// state. It answers 400.
func TestApprovalsEndpointMalformedQuery(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.serve(mustAuthz(t)(authz.Claims(tenantRules(), nil)))
	for _, q := range []string{"state=%zz", "limit=1;state=pending"} {
		r := do(t, s, "GET", "/api/approvals?"+q, claims(alice, ""), "")
		expectProblem(t, r, 400, "", "")
	}
}
