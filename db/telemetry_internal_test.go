package db

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// A span is shown a failed round trip's SQLSTATE, never the error's text:
// Postgres quotes refused values in its messages, and connect errors name
// the database, user and host.
func TestSpanErrorWithholdsText(t *testing.T) {
	t.Parallel()
	secret := "SECRET-value-42"
	pgErr := &pgconn.PgError{Severity: "ERROR", Code: "22P02", Message: `invalid input syntax for type uuid: "` + secret + `"`,
		Detail: "Key (id)=(" + secret + ")", Where: secret}
	for name, tc := range map[string]struct {
		err      error
		want     string // in the shown error
		wantCode string
	}{
		"postgres error":           {fmt.Errorf("db: commit: %w", pgErr), "SQLSTATE 22P02", "22P02"},
		"connect error (postgres)": {fmt.Errorf("failed to connect to `user=%s database=x`: %w", secret, pgErr), "SQLSTATE 22P02", "22P02"},
		"connect error (network)":  {errors.New("failed to connect to `user=" + secret + "`: 10.0.0.1:5432: refused"), "withheld", ""},
		"cancelled":                {fmt.Errorf("read %s: %w", secret, context.Canceled), "context canceled", ""},
		"deadline":                 {fmt.Errorf("read %s: %w", secret, context.DeadlineExceeded), "deadline exceeded", ""},
	} {
		got := spanError(tc.err)
		if got == nil || strings.Contains(got.Error(), secret) || !strings.Contains(got.Error(), tc.want) {
			t.Errorf("%s: shown %v, want %q and no secret", name, got, tc.want)
		}
		var pe *pgconn.PgError
		if tc.wantCode != "" && (!errors.As(got, &pe) || pe.Code != tc.wantCode) {
			t.Errorf("%s: shown %#v, want SQLSTATE %s kept", name, got, tc.wantCode)
		}
	}
	if spanError(nil) != nil || !errors.Is(spanError(pgx.ErrNoRows), pgx.ErrNoRows) {
		t.Error("nil and no rows must pass unchanged")
	}
}
