package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestDoctorTenantMembers: the doctor passes while tablegate.tenant_members
// matches the memberships, fails (naming the repair) after a write that
// fired no trigger, and passes again after tablegate.resync_tenant_members().
func TestDoctorTenantMembers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	keys := filepath.Join(t.TempDir(), "missing.json")
	doctor := func() string {
		return runCLI(t, nil, "doctor", "--database-url", url, "--signing-keys", keys, "--supabase-config", keys).stdout
	}
	if out := doctor(); lineOf(out, "✓ tenant memberships") == "" {
		t.Fatalf("no passing tenant memberships line in\n%s", out)
	}
	if _, err := pool.Exec(ctx, `begin; set local session_replication_role = replica;
	  delete from tablegate.memberships where user_id = '11111111-1111-4111-8111-111111111111'; commit`); err != nil {
		t.Fatal(err)
	}
	out := doctor()
	if l := lineOf(out, "✗ tenant memberships"); !strings.Contains(l, "holds 1 removed one(s)") || !strings.Contains(out, "resync_tenant_members()") {
		t.Fatalf("after a replica-mode delete, no failing line naming the repair in\n%s", out)
	}
	if _, err := pool.Exec(ctx, `select tablegate.resync_tenant_members()`); err != nil {
		t.Fatal(err)
	}
	if out := doctor(); lineOf(out, "✓ tenant memberships") == "" {
		t.Errorf("after resync, no passing line in\n%s", out)
	}
}
