package authz

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/db/dbsqlc"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Outcomes of tablegate.approval_request.
const (
	outcomePending  = "pending"
	outcomeApproved = "approved"
	outcomeDenied   = "denied"
	outcomeExpired  = "expired"
)

// approval decides a gated permission whose rule already granted it:
//
//  1. in the request's transaction, approval_use admits the request when
//     the caller's latest approval for (permission, table, key) is approved,
//     unexpired and unused, and marks it used (single use) — so a request
//     that fails later and rolls back does not spend its approval;
//  2. otherwise, in a short transaction of its own bound to the same caller
//     (it must survive the refusal), approval_request reuses or opens the
//     pending approval, or reports a denial or an expiry.
func (a *Authorizer) approval(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	if req.Caller.Actor.Type != authctx.ActorUser || !isUUID(req.Caller.Actor.ID) {
		return deny("approvals need a signed-in user"), nil
	}
	if req.DB == nil {
		return rest.Decision{}, errors.New("authz: AuthzRequest.DB is nil; approvals need the request's transaction")
	}
	key, _ := idText(req.Key)
	if len(key) > 500 || len(req.Permission) > 200 || len(req.Table) > 200 {
		// Beyond what tablegate.approvals records (its check constraints).
		return deny("target too long for an approval"), nil
	}
	use := dbsqlc.ApprovalUseParams{Permission: req.Permission, TargetTable: req.Table, TargetKey: key, SingleUse: !a.appr.Reusable}
	id, err := a.queries.ApprovalUse(ctx, req.DB, use)
	if err != nil {
		return rest.Decision{}, fmt.Errorf("authz: approval use: %w", err)
	}
	if id != "" {
		return rest.Decision{Effect: rest.Allow, ApprovalID: id, Reason: "approval " + id}, nil
	}

	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.appr.Timeout)
	defer cancel()
	var got dbsqlc.ApprovalRequestRow
	err = a.appr.DB.Tx(tctx, req.Caller, func(q db.Querier) error {
		var err error
		got, err = a.queries.ApprovalRequest(tctx, q, dbsqlc.ApprovalRequestParams{
			Permission: req.Permission, TargetTable: req.Table, TargetKey: key,
			TtlSeconds: a.appr.TTL.Seconds(), ValidForSeconds: a.appr.ValidFor.Seconds(),
		})
		return err
	})
	if err != nil {
		if tctx.Err() != nil && ctx.Err() == nil {
			// No connection (or no answer) within Timeout: typically a pool
			// shared with the requests and exhausted by them.
			return rest.Decision{}, problem.New(problem.KindUnavailable,
				"The approval could not be recorded in time; try again shortly.").
				WithHeader("Retry-After", "1").WithCause(fmt.Errorf("authz: approval request: %w", err))
		}
		return rest.Decision{}, fmt.Errorf("authz: approval request: %w", err)
	}
	switch got.Outcome {
	case outcomePending:
		return rest.ApprovalRequired(got.ApprovalID), nil
	case outcomeApproved:
		// Approved between the two statements: take it in the request's
		// transaction after all.
		id, err := a.queries.ApprovalUse(ctx, req.DB, use)
		if err != nil {
			return rest.Decision{}, fmt.Errorf("authz: approval use: %w", err)
		}
		if id != "" {
			return rest.Decision{Effect: rest.Allow, ApprovalID: id, Reason: "approval " + id}, nil
		}
		return rest.Decision{Effect: rest.Deny, ApprovalID: got.ApprovalID, Reason: "approval already used"}, nil
	case outcomeDenied:
		return rest.Decision{Effect: rest.Deny, ApprovalID: got.ApprovalID, Reason: "approval denied"}, nil
	case outcomeExpired:
		return rest.Decision{Effect: rest.Deny, ApprovalID: got.ApprovalID, Reason: "approval expired"}, nil
	}
	return rest.Decision{}, fmt.Errorf("authz: approval request: unknown outcome %q", got.Outcome)
}

// NewApprovalDB returns a *db.DB over a new pool of its own (at most
// maxConns connections, default 2; idle connections closed after a minute)
// with the connection settings of pool, for [ApprovalOptions].DB. Pass the
// same db.Config as the resources' DB. Close it with Pool().Close() when
// the server stops.
//
// Why: a gated refusal records its approval in a second transaction while
// the request's own transaction still holds a connection. On a pool shared
// with the requests, a burst of refusals larger than the pool can hold every
// connection while each waits for a second one; they then fail after
// ApprovalOptions.Timeout with 503. A pool of its own cannot be exhausted
// by the requests.
func NewApprovalDB(ctx context.Context, pool *pgxpool.Pool, cfg *db.Config, maxConns int32) (*db.DB, error) {
	pc := pool.Config()
	if maxConns <= 0 {
		maxConns = 2
	}
	pc.MaxConns = maxConns
	pc.MinConns = 0
	pc.MaxConnIdleTime = time.Minute
	p, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("authz: approval pool: %w", err)
	}
	return db.New(p, cfg), nil
}

// isUUID reports whether s is a canonical 8-4-4-4-12 hex uuid.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
