package authz

import (
	"encoding/json"
	"strconv"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/plugin"
	"github.com/tablegate/tablegate/rest"
)

// Rules maps permission keys ("todos.delete", "todos.purge") to the rule
// that grants them. A key without a rule is denied to every caller but
// services (see [Config.DenyServices]).
type Rules map[string]Rule

// Rule decides whether the caller holds a permission for one request or
// one row. Rules are built by the functions of this package ([Role],
// [Member], [SignedIn], [Anyone], [Any], [All]) and are immutable: one rule
// may be shared by many keys and authorizers.
type Rule interface {
	// ask reports every membership question the rule may ask for in,
	// without short-circuiting, so that one query can answer a batch.
	ask(in *input, q func(memberQ))
	// eval decides the rule for in, answering membership questions with m.
	eval(in *input, m memberFunc) bool
}

// input is what a rule sees: the request, and the row being decided (the
// request's row, or one row of a list page).
type input struct {
	req    *rest.AuthzRequest
	row    rest.Row
	claims authctx.Claims
	tenant string // dotted path of the tenant claim
}

// memberQ is one membership question: does the caller hold a membership of
// scope and id (with one of roles, when roles is not empty)?
type memberQ struct {
	scope, id string
	roles     []string
}

type memberFunc func(memberQ) bool

// ID says where a rule finds the id of a scope (a tenant id, a project id).
// Build one with [RowColumn], [DataColumn], [Key], [Tenant] or [Value].
type ID interface {
	id(in *input) (string, bool)
}

type idFunc func(in *input) (string, bool)

func (f idFunc) id(in *input) (string, bool) { return f(in) }

// RowColumn reads the id from a column of the row being decided: the
// current row of get, update, delete and item actions, each row of a list
// page; for create and collection actions, which have no row, the request
// body. For update the rule is asked twice, for the current row and for
// the row with the body applied, and must grant both (a body cannot move
// a row into a scope the caller does not hold). The column should be
// among the resource's select columns.
func RowColumn(column string) ID {
	return idFunc(func(in *input) (string, bool) {
		src := in.row
		if src == nil {
			src = in.req.Data
		}
		return idText(src[column])
	})
}

// DataColumn reads the id from a field of the request body (create,
// update, actions).
func DataColumn(field string) ID {
	return idFunc(func(in *input) (string, bool) { return idText(in.req.Data[field]) })
}

// Key uses the request's key (item operations and item actions) as the id.
func Key() ID {
	return idFunc(func(in *input) (string, bool) { return idText(in.req.Key) })
}

// Tenant uses the caller's active tenant, read exactly as
// tablegate.current_tenant_id() reads it (plugin.TenantFromClaims): the
// claim [Config.TenantClaim] (default tenant_id, falling back to
// app_metadata.tenant_id), counted only when it holds a uuid; never
// user_metadata.
func Tenant() ID {
	return idFunc(func(in *input) (string, bool) {
		return plugin.TenantFromClaims(in.claims, in.tenant)
	})
}

// Value uses a fixed id.
func Value(id string) ID {
	return idFunc(func(*input) (string, bool) { return id, id != "" })
}

// idText renders an id value as text; false for missing, null, objects
// and arrays.
func idText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case json.Number:
		return x.String(), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case int32:
		return strconv.FormatInt(int64(x), 10), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// Role grants the permission to callers whose verified claims list one of
// roles (claim roles, else app_metadata.roles; never user_metadata).
func Role(roles ...string) Rule { return roleRule(roles) }

type roleRule []string

func (roleRule) ask(*input, func(memberQ)) {}

func (r roleRule) eval(in *input, _ memberFunc) bool {
	held := claimStrings(in.claims, "roles")
	for _, want := range r {
		for _, h := range held {
			if h == want {
				return true
			}
		}
	}
	return false
}

