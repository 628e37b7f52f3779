package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestDemoSchemaWritesNeedMembership: the demo's update and delete
// policies, like its insert, need a full member of the row's tenant. They
// checked only the tenant claim, so a user removed from the tenant could
// still rewrite or delete their old rows there (an update without WHERE,
// which never reads) until their token expired. Anonymous sign-ins still
// write nothing.
func TestDemoSchemaWritesNeedMembership(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t, pgtest.URL(t))
	ctx := context.Background()
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	// as runs stmt as authenticated with the demo user's claims and
	// reports the rows it changed.
	as := func(anonymous bool, stmt string) int64 {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		claims := fmt.Sprintf(`{"sub":%q,"role":"authenticated","tenant_id":%q,"is_anonymous":%v}`, demoUserID, demoTenantA, anonymous)
		if _, err := tx.Exec(ctx, `select set_config('role', 'authenticated', true), set_config('request.jwt.claims', $1, true)`, claims); err != nil {
			t.Fatal(err)
		}
		tag, err := tx.Exec(ctx, stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		return tag.RowsAffected()
	}
	var own int64
	if err := pool.QueryRow(ctx, `select count(*) from public.todos where owner_id = $1`, demoUserID).Scan(&own); err != nil || own == 0 {
		t.Fatalf("the demo user owns %d rows (%v)", own, err)
	}
	if n := as(false, `update public.todos set done = done`); n != own {
		t.Fatalf("a member updated %d of their %d rows", n, own)
	}
	if n := as(true, `update public.todos set done = done`); n != 0 {
		t.Fatalf("an anonymous sign-in updated %d rows", n)
	}
	if _, err := pool.Exec(ctx, `delete from tablegate.memberships where user_id = $1`, demoUserID); err != nil {
		t.Fatal(err)
	}
	if n := as(false, `update public.todos set title = 'defaced after removal'`); n != 0 {
		t.Errorf("a removed member updated %d rows", n)
	}
	if n := as(false, `delete from public.todos`); n != 0 {
		t.Errorf("a removed member deleted %d rows", n)
	}
}
