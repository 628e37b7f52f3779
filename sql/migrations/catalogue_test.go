package migrations_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// catalogueQueries list, per kind of object, one query returning (name,
// detail) rows that describe what the migrations create, independent of
// the owning role and of comments: roles, schemas, functions with their
// full definition (body, volatility, SECURITY DEFINER, search_path), ACLs
// exploded and sorted, tables with columns, constraints, indexes and RLS
// flags, views, sequences, policies, triggers, publications and the
// settings rows. System schemas are left out.
var catalogueQueries = []struct{ kind, sql string }{
	{"role", `select rolname, format('login=%s inherit=%s bypassrls=%s super=%s createrole=%s createdb=%s',
	   rolcanlogin, rolinherit, rolbypassrls, rolsuper, rolcreaterole, rolcreatedb)
	 from pg_roles where rolname in ('anon', 'authenticated', 'service_role')`},
	// Roles are the cluster's: only the migrating role's memberships are
	// the migrations' doing.
	{"role member", `select r.rolname, 'OWNER'
	 from pg_auth_members a join pg_roles r on r.oid = a.roleid
	 where r.rolname in ('anon', 'authenticated', 'service_role') and a.member = (select oid from pg_roles where rolname = current_user)`},
	{"schema", `select n.nspname, acl(n.nspacl, 'n', n.nspowner) from pg_namespace n where ` + userNS("n.oid")},
	{"function", `select p.oid::regprocedure::text, pg_get_functiondef(p.oid) || E'\nACL ' || acl(p.proacl, 'f', p.proowner)
	 from pg_proc p where ` + userNS("p.pronamespace")},
	{"relation", `select c.oid::regclass::text, format('kind=%s rls=%s force=%s options=%s identity=%s acl=%s',
	   c.relkind, c.relrowsecurity, c.relforcerowsecurity, c.reloptions, c.relreplident, acl(c.relacl, case when c.relkind = 'S' then 's' else 'r' end, c.relowner))
	 from pg_class c where c.relkind in ('r', 'p', 'v', 'm', 'S', 'f', 'c') and ` + userNS("c.relnamespace")},
	{"column", `select c.oid::regclass::text || '.' || a.attname, format('%s notnull=%s default=%s identity=%s generated=%s acl=%s',
	   format_type(a.atttypid, a.atttypmod), a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
	   case when a.attacl is null then '' else acl(a.attacl, 'c', c.relowner) end)
	 from pg_attribute a join pg_class c on c.oid = a.attrelid
	 left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
	 where a.attnum > 0 and not a.attisdropped and c.relkind in ('r', 'p', 'v', 'm', 'f', 'c') and ` + userNS("c.relnamespace")},
	{"constraint", `select conrelid::regclass::text || ' ' || conname, pg_get_constraintdef(oid)
	 from pg_constraint where conrelid <> 0 and ` + userNS("connamespace")},
	{"index", `select indexrelid::regclass::text, pg_get_indexdef(indexrelid)
	 from pg_index i join pg_class c on c.oid = i.indexrelid where ` + userNS("c.relnamespace")},
	{"view", `select c.oid::regclass::text, pg_get_viewdef(c.oid)
	 from pg_class c where c.relkind in ('v', 'm') and ` + userNS("c.relnamespace")},
	{"sequence", `select s.seqrelid::regclass::text, format('%s start=%s inc=%s min=%s max=%s cache=%s cycle=%s owned_by=%s',
	   format_type(s.seqtypid, null), s.seqstart, s.seqincrement, s.seqmin, s.seqmax, s.seqcache, s.seqcycle,
	   (select d.refobjid::regclass::text || '.' || a.attname from pg_depend d join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
	    where d.classid = 'pg_class'::regclass and d.objid = s.seqrelid and d.deptype in ('a', 'i') limit 1))
	 from pg_sequence s join pg_class c on c.oid = s.seqrelid where ` + userNS("c.relnamespace")},
	{"type", `select t.oid::regtype::text, format('typtype=%s %s', t.typtype,
	   case t.typtype when 'e' then (select string_agg(enumlabel, ',' order by enumsortorder) from pg_enum where enumtypid = t.oid)
	   when 'd' then format_type(t.typbasetype, t.typtypmod) else '' end)
	 from pg_type t where t.typtype in ('e', 'd') and ` + userNS("t.typnamespace")},
	{"policy", `select schemaname || '.' || tablename || ' ' || policyname,
	   format('%s %s to %s using (%s) check (%s)', permissive, cmd, roles, qual, with_check) from pg_policies`},
	{"trigger", `select tgrelid::regclass::text || ' ' || tgname, pg_get_triggerdef(oid) || ' enabled=' || tgenabled::text
	 from pg_trigger where not tgisinternal`},
	{"event trigger", `select evtname, format('%s %s %s %s', evtevent, evtfoid::regproc, evtenabled, evttags) from pg_event_trigger`},
	{"publication", `select pubname, format('all=%s ins=%s upd=%s del=%s trunc=%s', puballtables, pubinsert, pubupdate, pubdelete, pubtruncate)
	 from pg_publication`},
	{"publication table", `select pubname || ' ' || schemaname || '.' || tablename, '' from pg_publication_tables`},
	{"default acl", `select coalesce(defaclnamespace::regnamespace::text, '-') || ' ' || defaclobjtype::text, acl(defaclacl, defaclobjtype::text, defaclrole)
	 from pg_default_acl`},
	{"extension", `select extname, extnamespace::regnamespace::text from pg_extension where extname <> 'plpgsql'`},
	{"setting", `select key, value from tablegate.settings where to_regclass('tablegate.settings') is not null`},
}

