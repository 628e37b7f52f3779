package rest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"github.com/tablegate/tablegate/problem"
)

// hookError marks an error returned by a hook, authorizer or action
// handler: a problem is sent as is, anything else is unexpected (never
// translated as a database error).
type hookError struct{ err error }

// Error returns the hook's error text (for logs only).
func (e *hookError) Error() string { return e.err.Error() }

// Unwrap returns the hook's error.
func (e *hookError) Unwrap() error { return e.err }

func hookErr(err error) error {
	if err == nil {
		return nil
	}
	return &hookError{err}
}

// toProblem is the one translation point for errors of the pipeline.
func (r *Resource) toProblem(call *Call, err error) *problem.Problem {
	var he *hookError
	if errors.As(err, &he) {
		if p, ok := problem.As(he.err); ok {
			return p
		}
		// A database error from ctx.DB inside a hook or handler gets the
		// same translation as the pipeline's own statements (503 for an
		// unavailable database, 409 for a unique violation, ...).
		if p, ok := problem.As(DBProblem(he.err)); ok && p.Kind != problem.KindUnexpected {
			return r.withConstraint(he.err, p, call.Operation)
		}
		return r.unexpected(call, err)
	}
	if errors.Is(err, ErrNotFound) {
		return notFound()
	}
	if p, ok := problem.As(err); ok {
		return p
	}
	if p, ok := problem.As(DBProblem(err)); ok {
		p = r.withConstraint(err, p, call.Operation)
		if p.Kind == problem.KindUnexpected {
			p.RequestID = call.requestID()
			r.log.ErrorContext(context.Background(), "rest: unexpected error", "request_id", call.RequestID,
				"table", r.table, "operation", string(call.Operation), "error", err)
		}
		return p
	}
	return r.unexpected(call, err)
}

func (r *Resource) unexpected(call *Call, err error) *problem.Problem {
	r.log.Error("rest: unexpected error", "request_id", call.requestID(), "table", r.table,
		"operation", string(call.Operation), "error", err)
	p := problem.New(problem.KindUnexpected, "The server could not complete the request.").WithCause(err)
	p.RequestID = call.RequestID
	return p
}

// requestID returns the call's request id, drawing one on first use (only
// hooks and errors need it, so the hot path does not pay for it).
func (c *Call) requestID() string {
	if c.RequestID == "" {
		c.RequestID = newRequestID()
	}
	return c.RequestID
}

func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func decisionProblem(perm string, d Decision) error {
	switch d.Effect {
	case Allow:
		return nil
	case NeedsApproval:
		return problem.ApprovalRequired(perm, d.ApprovalID)
	}
	return problem.PermissionDenied(perm)
}
