package authz_test

import (
	"context"
	"io/fs"
	"strconv"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/sql/migrations"
)

// TestApprovalMigrationDownUp: the approvals migration applies, reverts
// cleanly to the migration before it (nothing of it left behind) and
// applies again.
func TestApprovalMigrationDownUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	p, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	state := func() (table, fn bool, setting int64) {
		t.Helper()
		err := pool.QueryRow(ctx, `select
		  to_regclass('tablegate.approvals') is not null,
		  to_regprocedure('tablegate.approval_decide(uuid, boolean)') is not null,
		  (select count(*) from tablegate.settings where key = 'approver_role')`).Scan(&table, &fn, &setting)
		if err == nil && table {
			// The setting has no row until set_approver_role; the default
			// applies.
			var role string
			if err := pool.QueryRow(ctx, "select tablegate.approver_role()").Scan(&role); err != nil || role != "approver" {
				t.Fatalf("approver_role() = %q, %v", role, err)
			}
			if _, err := pool.Exec(ctx, "select tablegate.set_approver_role('reviewer')"); err != nil {
				t.Fatal(err)
			}
			if err := pool.QueryRow(ctx, "select tablegate.approver_role()").Scan(&role); err != nil || role != "reviewer" {
				t.Fatalf("after set_approver_role: %q, %v", role, err)
			}
			setting = -1 // marks the round trip through the setting
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	objects := func() int64 {
		t.Helper()
		var n int64
		err := pool.QueryRow(ctx, `select count(*) from pg_proc
		  where pronamespace = 'tablegate'::regnamespace
		    and proname in ('approval_request', 'approval_use', 'approval_decide', 'approval_state',
		                    'is_approver', 'approver_role', 'set_approver_role')`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	if tb, fn, st := state(); !tb || !fn || st != -1 || objects() != 7 {
		t.Fatalf("after up: table %v, decide %v, setting %d, functions %d", tb, fn, st, objects())
	}
	approvals, err := fs.Glob(migrations.FS, "*_approvals.sql")
	if err != nil || len(approvals) != 1 {
		t.Fatalf("approvals migration: %v %v", approvals, err)
	}
	version, err := strconv.ParseInt(approvals[0][:5], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, version-1); err != nil {
		t.Fatalf("down to %d: %v", version-1, err)
	}
	if tb, fn, st := state(); tb || fn || st != 0 || objects() != 0 {
		t.Fatalf("after down: table %v, decide %v, setting %d, functions %d", tb, fn, st, objects())
	}
	// The earlier migrations are intact.
	var ok bool
	if err := pool.QueryRow(ctx, "select to_regclass('tablegate.memberships') is not null").Scan(&ok); err != nil || !ok {
		t.Fatalf("memberships gone after reverting %s: %v", approvals[0], err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if tb, fn, st := state(); !tb || !fn || st != -1 || objects() != 7 {
		t.Fatalf("after up again: table %v, decide %v, setting %d, functions %d", tb, fn, st, objects())
	}
	// The whole way down and up again.
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("down to 0: %v", err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up from 0: %v", err)
	}
}
