package migrations_test

import (
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestDefinerSearchPathPinned: every SECURITY DEFINER function tablegate
// installs runs with search_path = pg_catalog, pg_temp. An empty path is not
// enough: Postgres then searches the session's temporary schema first for
// types and tables, so a caller could shadow a type the body names.
func TestDefinerSearchPathPinned(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	rows, err := pool.Query(t.Context(), `
		select p.oid::regprocedure::text, coalesce(array_to_string(p.proconfig, ' '), '')
		from pg_proc p join pg_namespace n on n.oid = p.pronamespace
		where p.prosecdef and n.nspname not in ('pg_catalog', 'information_schema')
		order by 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var fn, config string
		if err := rows.Scan(&fn, &config); err != nil {
			t.Fatal(err)
		}
		n++
		if config != `search_path=pg_catalog, pg_temp` {
			t.Errorf("%s runs with %q, want search_path=pg_catalog, pg_temp", fn, config)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d SECURITY DEFINER functions found", n)
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
	execScript(t, pool, equivalenceFixture)
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
		for i, s := range []string{
			`begin`,
			`set local role authenticated`,
			`select pg_catalog.set_config('request.jwt.claims', $1, true)`,
			`create function pg_temp.record_role(v pg_catalog.text) returns boolean language sql as
			   $$ select pg_catalog.set_config('tg.test.ran_as', current_user, true) is not null $$`,
			`create domain pg_temp.jsonb as pg_catalog.jsonb check (pg_temp.record_role(value::pg_catalog.text))`,
			`create domain pg_temp.uuid as pg_catalog.uuid check (pg_temp.record_role(value::pg_catalog.text))`,
		} {
			var args []any
			if i == 2 {
				args = []any{claims}
			}
			if _, err := conn.Exec(t.Context(), s, args...); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
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
