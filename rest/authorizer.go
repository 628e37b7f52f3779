package rest

import (
	"context"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// Effect is the outcome of a permission check.
type Effect uint8

// The effects an [Authorizer] returns.
const (
	// Deny refuses: 403 PERMISSION_DENIED (kind forbidden, with permission).
	// It is the zero value, so a forgotten decision denies.
	Deny Effect = iota
	// Allow admits the request.
	Allow
	// NeedsApproval refuses until an approval is granted: 403
	// APPROVAL_REQUIRED with approval.id = Decision.ApprovalID.
	NeedsApproval
	// Defer decides outside the request's transaction: Decision.Then
	// gives the decision (see there). Without Then it denies.
	Defer
)

// Decision is an authorizer's answer for one request or row.
type Decision struct {
	Effect Effect
	// ApprovalID names the approval to wait for (NeedsApproval).
	ApprovalID string
	// Reason explains a denial for logs; it is not sent to the caller.
	Reason string
	// Then, on a Defer decision (or any other that does not allow), is
	// work the decision needs outside the request's transaction, such as
	// recording an approval that must survive the refusal. The pipeline
	// first rolls the request's transaction back and releases its
	// connection, then calls Then; its decision replaces this one. A
	// refusal is answered as usual; Allow runs the request once more from
	// the start (once: a second Allow from Then is answered as a denial).
	// So a request never holds a pooled connection while Then waits for
	// another. Callers of Authorize outside the pipeline must call Then
	// themselves. A list's AuthorizeRows drops a row whose decision is
	// deferred, without calling Then.
	Then func(ctx context.Context) (Decision, error)
}

// deferred reports a decision to be made by Then after the request's
// transaction.
func (d Decision) deferred() bool { return d.Effect != Allow && d.Then != nil }

// Allowed returns the decision that allows.
func Allowed() Decision { return Decision{Effect: Allow} }

// Denied returns the decision that denies (the zero Decision denies too).
func Denied() Decision { return Decision{Effect: Deny} }

// ApprovalRequired returns the decision that waits for approval id.
func ApprovalRequired(id string) Decision { return Decision{Effect: NeedsApproval, ApprovalID: id} }

// Deferred returns the decision that then makes outside the request's
// transaction (see Decision.Then).
func Deferred(then func(ctx context.Context) (Decision, error)) Decision {
	return Decision{Effect: Defer, Then: then}
}

// AuthzRequest is what the authorizer sees for one check: the permission
// key, the table and operation, the caller, the key and row (item
// operations) and the body, with the request's transaction.
type AuthzRequest struct {
	// Permission is the permission key being checked.
	Permission string
	// Table is the resource's table.
	Table string
	// Operation is the CRUD operation or action name.
	Operation Operation
	// Key is the parsed key of an item operation or item action.
	Key any
	// Row is the current row (get, update, delete, item actions); for a
	// list batch check it is nil and the rows are passed separately.
	Row Row
	// Data is the request body (create, update, actions).
	Data Row
	// Caller is the verified caller: [authctx.Auth.Actor] is who acts,
	// [authctx.Auth.Claims] its claims (this request's own copy).
	Caller authctx.Auth
	// DB is the caller-bound transaction of the request, for authorizers
	// that read memberships or approvals (RLS applies).
	DB db.Querier
}

// Authorizer decides permissions. It is asked, before any hook, for every
// operation and action that has a permission key. Implementations must be
// safe for concurrent use. An error ends the request (a *problem.Problem as
// is, anything else as 500 unexpected).
type Authorizer interface {
	// Authorize decides one request.
	Authorize(ctx context.Context, req *AuthzRequest) (Decision, error)
	// AuthorizeRows decides every row of a list page in one batch; it
	// returns one decision per row, in order. Denied rows are dropped from
	// the page's items; other page fields are untouched.
	AuthorizeRows(ctx context.Context, req *AuthzRequest, rows []Row) ([]Decision, error)
}

// Admission is implemented by authorizers that bound how many requests
// under some permission keys run at once (authz bounds approval-gated
// keys, so that a burst of them cannot take every pooled connection and
// core from other callers). The pipeline calls Admit before it opens the
// request's transaction (operations and actions with a permission; lists
// are not admitted) and release when the request is done. An error ends
// the request like an Authorize error.
type Admission interface {
	Admit(ctx context.Context, permission string) (release func(), err error)
}

// OperationPermissions is implemented by authorizers that name the
// permission of a CRUD operation themselves, for
// [Config.PermissionsFromAuthorizer].
type OperationPermissions interface {
	// ForOperation returns the permission key of op on table. An empty key
	// leaves the operation without a permission check.
	ForOperation(table string, op Operation) (string, error)
}

// AuthorizerFunc adapts a function to [Authorizer]; its AuthorizeRows asks
// the function once per row.
type AuthorizerFunc func(ctx context.Context, req *AuthzRequest) (Decision, error)

// Authorize calls f.
func (f AuthorizerFunc) Authorize(ctx context.Context, req *AuthzRequest) (Decision, error) {
	return f(ctx, req)
}

// AuthorizeRows calls f for each row with req.Row set to that row.
func (f AuthorizerFunc) AuthorizeRows(ctx context.Context, req *AuthzRequest, rows []Row) ([]Decision, error) {
	out := make([]Decision, len(rows))
	r := *req
	for i, row := range rows {
		r.Row = row
		d, err := f(ctx, &r)
		if err != nil {
			return nil, err
		}
		out[i] = d
	}
	return out, nil
}
