package migrations_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestDefinerSearchPathPinned: every SECURITY DEFINER function tablegate
// installs, and every other function of its schema that sets a search
// path, runs with search_path = pg_catalog, pg_temp. An empty path is not
// enough: Postgres then searches the session's temporary schema first for
// types and tables, so a caller could shadow a type the body names. A
// function that is not a definer still runs with the owner's rights when a
// definer calls it, and its own path then replaces the definer's.
func TestDefinerSearchPathPinned(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	rows, err := pool.Query(t.Context(), `
		select p.oid::regprocedure::text, p.prosecdef, coalesce(array_to_string(p.proconfig, ' '), '')
		from pg_proc p join pg_namespace n on n.oid = p.pronamespace
		where n.nspname not in ('pg_catalog', 'information_schema')
		  and (p.prosecdef or (n.nspname = 'tablegate' and exists (
		    select from unnest(p.proconfig) c where c like 'search\_path=%')))
		order by 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	definers, others := 0, 0
	for rows.Next() {
		var fn, config string
		var definer bool
		if err := rows.Scan(&fn, &definer, &config); err != nil {
			t.Fatal(err)
		}
		if definer {
			definers++
		} else {
			others++
		}
		if config != `search_path=pg_catalog, pg_temp` {
			t.Errorf("%s runs with %q, want search_path=pg_catalog, pg_temp", fn, config)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if definers < 10 || others < 10 {
		t.Fatalf("only %d SECURITY DEFINER functions and %d others with a path found", definers, others)
	}
}

// TestDefinerCalleesIgnoreCallerTempTypes: a signed-in caller who can run
// SQL, and is no approver, shadows uuid and text with temporary domains
// whose checks report the role they run as, then calls approval_decide, a
// definer whose callee is_approver_of declares variables of both types.
// The caller's check must never run (as the owner); the call is refused as
// for any non-approver.
func TestDefinerCalleesIgnoreCallerTempTypes(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	claims := `{"sub": "` + userA1 + `", "role": "authenticated", "tenant_id": "` + tenantA + `", "is_anonymous": false}`
	cfg := pool.Config().ConnConfig.Copy()
	var ranAs []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if strings.HasPrefix(n.Message, "ran as ") {
			ranAs = append(ranAs, n.Message)
		}
	}
	conn, err := pgx.ConnectConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	execWithClaims(t, conn, claims,
		`set role authenticated`,
		`select pg_catalog.set_config('request.jwt.claims', $1, false)`,
		`create function pg_temp.report_role(v pg_catalog.text) returns boolean language plpgsql as
		   $$ begin raise notice 'ran as %', current_user; return true; end $$`,
		`create domain pg_temp.uuid as pg_catalog.uuid check (pg_temp.report_role(value::pg_catalog.text))`,
		`create domain pg_temp.text as pg_catalog.text check (pg_temp.report_role(value::pg_catalog.text))`)
	_, err = conn.Exec(t.Context(), `select * from tablegate.approval_decide(null, true)`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Hint != "not_approver" {
		t.Errorf("approval_decide by a non-approver: %v, want the not_approver refusal", err)
	}
	if len(ranAs) > 0 {
		t.Errorf("the caller's type checks ran inside approval_decide: %v", ranAs)
	}
}

// TestDefinerIgnoresCallerTempTypes: a caller who can run SQL creates
// domains pg_temp.jsonb and pg_temp.uuid whose checks record the role they
// run as, then calls the membership helpers. Their bodies name jsonb and
// uuid; were the caller's temporary schema searched first, the checks would
// run with the functions' owner's rights (and the function, compiled with
// the caller's types, would fail for the next caller of the connection once
// they are gone). Each call runs on a connection of its own.
func TestDefinerIgnoresCallerTempTypes(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	claims := `{"sub": "` + userA1 + `", "role": "authenticated", "tenant_id": "` + tenantA + `", "is_anonymous": false}`
	for _, call := range []string{
		`select tablegate.member_tenant_id()::pg_catalog.text`,
		`select tablegate.full_member_tenant_id()::pg_catalog.text`,
		`select tablegate.is_member('tenant', '` + tenantA + `')::pg_catalog.text`,
	} {
		conn, err := pgx.Connect(t.Context(), pool.Config().ConnConfig.ConnString())
		if err != nil {
			t.Fatal(err)
		}
		var got, ranAs string
		execWithClaims(t, conn, claims,
			`begin`,
			`set local role authenticated`,
			`select pg_catalog.set_config('request.jwt.claims', $1, true)`,
			`create function pg_temp.record_role(v pg_catalog.text) returns boolean language sql as
			   $$ select pg_catalog.set_config('tg.test.ran_as', current_user, true) is not null $$`,
			`create domain pg_temp.jsonb as pg_catalog.jsonb check (pg_temp.record_role(value::pg_catalog.text))`,
			`create domain pg_temp.uuid as pg_catalog.uuid check (pg_temp.record_role(value::pg_catalog.text))`)
		if err := conn.QueryRow(t.Context(), call).Scan(&got); err != nil {
			t.Errorf("%s: %v", call, err)
		}
		if err := conn.QueryRow(t.Context(), `select coalesce(pg_catalog.current_setting('tg.test.ran_as', true), '')`).Scan(&ranAs); err != nil {
			t.Fatal(err)
		}
		_ = conn.Close(t.Context())
		if ranAs != "" {
			t.Errorf("%s ran the caller's type check as %q", call, ranAs)
		}
		if got != tenantA && got != "true" {
			t.Errorf("%s = %q, want the caller's tenant", call, got)
		}
	}
}

// execWithClaims runs stmts on conn in order, as the admin set up a
// caller's session: the statement naming $1 gets claims.
func execWithClaims(t *testing.T, conn *pgx.Conn, claims string, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		var args []any
		if strings.Contains(s, "$1") {
			args = []any{claims}
		}
		if _, err := conn.Exec(t.Context(), s, args...); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}
