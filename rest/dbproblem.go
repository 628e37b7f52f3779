package rest

import (
	"context"
	"errors"
	"strconv"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// DBProblem translates a database error into a *problem.Problem that
// names what went wrong in the caller's terms, never in SQL. The original
// error stays attached as the cause, for logs. A nil error stays nil, and
// an error that already is a problem is returned unchanged. It reads the
// outcome of [db.Classify], so a raw driver error caught inside a unit of
// work translates too:
//
//	db.ErrUniqueViolation, db.ErrForeignKeyViolation → 409 conflict (naming the constraint)
//	db.ErrPermissionDenied (RLS or privilege, 42501)   → 403 forbidden
//	db.ErrNotNullViolation, db.ErrCheckViolation,
//	  db.ErrInvalidValue                               → 422 unprocessable
//	db.ErrInvalidFormat (22P02)                        → 400 bad request
//	db.ErrConcurrentUpdate (40001, 40P01)              → 409 conflict with Retry-After
//	db.ErrUnavailable (57P0x, 53xxx, 08xxx, and a
//	  connection lost mid-statement: EOF, reset, crash) → 503 unavailable with Retry-After
//	db.ErrTimeout (57014, 25P03)                       → 503 unavailable with Retry-After
//	db.ErrSchemaChanged                                → 503 unavailable with Retry-After
//	db.ErrPoolBusy, db.ErrPoolClosed                   → 503 unavailable with Retry-After
//	db.ErrCallerBusy                                   → 429 too many requests with Retry-After
//	db.ErrRoleNotAllowed                               → 403 forbidden
//	a cancelled or expired context                     → 503 unavailable with Retry-After
//	anything else                                      → 500 unexpected
func DBProblem(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := problem.As(err); ok {
		return err
	}
	if errors.Is(err, db.ErrRoleNotAllowed) {
		return problem.New(problem.KindForbidden, "The token's role is not allowed here.").WithCause(err)
	}
	if errors.Is(err, db.ErrPoolBusy) {
		return problem.New(problem.KindUnavailable, "Every database connection is busy; try again shortly.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	if errors.Is(err, db.ErrCallerBusy) {
		return problem.New(problem.KindTooManyRequests, "Too many of your requests are running at once; try again shortly.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	if errors.Is(err, db.ErrPoolClosed) {
		return problem.New(problem.KindUnavailable, "The server is shutting down; try again.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	err = db.Classify(err)
	var de *db.Error
	isDB := errors.As(err, &de)
	if isDB && de.Code != "" {
		return fromDBError(de).WithCause(err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The request ran out of time or its client went away: not a
		// failure of the database nor of the server.
		return problem.New(problem.KindUnavailable, "The request was cancelled or ran out of time; try again.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	if isDB && errors.Is(de, db.ErrUnavailable) {
		return problem.New(problem.KindUnavailable, "The database is unavailable; try again shortly.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	return problem.From(err)
}

// fromDBError is the problem of an error Postgres returned.
func fromDBError(e *db.Error) *problem.Problem {
	field := func(p *problem.Problem) *problem.Problem {
		if e.Column != "" {
			p.Errors = []problem.FieldError{{Path: "/" + e.Column, Message: p.Detail}}
		}
		return p
	}
	switch {
	case errors.Is(e, db.ErrSchemaChanged):
		// A table was altered under a prepared statement; the driver
		// prepares it again on the next use.
		return problem.New(problem.KindUnavailable, "The table changed while the server ran; try again.").
			WithHeader("Retry-After", "1")
	case errors.Is(e, db.ErrUniqueViolation):
		return problem.New(problem.KindConflict, "A row with the same unique value already exists"+constraintOf(e)+".")
	case errors.Is(e, db.ErrForeignKeyViolation):
		return problem.New(problem.KindConflict, "The row references a row that does not exist, or is still referenced"+constraintOf(e, "foreign key")+".")
	case errors.Is(e, db.ErrPermissionDenied):
		return problem.New(problem.KindForbidden, "A row-level security policy or privilege refused the operation.")
	case errors.Is(e, db.ErrNotNullViolation):
		return field(problem.New(problem.KindUnprocessable, "A required value is missing."))
	case errors.Is(e, db.ErrCheckViolation):
		if e.Constraint != "" {
			return problem.New(problem.KindUnprocessable, "A value violates check constraint "+strconv.Quote(e.Constraint)+".")
		}
		return problem.New(problem.KindUnprocessable, "A value violates a check constraint.")
	case errors.Is(e, db.ErrInvalidFormat):
		return problem.New(problem.KindBadRequest, "A value has the wrong format for its column.")
	case errors.Is(e, db.ErrInvalidValue):
		return field(problem.New(problem.KindUnprocessable, "A value is out of range or invalid for its column."))
	case errors.Is(e, db.ErrConcurrentUpdate):
		return problem.New(problem.KindConflict, "The request conflicted with a concurrent one; retry it.").
			WithHeader("Retry-After", "1")
	case errors.Is(e, db.ErrTimeout):
		return problem.New(problem.KindUnavailable, "The request took longer than its time budget and was cancelled.").
			WithHeader("Retry-After", "1")
	case errors.Is(e, db.ErrUnavailable):
		return problem.New(problem.KindUnavailable, "The database is unavailable; try again shortly.").
			WithHeader("Retry-After", "1")
	}
	return problem.New(problem.KindUnexpected, "The server could not complete the request.")
}

// constraintOf is " (unique constraint \"name\")" for a violation that
// names its constraint, else "". A name is schema, never a value; rest
// adds the constraint's columns from the catalog.
func constraintOf(e *db.Error, kind ...string) string {
	if e.Constraint == "" {
		return ""
	}
	k := "unique constraint"
	if len(kind) > 0 {
		k = kind[0]
	}
	return " (" + k + " " + strconv.Quote(e.Constraint) + ")"
}

// readOnly returns o for work that writes nothing (a replica may serve it).
func readOnly(o db.RunOpts) db.RunOpts {
	o.ReadOnly = true
	return o
}

// inTx returns o for work that runs in one transaction.
func inTx(o db.RunOpts) db.RunOpts {
	o.Tx = true
	return o
}
