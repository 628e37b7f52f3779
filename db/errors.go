package db

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Database outcomes, every way a unit of work ([DB.Run]) can fail short
// of the caller's own errors; errors.Is matches them. Run returns the
// errors of Postgres and of the connection as an [*Error] that matches
// one of the first group (and still unwraps to the driver's error, such as
// a *pgconn.PgError); [Classify] does the same for an error caught inside
// a unit of work. The last four are returned as they are, before any
// statement runs. Package rest answers each with its Problem Details
// (rest.DBProblem).
var (
	// ErrNoRows is returned by the Scan of a QueryRow that found no row.
	ErrNoRows = pgx.ErrNoRows

	// ErrUniqueViolation: a row with the same unique value exists
	// (SQLSTATE 23505); [Error.Constraint] names the constraint.
	ErrUniqueViolation = errors.New("db: unique violation")
	// ErrForeignKeyViolation: the row references a row that does not
	// exist, or is still referenced (23503); [Error.Constraint] names the
	// foreign key.
	ErrForeignKeyViolation = errors.New("db: foreign key violation")
	// ErrNotNullViolation: a required value is missing (23502);
	// [Error.Column] names the column.
	ErrNotNullViolation = errors.New("db: not-null violation")
	// ErrCheckViolation: a value violates a check constraint (23514);
	// [Error.Constraint] names it.
	ErrCheckViolation = errors.New("db: check violation")
	// ErrInvalidFormat: a value has the wrong format for its column
	// (22P02, such as "abc" for an integer).
	ErrInvalidFormat = errors.New("db: invalid text representation")
	// ErrInvalidValue: a value is out of range or invalid for its column
	// (every other 22xxx); [Error.Column] names the column when Postgres
	// does.
	ErrInvalidValue = errors.New("db: invalid value")
	// ErrPermissionDenied: a row-level security policy or a privilege
	// refused the statement (42501).
	ErrPermissionDenied = errors.New("db: permission denied")
	// ErrConcurrentUpdate: the transaction conflicted with a concurrent
	// one (serialization failure 40001, deadlock 40P01); retrying it may
	// succeed.
	ErrConcurrentUpdate = errors.New("db: conflict with a concurrent transaction")
	// ErrTimeout: a statement ran past its statement timeout, or a
	// transaction stayed idle past its budget (57014, 25P03).
	ErrTimeout = errors.New("db: time budget exceeded")
	// ErrSchemaChanged: a table changed under a prepared statement (0A000
	// "cached plan must not change result type"); the driver prepares it
	// again on the next use, so retrying succeeds.
	ErrSchemaChanged = errors.New("db: the table changed under a prepared statement")
	// ErrUnavailable: the database is out of resources or shutting down
	// (53xxx, 08xxx, 57P0x), or the connection failed or was lost
	// mid-statement; [Error.Code] is empty for a connection failure.
	ErrUnavailable = errors.New("db: the database is unavailable")

	// ErrRoleNotAllowed: a user token's role claim names a role outside
	// [Config.UserRoles]. Such a caller is refused before any statement;
	// it never runs with more than the listed roles.
	ErrRoleNotAllowed = errors.New("db: token role is not an allowed user role")
	// ErrPoolBusy: no pooled connection became free within
	// Config.AcquireTimeout; every connection is serving another request.
	// It says nothing about the database's health (see [Ready]).
	ErrPoolBusy = errors.New("db: no pooled connection became free in time")
	// ErrCallerBusy: the pool was full and the caller already held its
	// share of it (Config.MaxConnsPerCaller) for the whole acquire timeout:
	// its own requests are keeping those connections busy while others
	// wait.
	ErrCallerBusy = errors.New("db: the caller's share of pooled connections stayed busy")
	// ErrPoolClosed: the pool was closed (the server is shutting down).
	ErrPoolClosed = errors.New("db: the connection pool is closed")
)

// Error is a database outcome: an error of Postgres (Code set) or of the
// connection (Code empty). errors.Is matches it with the outcome
// ([ErrUniqueViolation], [ErrTimeout], …; nothing for a Postgres error
// outside those), and it unwraps to the error as it was returned inside
// the unit of work. Its message is that error's.
type Error struct {
	// Code is the SQLSTATE, empty for a connection failure.
	Code string
	// Constraint names the violated constraint, when Postgres names one.
	// A name is schema, never a value.
	Constraint string
	// Column names the column of a not-null or invalid-value error, when
	// Postgres names one.
	Column string
	// Err is the error as the unit of work returned it.
	Err error

	outcome error // one of the sentinels; nil for an unclassified code
}

// Error returns the message of the underlying error.
func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the outcome of e.
func (e *Error) Is(target error) bool { return target != nil && target == e.outcome }

// Classify returns err as an [*Error] when it is an error of Postgres or
// of the connection, err itself otherwise (nil, a cancelled or expired
// context that no Postgres error explains, an error already classified,
// any other error). [DB.Run] classifies what it returns; call Classify for
// an error handled inside the unit of work.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var de *Error
	if errors.As(err, &de) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return &Error{Code: pgErr.Code, Constraint: pgErr.ConstraintName, Column: pgErr.ColumnName,
			Err: err, outcome: outcomeOf(pgErr)}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if isConnError(err) {
		return &Error{Err: err, outcome: ErrUnavailable}
	}
	return err
}

// outcomeOf is the outcome of a Postgres error, nil for none of them.
func outcomeOf(e *pgconn.PgError) error {
	c := e.Code
	switch {
	case c == "0A000" && strings.Contains(e.Message, "cached plan must not change result type"):
		return ErrSchemaChanged
	case c == "23505":
		return ErrUniqueViolation
	case c == "23503":
		return ErrForeignKeyViolation
	case c == "42501":
		return ErrPermissionDenied
	case c == "23502":
		return ErrNotNullViolation
	case c == "23514":
		return ErrCheckViolation
	case c == "22P02":
		return ErrInvalidFormat
	case len(c) == 5 && c[:2] == "22":
		return ErrInvalidValue
	case c == "40001" || c == "40P01":
		return ErrConcurrentUpdate
	case c == "57014" || c == "25P03":
		return ErrTimeout
	case len(c) == 5 && (c[:2] == "53" || c[:2] == "08" || c[:3] == "57P"):
		return ErrUnavailable
	}
	return nil
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
