package authz

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/dbsqlc"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
)

// State is the state of an approval.
type State string

// The states of an approval (docs/approvals.md).
const (
	// StatePending waits for an approver's decision until expires_at.
	StatePending State = "pending"
	// StateApproved admits the requester's matching request (once, unless
	// reusable) until expires_at; UsedAt is set once spent.
	StateApproved State = "approved"
	// StateDenied refuses the requester's matching requests until
	// expires_at.
	StateDenied State = "denied"
	// StateExpired: nobody decided before expires_at, or the approval was
	// never used before it ran out.
	StateExpired State = "expired"
)

// The errors of [Approvals] methods, wrapped in a *problem.Problem: match
// them with errors.Is.
var (
	// ErrApprovalNotFound: no such approval, or the caller may not see it
	// (404).
	ErrApprovalNotFound = errors.New("authz: approval not found")
	// ErrNotApprover: the caller is not an approver of their active
	// tenant (403 PERMISSION_DENIED, permission approvals.decide).
	ErrNotApprover = errors.New("authz: caller is not an approver")
	// ErrOwnRequest: approvers cannot decide their own request (403
	// PERMISSION_DENIED, permission approvals.decide).
	ErrOwnRequest = errors.New("authz: approvers cannot decide their own request")
	// ErrNotPending: the approval was already decided or has expired (409).
	ErrNotPending = errors.New("authz: approval is not pending")
)

// DecidePermission is the permission key named in the problems of a
// refused decision.
const DecidePermission = "approvals.decide"

// Approval is one approval as its requester or an approver sees it.
type Approval struct {
	ID         string `json:"id"`
	Permission string `json:"permission"`
	// Actor is the requesting user's id.
	Actor string `json:"actor"`
	// TargetTable and TargetKey name what the request addressed (the key
	// is empty for create and collection actions).
	TargetTable string `json:"target_table"`
	TargetKey   string `json:"target_key"`
	// TenantID is the requester's active tenant when the approval was
	// opened; nil in a tenant-less project. Approvals are read, decided
	// and spent only in that tenant.
	TenantID *string `json:"tenant_id"`
	// State is the state as of the read (a lapsed pending or unused
	// approved approval reads as expired).
	State       State      `json:"state"`
	RequestedAt time.Time  `json:"requested_at"`
	DecidedBy   *string    `json:"decided_by"`
	DecidedAt   *time.Time `json:"decided_at"`
	ExpiresAt   time.Time  `json:"expires_at"`
	UsedAt      *time.Time `json:"used_at"`
}

// Approvals lists and decides approvals on behalf of a caller. Every call
// runs bound to the caller and confined to the caller's active tenant:
// requesters see their own approvals there, approvers of that tenant
// (tablegate.is_approver_of: by default a tenant membership holding
// tablegate.approver_role(), "approver") see its approvals and decide
// those of others. Safe for concurrent use.
type Approvals struct {
	d *db.DB
	q *dbsqlc.Queries
}

// NewApprovals returns the approvals of the database of d.
func NewApprovals(d *db.DB) *Approvals { return &Approvals{d: d, q: dbsqlc.New()} }

// ListOpts filters [Approvals.List]. The zero value lists the newest
// approvals visible to the caller.
type ListOpts struct {
	// State keeps approvals in this state (as of now); empty keeps all.
	State State
	// Actor keeps approvals requested by this user id; empty keeps all.
	Actor string
	// Limit caps the number of approvals (default 50, at most 500).
	Limit int
	// Before continues after the last approval of a previous page (pass
	// its RequestedAt and ID).
	Before *Approval
}

// Get returns one approval the caller may see; ErrApprovalNotFound
// otherwise.
func (a *Approvals) Get(ctx context.Context, caller authctx.Auth, id string) (*Approval, error) {
	if !isUUID(id) {
		return nil, notFound()
	}
	var out *Approval
	err := a.d.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
		r, err := a.q.ApprovalGet(ctx, q, id)
		if err != nil {
			return err
		}
		out = fromRow(r)
		return nil
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound()
	}
	if err != nil {
		return nil, rest.DBProblem(err)
	}
	return out, nil
}

