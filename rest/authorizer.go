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
)

// Decision is an authorizer's answer for one request or row.
type Decision struct {
	Effect Effect
	// ApprovalID names the approval to wait for (NeedsApproval).
	ApprovalID string
	// Reason explains a denial for logs; it is not sent to the caller.
	Reason string
}

// Allowed, Denied and ApprovalRequired build decisions.
var (
	Allowed = Decision{Effect: Allow}
	Denied  = Decision{Effect: Deny}
)

// ApprovalRequired returns the decision that waits for approval id.
func ApprovalRequired(id string) Decision { return Decision{Effect: NeedsApproval, ApprovalID: id} }

// AuthzRequest is what the authorizer sees for one check (seed 4.4).
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
	// Caller is the verified request context (actor, claims).
	Caller authctx.Context
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

// OperationPermissions is implemented by authorizers that name the
// permission of a CRUD operation themselves, for
// [Options.PermissionsFromAuthorizer] (the seed's forOperation).
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
