package authz_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/rest"
)

// BenchmarkList50 measures a 50-row list page over HTTP without a
// permission, with the claims authorizer and with the memberships
// authorizer (one extra query per page).
func BenchmarkList50(b *testing.B) {
	bb := setup(b)
	for i := range 200 {
		bb.todo([]string{tenantA, tenantB, tenantC}[i%3], "t")
	}
	bb.exec(`insert into tablegate.memberships (user_id, scope, scope_id) values ($1, 'tenant', $2), ($1, 'tenant', $3)`, bob, tenantA, tenantB)
	who := claims(bob, membershipsClaim(tm(tenantA), tm(tenantB)))
	rules := authz.Rules{"todos.list": authz.Member("tenant", authz.RowColumn("tenant_id"))}
	for _, c := range []struct {
		name string
		a    rest.Authorizer
	}{
		{"no-permission", nil},
		{"claims", mustAuthz(b)(authz.Claims(rules, nil))},
		{"memberships", mustAuthz(b)(authz.Memberships(rules, nil))},
	} {
		b.Run(c.name, func(b *testing.B) {
			o := &rest.Config{Caller: testCaller, Authorizer: c.a, PermissionsFromAuthorizer: c.a != nil}
			res, err := rest.NewResource(context.Background(), bb.db, "todos", o)
			if err != nil {
				b.Fatal(err)
			}
			req, _ := http.NewRequest("GET", "/?limit=50", nil)
			req.Header.Set("X-Test-Claims", who)
			b.ResetTimer()
			for b.Loop() {
				w := &discard{h: http.Header{}}
				res.ServeHTTP(w, req)
				if w.status != 200 {
					b.Fatalf("status %d", w.status)
				}
			}
		})
	}
}

type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(s int)           { d.status = s }
