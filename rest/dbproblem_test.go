package rest_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Every way a connection can fail — before, during or after a statement —
// is 503 with Retry-After; an error that is not the connection's stays
// 500.
func TestProblemConnectionFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		err  error
		want int
	}{
		{"lost mid-statement (EOF)", fmt.Errorf("insert: %w", io.ErrUnexpectedEOF), 503},
		{"reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, 503},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, 503},
		{"closed by pgx", fmt.Errorf("commit: %w", pgconn.ErrConnClosed), 503},
		{"terminated (57P01)", &pgconn.PgError{Code: "57P01", Severity: "FATAL"}, 503},
		{"crash of another backend (57P02)", &pgconn.PgError{Code: "57P02", Severity: "FATAL"}, 503},
		{"starting up (57P03)", &pgconn.PgError{Code: "57P03", Severity: "FATAL"}, 503},
		{"something else", errors.New("boom"), 500},
	} {
		p, ok := problem.As(rest.DBProblem(c.err))
		if !ok || p.Status != c.want {
			t.Errorf("%s: %+v, want %d", c.name, p, c.want)
			continue
		}
		if c.want == 503 && p.Header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", c.name)
		}
	}
}
