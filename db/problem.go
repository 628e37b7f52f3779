package db

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/problem"
)

// Problem translates a database error into a *problem.Problem that names
// what went wrong in the caller's terms, never in SQL. The original error
// stays attached as the cause, for logs. A nil error stays nil, and an error
// that already is a problem is returned unchanged.
//
//	23505 unique, 23503 foreign key       → 409 conflict (naming the constraint)
//	42501 RLS or privilege refusal        → 403 forbidden
//	23502 not null, 23514 check, 22xxx    → 422 unprocessable (22P02 → 400)
//	40001 serialization, 40P01 deadlock   → 409 conflict with Retry-After
//	connection failures, 57P0x, 53xxx     → 503 unavailable with Retry-After
//	  (also a connection lost mid-statement: EOF, reset, server crash)
//	57014 statement timeout or cancelled  → 503 unavailable with Retry-After
//	25P03 transaction idle over budget    → 503 unavailable with Retry-After
//	[ErrPoolBusy], [ErrPoolClosed]        → 503 unavailable with Retry-After
//	[ErrCallerBusy]                       → 429 too many requests with Retry-After
//	a cancelled or expired context        → 503 unavailable with Retry-After
//	anything else                         → 500 unexpected
func Problem(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := problem.As(err); ok {
		return err
	}
	if errors.Is(err, ErrRoleNotAllowed) {
		return problem.New(problem.KindForbidden, "The token's role is not allowed here.").WithCause(err)
	}
	if errors.Is(err, ErrPoolBusy) {
		return problem.New(problem.KindUnavailable, "Every database connection is busy; try again shortly.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	if errors.Is(err, ErrCallerBusy) {
		return problem.New(problem.KindTooManyRequests, "Too many of your requests are running at once; try again shortly.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	if errors.Is(err, ErrPoolClosed) {
		return problem.New(problem.KindUnavailable, "The server is shutting down; try again.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fromPgError(pgErr).WithCause(err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The request ran out of time or its client went away: not a
		// failure of the database nor of the server.
		return problem.New(problem.KindUnavailable, "The request was cancelled or ran out of time; try again.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	if isConnError(err) {
		return problem.New(problem.KindUnavailable, "The database is unavailable; try again shortly.").
			WithHeader("Retry-After", "1").WithCause(err)
	}
	return problem.From(err)
}

func fromPgError(e *pgconn.PgError) *problem.Problem {
	field := func(p *problem.Problem) *problem.Problem {
		if e.ColumnName != "" {
			p.Errors = []problem.FieldError{{Path: "/" + e.ColumnName, Message: p.Detail}}
		}
		return p
	}
	switch {
	case e.Code == "0A000" && strings.Contains(e.Message, "cached plan must not change result type"):
		// A table was altered under a prepared statement; the driver
		// prepares it again on the next use.
		return problem.New(problem.KindUnavailable, "The table changed while the server ran; try again.").
			WithHeader("Retry-After", "1")
	case e.Code == "23505":
		return problem.New(problem.KindConflict, "A row with the same unique value already exists"+constraint(e)+".")
	case e.Code == "23503":
		return problem.New(problem.KindConflict, "The row references a row that does not exist, or is still referenced"+constraint(e, "foreign key")+".")
	case e.Code == "42501":
		return problem.New(problem.KindForbidden, "A row-level security policy or privilege refused the operation.")
	case e.Code == "23502":
		return field(problem.New(problem.KindUnprocessable, "A required value is missing."))
	case e.Code == "23514":
		if e.ConstraintName != "" {
			return problem.New(problem.KindUnprocessable, "A value violates check constraint "+strconv.Quote(e.ConstraintName)+".")
		}
		return problem.New(problem.KindUnprocessable, "A value violates a check constraint.")
	case e.Code == "22P02":
		return problem.New(problem.KindBadRequest, "A value has the wrong format for its column.")
	case len(e.Code) == 5 && e.Code[:2] == "22":
		return field(problem.New(problem.KindUnprocessable, "A value is out of range or invalid for its column."))
	case e.Code == "40001" || e.Code == "40P01":
		return problem.New(problem.KindConflict, "The request conflicted with a concurrent one; retry it.").
			WithHeader("Retry-After", "1")
	case e.Code == "57014" || e.Code == "25P03":
		return problem.New(problem.KindUnavailable, "The request took longer than its time budget and was cancelled.").
			WithHeader("Retry-After", "1")
	case len(e.Code) == 5 && (e.Code[:2] == "53" || e.Code[:2] == "08" || e.Code[:3] == "57P"):
		return problem.New(problem.KindUnavailable, "The database is unavailable; try again shortly.").
			WithHeader("Retry-After", "1")
	}
	return problem.New(problem.KindUnexpected, "The server could not complete the request.")
}

// constraint is " (unique constraint \"name\")" for a violation that
// names its constraint, else "". A name is schema, never a value; rest
// adds the constraint's columns from the catalog.
func constraint(e *pgconn.PgError, kind ...string) string {
	if e.ConstraintName == "" {
		return ""
	}
	k := "unique constraint"
	if len(kind) > 0 {
		k = kind[0]
	}
	return " (" + k + " " + strconv.Quote(e.ConstraintName) + ")"
}

// isConnError reports whether err is a failure of the connection rather
// than of the statement: a dial or network error (refused, reset, broken
// pipe), a connection that ended mid-statement (the server crashed or was
// stopped: pgx reads io.ErrUnexpectedEOF), a connection pgx had already
// closed, or anything pgx marks safe to retry (sent nothing).
func isConnError(err error) bool {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) {
		return true
	}
	return pgconn.SafeToRetry(err)
}
