// Package authz holds ready-made rest.Authorizers and the approvals
// lifecycle.
//
// # Authorizers
//
// An [Authorizer] maps permission keys to [Rule]s:
//
//	a, err := authz.Claims(authz.Rules{
//		"todos.delete": authz.Role("admin"),
//		"todos.list":   authz.Member("tenant", authz.RowColumn("tenant_id")),
//		"todos.purge":  authz.SignedIn(), // who may ask; gated below
//	}, &authz.Config{Approvals: &authz.ApprovalConfig{
//		DB: d, Permissions: []string{"todos.purge"},
//	}})
//
// [Claims] answers from the verified claims only (conventional claims roles
// and memberships, read at the top level or under app_metadata, never from
// user_metadata). [Memberships] answers [Member] rules from the
// tablegate.memberships table instead, through the request's caller-bound
// transaction: a membership granted a second ago counts, without waiting
// for a token refresh. Both decide a whole list page with at most one
// query (the membership questions of all rows are asked together).
//
// Both implement rest.OperationPermissions: with
// rest.Config.PermissionsFromAuthorizer, an operation is checked under
// "<table>.<operation>" when the rules hold that key.
//
// Service callers are allowed every permission unless
// [Config.DenyServices] is set. A key without a rule denies.
//
// # Approvals
//
// [ApprovalConfig] gate keys behind a second person's yes. The first
// attempt opens a pending approval (tablegate.approvals) and is refused
// with 403 APPROVAL_REQUIRED carrying approval.id; a caller holding the
// approver role approves it with [Approvals.Decide] (or the endpoint of
// [Approvals.Handler]); the same request then passes once (or until expiry
// with Reusable). Denied and expired approvals answer 403
// PERMISSION_DENIED. The pending approval is written in a short
// transaction of its own, bound to the same caller, because the refused
// request's transaction rolls back; spending an approval happens in the
// request's transaction, so a request that fails later keeps its approval.
// docs/approvals.md describes every state and move.
package authz
