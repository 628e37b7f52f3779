package events

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestPoliciesOfInheritedRolesOnly: the stream applies the policies of
// the roles whose privileges the subscriber's role has, as Postgres does,
// not of every role it is a member of: a policy for a role granted to a
// NOINHERIT role hides nothing from that role's reads, so it must not admit
// rows to its streams either.
func TestPoliciesOfInheritedRolesOnly(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	ctx := context.Background()
	sfx := fmt.Sprintf("%d", time.Now().UnixNano())
	noinh, staff, inh := "tg_ev_noinh_"+sfx, "tg_ev_staff_"+sfx, "tg_ev_inh_"+sfx
	if _, err := pool.Exec(ctx, fmt.Sprintf(`create role %[1]s nologin noinherit; create role %[2]s nologin; create role %[3]s nologin inherit;
grant %[2]s to %[1]s; grant %[2]s to %[3]s;
create table pr (id int primary key, tenant int);
alter table pr enable row level security;
create policy own on pr for select to %[1]s, %[3]s using (tenant = 1);
create policy staff_all on pr for select to %[2]s using (tenant >= 0);`, noinh, staff, inh)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), fmt.Sprintf(`drop table if exists pr; drop role if exists %s; drop role if exists %s; drop role if exists %s`, noinh, inh, staff))
	})
	for role, want := range map[string]string{noinh: "((tenant = 1))", inh: "((tenant = 1)) or ((tenant >= 0))"} {
		var sel, rls, bypass bool
		var permissive, restrictive string
		if err := pool.QueryRow(ctx, policySQL, "public.pr", role).Scan(&sel, &rls, &bypass, &permissive, &restrictive); err != nil {
			t.Fatal(err)
		}
		if strings.ReplaceAll(permissive, "\n", " ") != want {
			t.Errorf("role %s: permissive policies %q, want %q", role, permissive, want)
		}
		// What Postgres itself lets the role read, for comparison.
		var pgSees string
		if err := pool.QueryRow(ctx, fmt.Sprintf(`select count(*)::text from pg_policies p
where p.tablename = 'pr' and exists (select 1 from unnest(p.roles) ro where pg_has_role('%s', ro, 'USAGE'))`, role)).Scan(&pgSees); err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(strings.Count(permissive, "(tenant")); got != pgSees {
			t.Errorf("role %s: %s policies applied, Postgres applies %s", role, got, pgSees)
		}
	}
}