// userNS is a condition keeping objects of non-system schemas.
func userNS(col string) string {
	return fmt.Sprintf(`%s not in (select oid from pg_namespace where nspname in ('pg_catalog', 'information_schema') or nspname like 'pg\_toast%%' or nspname like 'pg\_temp%%')`, col)
}

// aclFunc renders an ACL (NULL: the default of its kind) as sorted
// grantee:privilege lines, with the owner spelled OWNER, so that the
// order of grants and the name of the migrating role do not matter.
const aclFunc = `create or replace function pg_temp.acl(a aclitem[], kind text, owner oid) returns text language sql stable as $$
  select coalesce(string_agg(x, ' ' order by x), '')
  from (
    select format('%s:%s%s', case when e.grantee = owner then 'OWNER' when e.grantee = 0 then 'PUBLIC' else pg_get_userbyid(e.grantee) end,
                  e.privilege_type, case when e.is_grantable then '*' else '' end) as x
    from aclexplode(coalesce(a, case when kind in ('n', 'f', 'r', 's') then acldefault(kind::"char", owner) end)) e
  ) t
$$`

// catalogue returns the normalised catalogue of the database of pool, one
// "kind name: detail" entry per object, sorted.
func catalogue(t testing.TB, pool *pgxpool.Pool) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, aclFunc); err != nil {
		t.Fatalf("catalogue acl function: %v", err)
	}
	var b strings.Builder
	for _, q := range catalogueQueries {
		sql := strings.ReplaceAll(q.sql, "acl(", "pg_temp.acl(")
		rows, err := conn.Query(ctx, `select name, coalesce(detail, '') from (`+sql+`) t(name, detail) order by 1, 2`)
		if err != nil {
			t.Fatalf("catalogue %s: %v", q.kind, err)
		}
		for rows.Next() {
			var name, detail string
			if err := rows.Scan(&name, &detail); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "== %s %s\n%s\n", q.kind, name, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("catalogue %s: %v", q.kind, err)
		}
	}
	return b.String()
}

// catalogueScenarios are the databases the catalogue is taken of: a plain
// database, one where Supabase's storage and realtime schemas exist before
// migrating, and the latter after opting a table, a bucket and realtime
// in (so that what the installers create is compared too).
var catalogueScenarios = []struct {
	name     string
	fixtures []string
	optIn    bool
}{
	{name: "plain"},
	{name: "supabase", fixtures: []string{"supabase_storage.sql", "supabase_realtime.sql", "supabase_realtime_send.sql"}},
	{name: "supabase_opted_in", fixtures: []string{"supabase_storage.sql", "supabase_realtime.sql", "supabase_realtime_send.sql"}, optIn: true},
}

// optIn opts a table, a bucket and realtime in.
func optIn(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	for _, s := range []string{
		`create table public.todos (id bigint generated always as identity primary key, tenant_id uuid not null, title text)`,
		`select tablegate.enable_tenant_policies('public.todos')`,
		`select tablegate.exclude_anonymous('public.todos')`,
		`select tablegate.enable_realtime('public.todos')`,
		`select tablegate.enable_storage_policies('files')`,
	} {
		if _, err := pool.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestCatalogue takes the catalogue of each scenario after migrating up.
// With TABLEGATE_CATALOGUE_OUT set it writes them to that file (see
// sql/tools/catalogue.sh), so that two versions of the migrations can be
// compared with diff.
func TestCatalogue(t *testing.T) {
	var out strings.Builder
	for _, sc := range catalogueScenarios {
		pool := pgtest.Pool(t, pgtest.EmptyURL(t))
		for _, f := range sc.fixtures {
			fixture(t, pool, f)
		}
		if err := db.Migrate(context.Background(), pool); err != nil {
			t.Fatal(err)
		}
		if sc.optIn {
			optIn(t, pool)
		}
		c := catalogue(t, pool)
		if !strings.Contains(c, "== function tablegate.current_tenant_id()") {
			t.Fatalf("%s: catalogue misses tablegate.current_tenant_id()", sc.name)
		}
		fmt.Fprintf(&out, "######## scenario %s\n%s", sc.name, c)
	}
	if path := os.Getenv("TABLEGATE_CATALOGUE_OUT"); path != "" {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
