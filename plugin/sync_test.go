package plugin_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/plugin"
)

// fixture loads a Supabase-shape fixture of the migrations' tests.
func fixture(t *testing.T, pool *pgxpool.Pool, name string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "sql", "migrations", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Conn().PgConn().Exec(t.Context(), string(b)).ReadAll(); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
}

func adminExec(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := pool.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestOneTenantClaimForAll renames the tenant claim once, in the Go
// configuration mirrored into the database, and sees the tenant plugin,
// current_tenant_id(), the storage policies and the realtime policies all
// follow it. Policies are checked as the caller (role authenticated).
func TestOneTenantClaimForAll(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	fixture(t, pool, "supabase_storage.sql")
	fixture(t, pool, "supabase_realtime.sql")
	adminExec(t, pool, `select tablegate.enable_realtime_policies()`)
	adminExec(t, pool, `select tablegate.enable_storage_policies('files')`)
	for _, s := range []string{tenantA, tenantB} {
		adminExec(t, pool, `insert into storage.objects (bucket_id, name) values ('files', $1 || '/doc.txt')`, s)
		adminExec(t, pool, `insert into realtime.messages (topic, extension, payload) values ('tenant:' || $1 || ':todos', 'broadcast', '{}')`, s)
	}
	d := db.New(pool, nil)

	// One caller carrying two candidate tenants: A under app_metadata.org_id,
	// B under the default tenant_id.
	caller := authctx.NewUser(authctx.Claims{
		"sub": userA1, "role": "authenticated", "is_anonymous": false,
		"tenant_id": tenantB, "app_metadata": map[string]any{"org_id": tenantA},
	}, "tok", nil)

	// seen returns the tenant each of the four readers resolves.
	seen := func(cfg plugin.TenantConfig) [4]string {
		t.Helper()
		tp, err := plugin.NewTenant(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out [4]string
		body, err := tp.BeforeCreate(caller, map[string]any{"title": "x"})
		if err != nil {
			t.Fatal(err)
		}
		out[0], _ = body["tenant_id"].(string)
		err = d.Run(t.Context(), caller.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
			if err := q.QueryRow(t.Context(), `select coalesce(tablegate.current_tenant_id()::text, '')`).Scan(&out[1]); err != nil {
				return err
			}
			if err := q.QueryRow(t.Context(), `select coalesce(string_agg(split_part(name, '/', 1), ','), '') from storage.objects`).Scan(&out[2]); err != nil {
				return err
			}
			return q.QueryRow(t.Context(), `select coalesce(string_agg(split_part(topic, ':', 2), ','), '') from realtime.messages`).Scan(&out[3])
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	def := plugin.TenantConfig{}
	if err := plugin.CheckTenantClaim(t.Context(), pool, def.Claim); err != nil {
		t.Fatalf("fresh database disagrees with the default: %v", err)
	}
	if got, want := seen(def), [4]string{tenantB, tenantB, tenantB, tenantB}; got != want {
		t.Fatalf("default claim: plugin, current_tenant_id, storage, realtime = %v, want %v", got, want)
	}

	renamed := plugin.TenantConfig{Claim: "app_metadata.org_id"}
	err := plugin.CheckTenantClaim(t.Context(), pool, renamed.Claim)
	var mm *plugin.TenantClaimMismatchError
	if !errors.As(err, &mm) || mm.Config != "app_metadata.org_id" || mm.Database != "tenant_id" {
		t.Fatalf("check before sync: %v", err)
	}
	if err := plugin.SyncTenantClaim(t.Context(), pool, renamed.Claim); err != nil {
		t.Fatal(err)
	}
	if err := plugin.CheckTenantClaim(t.Context(), pool, renamed.Claim); err != nil {
		t.Fatalf("check after sync: %v", err)
	}
	if got, want := seen(renamed), [4]string{tenantA, tenantA, tenantA, tenantA}; got != want {
		t.Fatalf("renamed claim: plugin, current_tenant_id, storage, realtime = %v, want %v", got, want)
	}
	// And back: the default claim again, for all four.
	if err := plugin.SyncTenantClaim(t.Context(), pool, ""); err != nil {
		t.Fatal(err)
	}
	if got, want := seen(def), [4]string{tenantB, tenantB, tenantB, tenantB}; got != want {
		t.Fatalf("back to default: %v, want %v", got, want)
	}
}

func TestSyncTenantClaimRefuses(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	if err := plugin.SyncTenantClaim(t.Context(), pool, "user_metadata.org"); !errors.Is(err, plugin.ErrClaimPath) {
		t.Fatalf("user_metadata: %v", err)
	}
	// The API roles may not rename it, even through the helper.
	d := db.New(pool, nil)
	caller := authctx.NewUser(authctx.Claims{"sub": userA1, "role": "authenticated"}, "tok", nil)
	err := d.Run(t.Context(), caller.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		return plugin.SyncTenantClaim(t.Context(), q, "org_id")
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "42501" {
		t.Fatalf("authenticated renaming the claim: %v", err)
	}
	// CheckTenantClaim may run as any role.
	err = d.Run(t.Context(), caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
		return plugin.CheckTenantClaim(context.Background(), q, "")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestClaimPathRulesAgree: Go's ValidateClaimPath and the database's
// tablegate.set_tenant_claim accept exactly the same claim paths.
func TestClaimPathRulesAgree(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	seg63 := strings.Repeat("s", 63)
	for _, path := range []string{
		"tenant_id", "app_metadata.org_id", "org", "_x", "a.b.c.d.e.f.g.h", "a.b.c.d.e.f.g.h.i",
		seg63, seg63 + "x", "app_metadata." + seg63, "", ".", "a.", ".a", "a..b", "1a", "a-b", "a b", "é",
		"user_metadata", "user_metadata.tenant_id", "app_metadata.user_metadata", "exp", "iat", "nbf",
		"auth_time", "aud", "amr", "is_anonymous", "app_metadata", "app_metadata.is_anonymous",
		"roles", "app_metadata.roles", "memberships", "x.memberships", "rolesx", "app_metadata.roles_id", "sub",
		"tenant_id\n", "a;drop", "A.B",
	} {
		goErr := plugin.ValidateClaimPath(path)
		_, dbErr := pool.Exec(t.Context(), `select tablegate.set_tenant_claim($1)`, path)
		if (goErr == nil) != (dbErr == nil) {
			t.Errorf("%q: Go %v, database %v", path, goErr, dbErr)
		}
	}
}

// TestTenantReadsAgree: for many claim shapes and claim settings, the
// plugin's active tenant is exactly what tablegate.current_tenant_id()
// returns for the same caller.
func TestTenantReadsAgree(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, nil)
	const upper = "AAAAAAAA-0000-4000-8000-000000000001"
	shapes := []authctx.Claims{
		{},
		{"tenant_id": tenantA},
		{"tenant_id": upper},
		{"tenant_id": "acme"},
		{"tenant_id": ""},
		{"tenant_id": 12},
		{"tenant_id": true},
		{"tenant_id": nil, "app_metadata": map[string]any{"tenant_id": tenantB}},
		{"tenant_id": map[string]any{"id": tenantA}},
		{"tenant_id": []any{tenantA}},
		{"app_metadata": map[string]any{"tenant_id": tenantB}},
		{"app_metadata": map[string]any{"tenant_id": 5}},
		{"app_metadata": "x"},
		{"tenant_id": tenantA, "app_metadata": map[string]any{"tenant_id": tenantB, "org_id": tenantB}},
		{"app_metadata": map[string]any{"org_id": upper}},
		{"app_metadata": map[string]any{"org_id": nil}, "org_id": tenantA},
		{"org_id": tenantA},
		{"user_metadata": map[string]any{"tenant_id": tenantA, "org_id": tenantA}},
		{"a": map[string]any{"b": map[string]any{"c": tenantB}}},
		{"tenant_id": " " + tenantA},
		{"tenant_id": tenantA + "\n"},
	}
	for _, claim := range []string{"tenant_id", "app_metadata.org_id", "org_id", "a.b.c"} {
		if err := plugin.SyncTenantClaim(t.Context(), pool, claim); err != nil {
			t.Fatal(err)
		}
		tp, err := plugin.NewTenant(&plugin.TenantConfig{Claim: claim})
		if err != nil {
			t.Fatal(err)
		}
		for i, shape := range shapes {
			c := authctx.Claims{"sub": userA1, "role": "authenticated"}
			for k, v := range shape {
				c[k] = v
			}
			caller := authctx.NewUser(c, "tok", nil)
			goTenant, _ := tp.ActiveTenant(caller)
			var dbTenant string
			err := d.Run(t.Context(), caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
				return q.QueryRow(t.Context(), `select coalesce(tablegate.current_tenant_id()::text, '')`).Scan(&dbTenant)
			})
			if err != nil {
				t.Fatal(err)
			}
			if goTenant != dbTenant {
				t.Errorf("claim %s, shape %d %v: Go %q, database %q", claim, i, shape, goTenant, dbTenant)
			}
		}
	}
}
