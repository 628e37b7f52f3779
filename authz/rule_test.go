package authz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/rest"
)

// decide runs a claims authorizer over one request without a database.
func decide(t *testing.T, rule authz.Rule, opts *authz.Config, rawClaims string, req rest.AuthzRequest) rest.Effect {
	t.Helper()
	a, err := authz.Claims(authz.Rules{"p": rule}, opts)
	if err != nil {
		t.Fatal(err)
	}
	req.Permission = "p"
	switch rawClaims {
	case "":
		req.Caller = authctx.Anon(authctx.ReasonNone)
	case "service":
		req.Caller = authctx.Service("svc")
	default:
		req.Caller = caller(t, rawClaims)
	}
	d, err := a.Authorize(context.Background(), &req)
	if err != nil {
		t.Fatal(err)
	}
	return d.Effect
}

// TestRules is the table of rule decisions over claims.
func TestRules(t *testing.T) {
	t.Parallel()
	row := rest.Row{"tenant_id": tenantA, "project": json.Number("42"), "n": nil}
	cases := []struct {
		name   string
		rule   authz.Rule
		opts   *authz.Config
		claims string
		req    rest.AuthzRequest
		want   rest.Effect
	}{
		{"role top level", authz.Role("admin"), nil, claims(alice, `"roles":["user","admin"]`), rest.AuthzRequest{}, rest.Allow},
		{"role any of", authz.Role("owner", "admin"), nil, claims(alice, `"roles":["admin"]`), rest.AuthzRequest{}, rest.Allow},
		{"role missing", authz.Role("admin"), nil, claims(alice, `"roles":["user"]`), rest.AuthzRequest{}, rest.Deny},
		{"role app_metadata", authz.Role("admin"), nil, claims(alice, `"app_metadata":{"roles":["admin"]}`), rest.AuthzRequest{}, rest.Allow},
		{"role user_metadata ignored", authz.Role("admin"), nil, claims(alice, `"user_metadata":{"roles":["admin"]}`), rest.AuthzRequest{}, rest.Deny},
		{"role claim not an array", authz.Role("admin"), nil, claims(alice, `"roles":"admin"`), rest.AuthzRequest{}, rest.Deny},
		{"role of the token's role claim is not a role", authz.Role("authenticated"), nil, claims(alice, ""), rest.AuthzRequest{}, rest.Deny},
		{"anon has no roles", authz.Role("admin"), nil, "", rest.AuthzRequest{}, rest.Deny},
		{"service allowed", authz.Role("admin"), nil, "service", rest.AuthzRequest{}, rest.Allow},
		{"service denied", authz.Role("admin"), &authz.Config{DenyServices: true}, "service", rest.AuthzRequest{}, rest.Deny},
		{"service denied, Anyone", authz.Anyone(), &authz.Config{DenyServices: true}, "service", rest.AuthzRequest{}, rest.Allow},

		{"member row column", authz.Member("tenant", authz.RowColumn("tenant_id")), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Row: row}, rest.Allow},
		{"member other tenant", authz.Member("tenant", authz.RowColumn("tenant_id")), nil,
			claims(alice, membershipsClaim(tm(tenantB))), rest.AuthzRequest{Row: row}, rest.Deny},
		{"member role required", authz.Member("tenant", authz.RowColumn("tenant_id"), "owner"), nil,
			claims(alice, membershipsClaim(tm(tenantA, "viewer"))), rest.AuthzRequest{Row: row}, rest.Deny},
		{"member role held", authz.Member("tenant", authz.RowColumn("tenant_id"), "owner"), nil,
			claims(alice, membershipsClaim(tm(tenantA, "viewer", "owner"))), rest.AuthzRequest{Row: row}, rest.Allow},
		{"member numeric id", authz.Member("project", authz.RowColumn("project")), nil,
			claims(alice, `"memberships":[{"scope":"project","id":"42","roles":[]}]`), rest.AuthzRequest{Row: row}, rest.Allow},
		{"member null column", authz.Member("tenant", authz.RowColumn("n")), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Row: row}, rest.Deny},
		{"member missing column", authz.Member("tenant", authz.RowColumn("nope")), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Row: row}, rest.Deny},
		{"member create reads body", authz.Member("tenant", authz.RowColumn("tenant_id")), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Data: rest.Row{"tenant_id": tenantA}}, rest.Allow},
		{"member data column", authz.Member("tenant", authz.DataColumn("tenant_id")), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Row: rest.Row{"tenant_id": tenantA}, Data: rest.Row{"tenant_id": tenantB}}, rest.Deny},
		{"member key", authz.Member("tenant", authz.Key()), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Key: tenantA}, rest.Allow},
		{"member int key", authz.Member("list", authz.Key()), nil,
			claims(alice, `"memberships":[{"scope":"list","id":"7"}]`), rest.AuthzRequest{Key: int64(7)}, rest.Allow},
		{"member value", authz.Member("org", authz.Value("acme")), nil,
			claims(alice, `"memberships":[{"scope":"org","id":"acme","roles":["x"]}]`), rest.AuthzRequest{}, rest.Allow},
		{"member user_metadata ignored", authz.Member("tenant", authz.RowColumn("tenant_id")), nil,
			claims(alice, `"user_metadata":{`+membershipsClaim(tm(tenantA))+`}`), rest.AuthzRequest{Row: row}, rest.Deny},
		{"member of active tenant", authz.Member("tenant", authz.Tenant(), "owner"), nil,
			claims(alice, `"tenant_id":"`+tenantA+`",`+membershipsClaim(tm(tenantA, "owner"))), rest.AuthzRequest{}, rest.Allow},
		{"active tenant from app_metadata", authz.Member("tenant", authz.Tenant()), nil,
			claims(alice, `"app_metadata":{"tenant_id":"`+tenantA+`"},`+membershipsClaim(tm(tenantA))), rest.AuthzRequest{}, rest.Allow},
		{"active tenant renamed", authz.Member("tenant", authz.Tenant()), &authz.Config{TenantClaim: "app_metadata.org"},
			claims(alice, `"app_metadata":{"org":"`+tenantA+`"},`+membershipsClaim(tm(tenantA))), rest.AuthzRequest{}, rest.Allow},
		{"no active tenant", authz.Member("tenant", authz.Tenant()), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{}, rest.Deny},
		{"active tenant not a uuid (current_tenant_id() agrees)", authz.Member("tenant", authz.Tenant()), nil,
			claims(alice, `"tenant_id":"acme",`+membershipsClaim(`{"scope":"tenant","id":"acme"}`)), rest.AuthzRequest{}, rest.Deny},
		{"active tenant in user_metadata ignored", authz.Member("tenant", authz.Tenant()), nil,
			claims(alice, `"user_metadata":{"tenant_id":"`+tenantA+`"},`+membershipsClaim(tm(tenantA))), rest.AuthzRequest{}, rest.Deny},

		{"signed in", authz.SignedIn(), nil, claims(alice, ""), rest.AuthzRequest{}, rest.Allow},
		{"signed in: anonymous sign-in", authz.SignedIn(), nil, claims(alice, `"is_anonymous":true`), rest.AuthzRequest{}, rest.Deny},
		{"signed in: anon", authz.SignedIn(), nil, "", rest.AuthzRequest{}, rest.Deny},
		{"anyone: anon", authz.Anyone(), nil, "", rest.AuthzRequest{}, rest.Allow},
		{"any", authz.Any(authz.Role("admin"), authz.Member("tenant", authz.RowColumn("tenant_id"))), nil,
			claims(alice, membershipsClaim(tm(tenantA))), rest.AuthzRequest{Row: row}, rest.Allow},
		{"any none", authz.Any(), nil, claims(alice, ""), rest.AuthzRequest{}, rest.Deny},
		{"all", authz.All(authz.SignedIn(), authz.Member("tenant", authz.RowColumn("tenant_id"))), nil,
			claims(alice, `"is_anonymous":true,`+membershipsClaim(tm(tenantA))), rest.AuthzRequest{Row: row}, rest.Deny},
		{"all empty", authz.All(), nil, claims(alice, ""), rest.AuthzRequest{}, rest.Deny},
	}
	for _, c := range cases {
		if got := decide(t, c.rule, c.opts, c.claims, c.req); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// TestRulesGoClaims: claims built in Go ([]string slices) work as decoded
// JSON does.
func TestRulesGoClaims(t *testing.T) {
	t.Parallel()
	a, _ := authz.Claims(authz.Rules{"p": authz.Any(authz.Role("admin"), authz.Member("tenant", authz.Value("t1"), "owner"))}, nil)
	for _, c := range []authctx.Claims{
		{"sub": alice, "roles": []string{"admin"}},
		{"sub": alice, "memberships": []map[string]any{{"scope": "tenant", "id": "t1", "roles": []string{"owner"}}}},
	} {
		d, err := a.Authorize(context.Background(), &rest.AuthzRequest{Permission: "p", Caller: authctx.NewUser(c, "t", nil)})
		if err != nil || d.Effect != rest.Allow {
			t.Fatalf("%v: %v %v", c, d, err)
		}
	}
}

// TestNoRuleDenies: a key without a rule denies users, rows included.
func TestNoRuleDenies(t *testing.T) {
	t.Parallel()
	a, _ := authz.Claims(authz.Rules{"p": authz.Anyone()}, nil)
	req := &rest.AuthzRequest{Permission: "q", Caller: caller(t, claims(alice, `"roles":["admin"]`))}
	if d, _ := a.Authorize(context.Background(), req); d.Effect != rest.Deny {
		t.Fatalf("unknown key: %v", d)
	}
	ds, err := a.AuthorizeRows(context.Background(), req, []rest.Row{{}, {}})
	if err != nil || len(ds) != 2 || ds[0].Effect != rest.Deny || ds[1].Effect != rest.Deny {
		t.Fatalf("rows: %v %v", ds, err)
	}
}

// Example: the demo's authorizer: todos.delete for claim role admin,
// reads for tenant members, todos.purge approval-gated.
func ExampleClaims() {
	a, err := authz.Claims(authz.Rules{
		"todos.delete": authz.Role("admin"),
		"todos.get":    authz.Member("tenant", authz.RowColumn("tenant_id")),
	}, nil)
	if err != nil {
		panic(err)
	}
	user := func(raw string) authctx.Auth {
		var c authctx.Claims
		_ = json.Unmarshal([]byte(raw), &c)
		return authctx.NewUser(c, "token", nil)
	}
	admin := user(`{"sub":"11111111-1111-1111-1111-111111111111","roles":["admin"]}`)
	member := user(`{"sub":"22222222-2222-2222-2222-222222222222",
	  "memberships":[{"scope":"tenant","id":"t1","roles":["editor"]}]}`)
	row := rest.Row{"id": json.Number("1"), "tenant_id": "t1"}

	for _, c := range []struct {
		who    string
		caller authctx.Auth
		perm   string
	}{
		{"admin", admin, "todos.delete"},
		{"member", member, "todos.delete"},
		{"member", member, "todos.get"},
		{"admin", admin, "todos.get"},
	} {
		d, _ := a.Authorize(context.Background(), &rest.AuthzRequest{Permission: c.perm, Table: "todos", Row: row, Caller: c.caller})
		fmt.Println(c.who, c.perm, d.Effect == rest.Allow)
	}
	key, _ := a.ForOperation("todos", rest.OpDelete)
	fmt.Println("ForOperation(todos, delete) =", key)
	// Output:
	// admin todos.delete true
	// member todos.delete false
	// member todos.get true
	// admin todos.get false
	// ForOperation(todos, delete) = todos.delete
}
