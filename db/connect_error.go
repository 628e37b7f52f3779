package db

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ConnectCause classifies why a database could not be reached or opened.
type ConnectCause string

// The causes [ExplainConnectError] tells apart.
const (
	// CauseUnreachable: no server answered at the address (refused,
	// unresolvable host, timeout).
	CauseUnreachable ConnectCause = "unreachable"
	// CauseNoDatabase: the server answered; the database does not exist
	// (SQLSTATE 3D000).
	CauseNoDatabase ConnectCause = "no database"
	// CauseNoRole: the server answered; the role does not exist (28000).
	CauseNoRole ConnectCause = "no role"
	// CauseAuth: the server refused the password or the client's address
	// (28P01, 28000).
	CauseAuth ConnectCause = "authentication"
	// CauseOther: anything else.
	CauseOther ConnectCause = "other"
)

// ConnectError is a failure to connect, with its cause and the fix in a
// sentence. [ExplainConnectError] returns it. Its message never holds the
// password; Unwrap returns the driver's error.
type ConnectError struct {
	Cause ConnectCause
	// Where names the server and database: "127.0.0.1:5432/app (user
	// postgres)", or "" when unknown.
	Where string
	// Problem says what is wrong; Fix what to do.
	Problem, Fix string
	Err          error
}

// Error returns the problem and its fix in one line.
func (e *ConnectError) Error() string {
	return e.Problem + ": " + e.Fix
}

// Unwrap returns the driver's error.
func (e *ConnectError) Unwrap() error { return e.Err }

// ExplainConnectError classifies err, returned by opening or pinging a
// pool on cfg (nil when unknown), into a [*ConnectError] that says what is
// wrong and how to fix it: the server does not answer, the database does
// not exist, the role does not exist, or the password is refused. A nil
// err stays nil; a cancelled context is returned unchanged.
func ExplainConnectError(err error, cfg *pgconn.Config) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	where, user, database := "the database server", "", ""
	if cfg != nil {
		user, database = cfg.User, cfg.Database
		host := cfg.Host
		if strings.HasPrefix(host, "/") {
			host = "socket " + host
		}
		where = fmt.Sprintf("%s:%d", host, cfg.Port)
	}
	e := &ConnectError{Cause: CauseOther, Where: where, Err: err}
	var pe *pgconn.PgError
	var ne net.Error
	var dnsErr *net.DNSError
	switch {
	case errors.As(err, &pe) && pe.Code == "3D000": // invalid_catalog_name
		e.Cause = CauseNoDatabase
		e.Problem = fmt.Sprintf("database %q does not exist on %s", database, where)
		e.Fix = fmt.Sprintf("create it (createdb %s, or: create database %s;) or fix the database name at the end of the URL", database, quoteIdent(database))
	case errors.As(err, &pe) && pe.Code == "28000" && strings.Contains(pe.Message, "role") && strings.Contains(pe.Message, "does not exist"):
		e.Cause = CauseNoRole
		e.Problem = fmt.Sprintf("role %q does not exist on %s", user, where)
		e.Fix = fmt.Sprintf("fix the user in the URL (postgres://USER:PASSWORD@host/db; on Supabase it is postgres), or create the role: create role %s login password '…';", quoteIdent(user))
	case errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000"):
		e.Cause = CauseAuth
		e.Problem = fmt.Sprintf("%s refused user %q: %s", where, user, pe.Message)
		e.Fix = "fix the password in the URL (or the server's pg_hba.conf for this client)"
	case errors.As(err, &pe):
		e.Problem = fmt.Sprintf("%s refused the connection: %s (SQLSTATE %s)", where, pe.Message, pe.Code)
		e.Fix = "check the URL and the server's log"
	case errors.As(err, &dnsErr):
		e.Cause = CauseUnreachable
		e.Problem = fmt.Sprintf("cannot resolve the host of %s", where)
		e.Fix = "fix the host name in the URL"
	case isRefused(err) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded):
		e.Cause = CauseUnreachable
		e.Problem = fmt.Sprintf("no Postgres server answers at %s", where)
		e.Fix = "start it (supabase start, or pg_ctl start / your service manager) or fix the host and port in the URL"
	default:
		e.Problem = fmt.Sprintf("cannot connect to %s: %s", where, oneLine(err.Error()))
		e.Fix = "check the URL and that Postgres is running"
	}
	return e
}

// isRefused reports a dial error whose text says the connection was
// refused (pgconn wraps dial errors in its own types).
func isRefused(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection refused") || strings.Contains(s, "dial error") || strings.Contains(s, "no such file or directory")
}

// oneLine folds the multi-line errors of a connection tried at several
// addresses into one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func quoteIdent(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
	}
	return s
}
