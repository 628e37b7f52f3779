package authz

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/dbsqlc"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
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
//     the caller's latest approval for (permission, table, key) in the
//     caller's active tenant is approved, unexpired and unused, and marks
//     it used (single use) — so a request that fails later and rolls back
//     does not spend its approval;
//  2. otherwise the decision is deferred (rest.Defer) to Then: once
//     the request's transaction has rolled back and released its
//     connection, rest's pipeline calls it, and approval_request reuses
//     or opens the pending approval (or reports a denial or an expiry) in
//     a short transaction of its own bound to the same caller. A refused request therefore never waits
//     for a second pooled connection while holding one.
func (a *Authorizer) approval(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	if req.Caller.Actor().Type != authctx.KindUser || !isUUID(req.Caller.Actor().ID) {
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
	caller, perm, table := req.Caller, req.Permission, req.Table
	return rest.Decision{Effect: rest.Defer, Reason: "no usable approval",
		Then: func(ctx context.Context) (rest.Decision, error) {
			return a.requestApproval(ctx, caller, perm, table, key)
		}}, nil
}

// requestApproval records one attempt at a gated permission (after the
// request's transaction has ended). Identical concurrent attempts — same
// caller (claims, so same tenant), permission, table and key — share one
// database call, and at most MaxConcurrent run at once; waiting for a turn
// and for a connection is bounded by Timeout (503 past it).
func (a *Authorizer) requestApproval(ctx context.Context, caller authctx.Auth, perm, table, key string) (rest.Decision, error) {
	claims := caller.DBCaller().Claims()
	if claims == nil {
		claims, _ = json.Marshal(caller.Claims())
	}
	sum := sha256.Sum256(claims)
	flight, _ := json.Marshal([]string{caller.Actor().ID, perm, table, key, string(sum[:])})
	v, err, _ := a.apprFlight.Do(string(flight), func() (any, error) {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.appr.Timeout)
		defer cancel()
		select {
		case a.apprTurns <- struct{}{}:
			defer func() { <-a.apprTurns }()
		case <-tctx.Done():
			return nil, unavailable(tctx.Err())
		}
		var got dbsqlc.ApprovalRequestRow
		err := a.appr.DB.Run(tctx, caller.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
			var err error
			got, err = a.queries.ApprovalRequest(tctx, q, dbsqlc.ApprovalRequestParams{
				Permission: perm, TargetTable: table, TargetKey: key,
				TtlSeconds: a.appr.TTL.Seconds(), ValidForSeconds: a.appr.ValidFor.Seconds(),
			})
			return err
		})
		if err != nil {
			if tctx.Err() != nil {
				// No connection (or no answer) within Timeout.
				return nil, unavailable(err)
			}
			return nil, fmt.Errorf("authz: approval request: %w", err)
		}
		return got, nil
	})
	if err != nil {
		return rest.Decision{}, err
	}
	got := v.(dbsqlc.ApprovalRequestRow)
	switch got.Outcome {
	case outcomePending:
		telemetry.ApprovalRequested(ctx, perm)
		return rest.ApprovalRequired(got.ApprovalID), nil
	case outcomeApproved:
		// Approved meanwhile: the pipeline runs the request again, and
		// approval_use spends the approval in its transaction.
		return rest.Decision{Effect: rest.Allow, ApprovalID: got.ApprovalID, Reason: "approval " + got.ApprovalID}, nil
	case outcomeDenied:
		return rest.Decision{Effect: rest.Deny, ApprovalID: got.ApprovalID, Reason: "approval denied"}, nil
	case outcomeExpired:
		return rest.Decision{Effect: rest.Deny, ApprovalID: got.ApprovalID, Reason: "approval expired"}, nil
	}
	return rest.Decision{}, fmt.Errorf("authz: approval request: unknown outcome %q", got.Outcome)
}

// Admit implements rest.Admission: a request under an approval-gated key
// waits for one of MaxInFlight turns (at most Timeout, then 503) before
// its transaction opens; other keys pass at once.
func (a *Authorizer) Admit(ctx context.Context, permission string) (func(), error) {
	if a.gatedTurns == nil || !a.gated[permission] {
		return func() {}, nil
	}
	t := time.NewTimer(a.appr.Timeout)
	defer t.Stop()
	select {
	case a.gatedTurns <- struct{}{}:
		return func() { <-a.gatedTurns }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, problem.New(problem.KindUnavailable, "Too many requests under this permission are in progress; try again shortly.").
			WithHeader("Retry-After", "1")
	}
}

// unavailable is the 503 of an approval that could not be recorded in
// time.
func unavailable(cause error) error {
	return problem.New(problem.KindUnavailable, "The approval could not be recorded in time; try again shortly.").
		WithHeader("Retry-After", "1").WithCause(fmt.Errorf("authz: approval request: %w", cause))
}

// NewApprovalDB returns a *db.DB over a new pool of its own (at most
// maxConns connections, default 2; idle connections closed after a minute)
// with the connection settings of pool, for [ApprovalConfig].DB. Pass the
// same db.Config as the resources' DB. Close it with Pool().Close() when
// the server stops.
//
// Optional: a refused request records its approval only after its own
// transaction has released its connection, and at most
// ApprovalConfig.MaxConcurrent approvals are recorded at once, so the
// resources' shared pool cannot be starved by gated refusals. A pool of
// its own keeps even those few connections off the request pool.
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
