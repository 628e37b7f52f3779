package db_test

import (
	"context"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/dbsqlc"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

// TestSQLCQueriesRunBoundToTheCaller runs the generated queries on the
// caller-bound Querier: RLS decides what each caller sees.
func TestSQLCQueriesRunBoundToTheCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New(pgtest.DB(t), nil)
	q := dbsqlc.New()

	var tenant dbsqlc.TablegateTenant
	err := d.Run(ctx, serviceCaller, db.RunOpts{Tx: true}, func(tx db.Querier) error {
		var err error
		if tenant, err = q.TenantCreate(ctx, tx, "Acme"); err != nil {
			return err
		}
		_, err = q.MembershipUpsert(ctx, tx, dbsqlc.MembershipUpsertParams{
			UserID: alice, Scope: "tenant", ScopeID: tenant.ID, Roles: []string{"owner"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// Alice, a member through the table, sees the tenant and her membership.
	a := user(map[string]any{"sub": alice})
	if err := d.Run(ctx, a, db.RunOpts{}, func(tx db.Querier) error {
		ts, err := q.TenantList(ctx, tx)
		if err != nil || len(ts) != 1 || ts[0].Name != "Acme" {
			t.Errorf("alice tenants %v %v", ts, err)
		}
		ms, err := q.MembershipList(ctx, tx, alice)
		if err != nil || len(ms) != 1 || ms[0].Roles[0] != "owner" {
			t.Errorf("alice memberships %v %v", ms, err)
		}
		held, err := q.MembershipHasRoles(ctx, tx, dbsqlc.MembershipHasRolesParams{
			UserID: alice, Scope: "tenant", ScopeIds: []string{tenant.ID, tenantB}, Role: ptr("owner")})
		if err != nil || len(held) != 1 || held[0] != tenant.ID {
			t.Errorf("alice held %v %v", held, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// Bob sees neither; his attempt to read Alice's memberships returns nothing.
	b := user(map[string]any{"sub": bob})
	if err := d.Run(ctx, b, db.RunOpts{}, func(tx db.Querier) error {
		ts, err := q.TenantList(ctx, tx)
		if err != nil || len(ts) != 0 {
			t.Errorf("bob tenants %v %v", ts, err)
		}
		ms, err := q.MembershipList(ctx, tx, alice)
		if err != nil || len(ms) != 0 {
			t.Errorf("bob read alice's memberships: %v %v", ms, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// Bob cannot grant himself a membership: 42501 → 403.
	err = d.Run(ctx, b, db.RunOpts{Tx: true}, func(tx db.Querier) error {
		_, err := q.MembershipUpsert(ctx, tx, dbsqlc.MembershipUpsertParams{
			UserID: bob, Scope: "tenant", ScopeID: tenant.ID, Roles: []string{"owner"}})
		return err
	})
	if st, _ := asProblem(rest.DBProblem(err)); st != 403 {
		t.Fatalf("bob self-granted: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }
