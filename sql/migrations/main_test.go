package migrations_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Fixed ids used across the policy tests.
const (
	tenantA = "aaaaaaaa-0000-4000-8000-000000000001"
	tenantB = "bbbbbbbb-0000-4000-8000-000000000002"
	userA1  = "a1a1a1a1-0000-4000-8000-0000000000a1"
	userA2  = "a2a2a2a2-0000-4000-8000-0000000000a2"
	userB1  = "b1b1b1b1-0000-4000-8000-0000000000b1"
	guestA  = "9a9a9a9a-0000-4000-8000-00000000009a"
)

// caller is one named caller of a policy matrix.
type caller struct {
	name string
	ctx  authctx.Auth
}

// user returns a full user (anonymous false) whose claims carry tenant at
// the top-level claim tenant_id (empty: no tenant claim).
func user(sub, tenant string) authctx.Auth {
	c := authctx.Claims{"sub": sub, "role": "authenticated", "is_anonymous": false}
	if tenant != "" {
		c["tenant_id"] = tenant
	}
	return authctx.NewUser(c, "tok", nil)
}

// guest returns an anonymous sign-in of tenant.
func guest(sub, tenant string) authctx.Auth {
	return authctx.NewUser(authctx.Claims{
		"sub": sub, "role": "authenticated", "is_anonymous": true, "tenant_id": tenant,
	}, "tok", nil)
}

// withClaims returns a user with exactly these claims (role authenticated added).
func withClaims(c authctx.Claims) authctx.Auth {
	c["role"] = "authenticated"
	return authctx.NewUser(c, "tok", nil)
}

var (
	noSession = authctx.Anon(authctx.ReasonNone)
	service   = authctx.Service("svc")
)

// exec runs one statement as the caller in its own transaction.
func exec(t *testing.T, d *db.DB, c authctx.Auth, sql string, args ...any) error {
	t.Helper()
	return d.Run(context.Background(), c.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(context.Background(), sql, args...)
		return err
	})
}

// scalar reads one value as the caller.
func scalar[T any](t *testing.T, d *db.DB, c authctx.Auth, sql string, args ...any) T {
	t.Helper()
	var v T
	err := d.Run(context.Background(), c.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		return q.QueryRow(context.Background(), sql, args...).Scan(&v)
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// sqlState returns the SQLSTATE of err, "" for nil, "other" for a non-pg error.
func sqlState(err error) string {
	if err == nil {
		return ""
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return "other: " + err.Error()
}

// admin runs statements as the admin (superuser) connection: fixtures and
// opt-in calls only, never policy checks.
func admin(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("admin %q: %v", sql, err)
	}
}

// fixture loads a testdata SQL file as the admin.
func fixture(t testing.TB, pool *pgxpool.Pool, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	// Simple protocol: the file holds several statements.
	if _, err := conn.Conn().PgConn().Exec(context.Background(), string(b)).ReadAll(); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
}

// adminScalar reads one value as the admin.
func adminScalar[T any](t *testing.T, pool *pgxpool.Pool, sql string, args ...any) T {
	t.Helper()
	var v T
	if err := pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// userAt returns a user whose tenant sits at the dotted claim path.
func userAt(path, sub, tenant string, anonymous bool) authctx.Auth {
	c := authctx.Claims{"sub": sub, "role": "authenticated", "is_anonymous": anonymous}
	if tenant != "" {
		m := map[string]any(c)
		parts := strings.Split(path, ".")
		for _, p := range parts[:len(parts)-1] {
			next := map[string]any{}
			m[p] = next
			m = next
		}
		m[parts[len(parts)-1]] = tenant
	}
	return authctx.NewUser(c, "tok", nil)
}

// claimVariants are the tenant claim settings every module is tested under:
// the default (top-level tenant_id, and its app_metadata fallback) and a
// renamed claim.
var claimVariants = []struct {
	name    string
	setting string // value for tablegate.set_tenant_claim
	path    string // where the callers carry their tenant
}{
	{"default tenant_id", "tenant_id", "tenant_id"},
	{"default via app_metadata.tenant_id", "tenant_id", "app_metadata.tenant_id"},
	{"renamed app_metadata.org_id", "app_metadata.org_id", "app_metadata.org_id"},
}