// List returns the approvals the caller may see, newest first.
func (a *Approvals) List(ctx context.Context, caller authctx.Auth, opts *ListOpts) ([]Approval, error) {
	var o ListOpts
	if opts != nil {
		o = *opts
	}
	p := dbsqlc.ApprovalListParams{MaxRows: 50}
	if o.Limit > 0 {
		p.MaxRows = int32(min(o.Limit, 500))
	}
	if o.State != "" {
		switch o.State {
		case StatePending, StateApproved, StateDenied, StateExpired:
		default:
			return nil, problem.New(problem.KindBadRequest, "Unknown approval state; use pending, approved, denied or expired.")
		}
		s := string(o.State)
		p.State = &s
	}
	if o.Actor != "" {
		if !isUUID(o.Actor) {
			return nil, problem.New(problem.KindBadRequest, "The actor must be a user id (uuid).")
		}
		if err := p.Actor.Scan(o.Actor); err != nil {
			return nil, problem.New(problem.KindBadRequest, "The actor must be a user id (uuid).")
		}
	}
	if o.Before != nil {
		p.BeforeAt = pgtype.Timestamptz{Time: o.Before.RequestedAt, Valid: true}
		if err := p.BeforeID.Scan(o.Before.ID); err != nil {
			return nil, problem.New(problem.KindBadRequest, "The cursor is malformed.")
		}
	}
	var out []Approval
	err := a.d.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
		rows, err := a.q.ApprovalList(ctx, q, p)
		if err != nil {
			return err
		}
		out = make([]Approval, 0, len(rows))
		for _, r := range rows {
			out = append(out, *fromRow(dbsqlc.ApprovalGetRow(r)))
		}
		return nil
	})
	if err != nil {
		return nil, rest.DBProblem(err)
	}
	return out, nil
}

// Decide approves (approve true) or denies a pending approval. The caller
// must hold the approver role and must not be the requester. Approving
// starts the approval's validity window; denying holds until the approval's
// expires_at. Errors wrap ErrApprovalNotFound, ErrNotApprover,
// ErrOwnRequest or ErrNotPending in a *problem.Problem.
func (a *Approvals) Decide(ctx context.Context, caller authctx.Auth, id string, approve bool) (*Approval, error) {
	if caller.Actor().Type != authctx.KindUser {
		return nil, notApprover()
	}
	if !isUUID(id) {
		return nil, notFound()
	}
	var out *Approval
	err := a.d.Run(ctx, caller.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		r, err := a.q.ApprovalDecide(ctx, q, dbsqlc.ApprovalDecideParams{ID: id, Approve: approve})
		if err != nil {
			return err
		}
		out = fromRow(dbsqlc.ApprovalGetRow(r))
		return nil
	})
	if err != nil {
		return nil, decideProblem(err)
	}
	decision := "denied"
	if approve {
		decision = "approved"
	}
	telemetry.ApprovalDecided(ctx, decision)
	return out, nil
}

func decideProblem(err error) error {
	var pg *pgconn.PgError
	if errors.As(err, &pg) {
		switch {
		case pg.Code == "42501" && pg.Hint == "own_request":
			p := problem.PermissionDenied(DecidePermission)
			p.Detail = "Approvers cannot decide their own request."
			return p.WithCause(errors.Join(ErrOwnRequest, err))
		case pg.Code == "42501":
			return notApprover().WithCause(errors.Join(ErrNotApprover, err))
		case pg.Code == "P0002":
			return notFound()
		case pg.Code == "55000":
			return problem.New(problem.KindConflict, "The approval is no longer pending: it was decided or has expired.").
				WithCause(errors.Join(ErrNotPending, err))
		}
	}
	return rest.DBProblem(err)
}

func notFound() *problem.Problem {
	return problem.New(problem.KindNotFound, "No such approval, or it is not visible to the caller.").WithCause(ErrApprovalNotFound)
}

func notApprover() *problem.Problem {
	p := problem.PermissionDenied(DecidePermission)
	p.Detail = "Only approvers of the caller's active tenant decide approvals."
	return p.WithCause(ErrNotApprover)
}

// fromRow converts a row of ApprovalGet (ApprovalList and ApprovalDecide
// rows have the same fields and convert to it).
func fromRow(r dbsqlc.ApprovalGetRow) *Approval {
	a := &Approval{ID: r.ID, Permission: r.Permission, Actor: r.Actor, TargetTable: r.TargetTable,
		TargetKey: r.TargetKey, State: State(r.State), RequestedAt: r.RequestedAt, ExpiresAt: r.ExpiresAt}
	if r.TenantID.Valid {
		s := r.TenantID.String()
		a.TenantID = &s
	}
	if r.DecidedBy.Valid {
		s := r.DecidedBy.String()
		a.DecidedBy = &s
	}
	if r.DecidedAt.Valid {
		t := r.DecidedAt.Time
		a.DecidedAt = &t
	}
	if r.UsedAt.Valid {
		t := r.UsedAt.Time
		a.UsedAt = &t
	}
	return a
}
