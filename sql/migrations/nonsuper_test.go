package migrations_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// ownerRole is a migrating role that is neither superuser nor bypassrls, as
// on managed Postgres. Roles are cluster-global: it is created only where
// missing, under an advisory lock.
const ownerRole = "tg_test_nonsuper_owner"

// TestNonSuperuserOwner migrates a fresh database as a role that is not a
// superuser and does not bypass row-level security, reverts and migrates
// again, and uses every opt-in function as that role.
func TestNonSuperuserOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := pgtest.EmptyURL(t)
	admin, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(mustParse(t, u).Path, "/")
	for _, s := range []string{
		`select pg_advisory_lock(hashtext('tablegate.test.roles'))`,
		`do $$ begin
		   if not exists (select 1 from pg_roles where rolname = '` + ownerRole + `') then
		     create role ` + ownerRole + ` login createrole nosuperuser nobypassrls password 'tg-test-owner';
		   end if;
		 end $$`,
		`select pg_advisory_unlock(hashtext('tablegate.test.roles'))`,
		`alter database "` + dbName + `" owner to ` + ownerRole,
	} {
		if _, err := admin.Exec(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	admin.Close(ctx)

	ou := mustParse(t, u)
	ou.User = url.UserPassword(ownerRole, "tg-test-owner")
	pool := pgtest.Pool(t, ou.String())
	var super, bypass bool
	if err := pool.QueryRow(ctx, `select rolsuper, rolbypassrls from pg_roles where rolname = current_user`).Scan(&super, &bypass); err != nil || super || bypass {
		t.Fatalf("owner role is superuser=%v bypassrls=%v (%v)", super, bypass, err)
	}
	p, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for round := 1; round <= 2; round++ {
		if _, err := p.Up(ctx); err != nil {
			t.Fatalf("round %d up as a non-superuser owner: %v", round, err)
		}
		for _, s := range []string{
			`select tablegate.set_tenant_claim('app_metadata.org_id')`,
			`select tablegate.enable_storage_policies('files')`,
			`create table public.t (id int primary key, tenant_id uuid)`,
			`select tablegate.enable_tenant_policies('public.t')`,
			`select tablegate.exclude_anonymous('public.t')`,
			`select tablegate.enable_realtime('public.t')`,
			`select tablegate.enable_events('public.t')`,
			`insert into public.t values (1, gen_random_uuid())`,
			// The outbox is written and numbered by SECURITY DEFINER
			// functions owned by this role (and read as service_role).
			`select tablegate.sequence_events(100)`,
		} {
			if _, err := pool.Exec(ctx, s); err != nil {
				t.Fatalf("round %d, as the owner, %s: %v", round, s, err)
			}
		}
		var claim string
		if err := pool.QueryRow(ctx, `select tablegate.tenant_claim()`).Scan(&claim); err != nil || claim != "app_metadata.org_id" {
			t.Fatalf("claim %q, %v", claim, err)
		}
		// The member tenant views read tablegate.tenant_members with this
		// role's rights, kept by triggers from memberships.
		if _, err := pool.Exec(ctx, `begin; set local role service_role;
			insert into tablegate.tenants (id, name) values ('`+tenantA+`', 'A');
			insert into tablegate.memberships (user_id, scope, scope_id) values ('`+userA1+`', 'tenant', '`+tenantA+`');
			commit`); err != nil {
			t.Fatal(err)
		}
		// ... with no policy work: not the policies of memberships, whose
		// init-plans (the owner's pg_class lookup, the caller's auth.uid())
		// would cost more than the probe.
		var plan strings.Builder
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `select set_config('request.jwt.claims', '{"sub":"`+userA1+`","tenant_id":"`+tenantA+`"}', true);
				set local role authenticated`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `explain (costs off) select (select id from tablegate.member_tenant)`)
			if err != nil {
				return err
			}
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				plan.WriteString(line + "\n")
			}
			return rows.Err()
		})
		if err != nil || strings.Contains(plan.String(), "pg_class") || strings.Contains(plan.String(), "CURRENT_USER") || !strings.Contains(plan.String(), "tenant_members") {
			t.Errorf("round %d: the member_tenant view does not read tenant_members without policies (%v):\n%s", round, err, plan.String())
		}
		inA := withClaims(authctx.Claims{"sub": userA1, "app_metadata": map[string]any{"org_id": tenantA}})
		// A view of this role's over memberships still shows a caller its
		// own memberships only.
		if _, err := pool.Exec(ctx, `begin; set local role service_role;
			insert into tablegate.memberships (user_id, scope, scope_id) values ('`+userB1+`', 'tenant', '`+tenantA+`');
			commit;
			create view public.all_memberships as select user_id from tablegate.memberships;
			grant select on public.all_memberships to authenticated`); err != nil {
			t.Fatal(err)
		}
		if got := answer(ctx, db.New(pool, nil), inA, `select count(*) from public.all_memberships`); got != "1" {
			t.Errorf("round %d: a view of the migrating role shows a member %s memberships, want 1 (its own)", round, got)
		}
		if _, err := pool.Exec(ctx, `drop view public.all_memberships`); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"member_tenant", "full_member_tenant"} {
			if got := answer(ctx, db.New(pool, nil), inA, `select (select id from tablegate.`+v+`)::text`); got != tenantA {
				t.Errorf("round %d: %s for a member, as a non-superuser owner's view: %q, want %s", round, v, got, tenantA)
			}
		}
		var events int
		if err := pool.QueryRow(ctx, `select count(*) from tablegate.events where name = 't.created' and seq is not null`).Scan(&events); err != nil || events != 1 {
			t.Fatalf("round %d: %d numbered t.created events, %v", round, events, err)
		}
		if _, err := p.DownTo(ctx, 0); err != nil {
			t.Fatalf("round %d down: %v", round, err)
		}
		if _, err := pool.Exec(ctx, `drop table public.t`); err != nil {
			t.Fatal(err)
		}
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