// Member grants the permission to callers holding a membership of scope
// ("tenant", "project", ...) whose id comes from id, with one of roles when
// roles are given (any role otherwise). Where memberships come from is the
// authorizer's choice: the memberships claim ([Claims]) or the
// tablegate.memberships table ([Memberships]). A missing id denies.
//
//	authz.Member("tenant", authz.RowColumn("tenant_id"))
//	authz.Member("tenant", authz.Tenant(), "owner", "admin")
func Member(scope string, id ID, roles ...string) Rule {
	return memberRule{scope: scope, id: id, roles: roles}
}

type memberRule struct {
	scope string
	id    ID
	roles []string
}

func (r memberRule) question(in *input) (memberQ, bool) {
	if r.id == nil {
		return memberQ{}, false
	}
	id, ok := r.id.id(in)
	if !ok {
		return memberQ{}, false
	}
	return memberQ{scope: r.scope, id: id, roles: r.roles}, true
}

func (r memberRule) ask(in *input, q func(memberQ)) {
	if mq, ok := r.question(in); ok {
		q(mq)
	}
}

func (r memberRule) eval(in *input, m memberFunc) bool {
	mq, ok := r.question(in)
	return ok && m(mq)
}

// SignedIn grants the permission to every signed-in user that is not an
// anonymous sign-in.
func SignedIn() Rule { return callerRule(false) }

// Anyone grants the permission to every caller, anon included (row-level
// security still decides which rows exist).
func Anyone() Rule { return callerRule(true) }

type callerRule bool

func (callerRule) ask(*input, func(memberQ)) {}

func (r callerRule) eval(in *input, _ memberFunc) bool {
	if r {
		return true
	}
	a := in.req.Caller.Actor()
	return a.Type == authctx.KindUser && !a.Anonymous
}

// Any grants the permission when one of rules grants it.
func Any(rules ...Rule) Rule { return anyRule(rules) }

type anyRule []Rule

func (r anyRule) ask(in *input, q func(memberQ)) {
	for _, x := range r {
		x.ask(in, q)
	}
}

func (r anyRule) eval(in *input, m memberFunc) bool {
	for _, x := range r {
		if x.eval(in, m) {
			return true
		}
	}
	return false
}

// All grants the permission when every one of rules grants it (and at
// least one rule is given).
func All(rules ...Rule) Rule { return allRule(rules) }

type allRule []Rule

func (r allRule) ask(in *input, q func(memberQ)) {
	for _, x := range r {
		x.ask(in, q)
	}
}

func (r allRule) eval(in *input, m memberFunc) bool {
	if len(r) == 0 {
		return false
	}
	for _, x := range r {
		if !x.eval(in, m) {
			return false
		}
	}
	return true
}

// claimArray returns the claim key as an array, from the top level, else
// from app_metadata; never from user_metadata (users edit it). It mirrors
// tablegate.claim_array in SQL.
func claimArray(c authctx.Claims, key string) []any {
	if a, ok := asSlice(c[key]); ok {
		return a
	}
	if am, ok := c["app_metadata"].(map[string]any); ok {
		if a, ok := asSlice(am[key]); ok {
			return a
		}
	}
	return nil
}

// asSlice accepts decoded JSON arrays and the slice types claims built in
// Go tend to use.
func asSlice(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, true
	case []map[string]any:
		out := make([]any, len(x))
		for i, m := range x {
			out[i] = m
		}
		return out, true
	}
	return nil, false
}

func claimStrings(c authctx.Claims, key string) []string {
	arr := claimArray(c, key)
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// claimMember answers a membership question from the memberships claim
// (array of {scope, id, roles}; top level, else app_metadata).
func claimMember(c authctx.Claims, q memberQ) bool {
	for _, e := range claimArray(c, "memberships") {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if s, _ := m["scope"].(string); s != q.scope {
			continue
		}
		if id, ok := idText(m["id"]); !ok || id != q.id {
			continue
		}
		if len(q.roles) == 0 {
			return true
		}
		held, _ := asSlice(m["roles"])
		for _, h := range held {
			for _, want := range q.roles {
				if h == want {
					return true
				}
			}
		}
	}
	return false
}
