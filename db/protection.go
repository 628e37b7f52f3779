package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// RequestRoles are the roles requests run as that row-level security
// must bind: callers without a session (anon) and users (authenticated).
// service_role is left out: it is meant to bypass RLS.
var RequestRoles = []string{"anon", "authenticated"}

// ErrNoRLS is matched (errors.Is) by every [*RLSError]: row-level
// security does not decide which rows the request roles see through a
// table or view.
var ErrNoRLS = errors.New("row-level security does not protect it")

// ErrNoRelation is returned by [ReadTableProtection] for a table or view
// that does not exist.
var ErrNoRelation = errors.New("no such table or view")

// RLSError says why row-level security does not protect a served table
// or view, and the SQL that makes it do so. [CheckRLS] returns it.
type RLSError struct {
	// Table is the relation checked, schema-qualified: public.notes.
	Table string
	// Relation is the relation that is not protected: Table, or a
	// relation a security_invoker view reads.
	Relation string
	// Reason says what is wrong, in a sentence without a final period.
	Reason string
	// Fix is the SQL (or the step) that makes row-level security decide.
	Fix string
}

// Error names the table, the reason and the fix in one line.
func (e *RLSError) Error() string {
	return fmt.Sprintf("%s is not protected by row-level security: %s; fix: %s", e.Table, e.Reason, e.Fix)
}

// Is reports target == [ErrNoRLS].
func (e *RLSError) Is(target error) bool { return target == ErrNoRLS }

// TableProtection is what the catalog says about how row-level security
// and the grants of the [RequestRoles] guard a table or view. Read it with
// [ReadTableProtection]; `tablegate doctor` prints it, and resources
// check it when they are built.
type TableProtection struct {
	// Table is the relation, schema-qualified and quoted where needed;
	// Schema its schema, quoted where needed.
	Table, Schema string
	// Kind is "table", "partitioned table", "view", "materialized view"
	// or "foreign table".
	Kind string
	// RLS and ForceRLS report ENABLE and FORCE ROW LEVEL SECURITY.
	RLS, ForceRLS bool
	// SecurityInvoker reports a view created with security_invoker = true:
	// the row-level security of the relations it reads applies to the
	// caller.
	SecurityInvoker bool
	// Policies counts the table's policies.
	Policies int
	// Owners lists the request roles that own the table (or hold its
	// owner's privileges); Bypass those of them that bypass its row-level
	// security: owners while RLS is not forced, and roles with BYPASSRLS.
	Owners, Bypass []string
	// Roles lists the request roles that exist.
	Roles []string
	// SchemaUsage lists the request roles with USAGE on the schema.
	SchemaUsage []string
	// Privileges lists "role:PRIVILEGE" of the request roles (SELECT,
	// INSERT, UPDATE, DELETE, TRUNCATE; SELECT, INSERT and UPDATE also
	// when granted on some columns only).
	Privileges []string
	// Reads lists the relations a view reads (none for a table).
	Reads []string
}

const protectionSQL = `select format('%I.%I', n.nspname, c.relname), format('%I', n.nspname),
  case c.relkind when 'r' then 'table' when 'p' then 'partitioned table' when 'v' then 'view'
    when 'm' then 'materialized view' when 'f' then 'foreign table' else 'relation' end,
  c.relrowsecurity, c.relforcerowsecurity,
  coalesce((select o.option_value::bool from pg_catalog.pg_options_to_table(c.reloptions) o
            where o.option_name = 'security_invoker'), false),
  (select count(*)::int from pg_catalog.pg_policy p where p.polrelid = c.oid),
  array(select r.rolname::text from pg_catalog.pg_roles r where r.rolname = any($2)
        and pg_catalog.pg_has_role(r.oid, c.relowner, 'USAGE') order by 1),
  array(select r.rolname::text from pg_catalog.pg_roles r where r.rolname = any($2)
        and (r.rolbypassrls or (pg_catalog.pg_has_role(r.oid, c.relowner, 'USAGE') and not c.relforcerowsecurity)) order by 1),
  array(select r.rolname::text from pg_catalog.pg_roles r where r.rolname = any($2) order by 1),
  array(select r.rolname::text from pg_catalog.pg_roles r where r.rolname = any($2)
        and pg_catalog.has_schema_privilege(r.oid, c.relnamespace, 'USAGE') order by 1),
  array(select r.rolname || ':' || p from pg_catalog.pg_roles r,
          unnest(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE']) p
        where r.rolname = any($2)
          and case when p in ('SELECT','INSERT','UPDATE') then pg_catalog.has_any_column_privilege(r.oid, c.oid, p)
                   else pg_catalog.has_table_privilege(r.oid, c.oid, p) end
        order by array_position($2, r.rolname::text), array_position(array['SELECT','INSERT','UPDATE','DELETE','TRUNCATE'], p)),
  array(select distinct format('%I.%I', dn.nspname, dc.relname)
        from pg_catalog.pg_rewrite rw
        join pg_catalog.pg_depend d on d.classid = 'pg_catalog.pg_rewrite'::regclass and d.objid = rw.oid
             and d.refclassid = 'pg_catalog.pg_class'::regclass and d.deptype = 'n'
        join pg_catalog.pg_class dc on dc.oid = d.refobjid
        join pg_catalog.pg_namespace dn on dn.oid = dc.relnamespace
        where rw.ev_class = c.oid and d.refobjid <> c.oid and c.relkind = 'v'
          and dn.nspname not in ('pg_catalog', 'information_schema')
        order by 1)
from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
where c.oid = pg_catalog.to_regclass($1)`

// ReadTableProtection reads the protection of table (a name as
// to_regclass reads it: public.notes, "Mixed"."Case") from the catalog,
// with the pool's own role. A missing relation is [ErrNoRelation].
func ReadTableProtection(ctx context.Context, pool *pgxpool.Pool, table string) (*TableProtection, error) {
	var p TableProtection
	err := pool.QueryRow(ctx, protectionSQL, table, RequestRoles).Scan(&p.Table, &p.Schema, &p.Kind, &p.RLS, &p.ForceRLS,
		&p.SecurityInvoker, &p.Policies, &p.Owners, &p.Bypass, &p.Roles, &p.SchemaUsage, &p.Privileges, &p.Reads)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("%s: %w", table, ErrNoRelation)
	}
	if err != nil {
		return nil, fmt.Errorf("read the protection of %s: %w", table, err)
	}
	return &p, nil
}

// Has reports whether role holds privilege (SELECT, INSERT, UPDATE,
// DELETE, TRUNCATE) on the table.
func (p *TableProtection) Has(role, privilege string) bool {
	return slices.Contains(p.Privileges, role+":"+privilege)
}

// unprotected returns why row-level security does not bind the request
// roles on this relation alone (not the relations a view reads), or nil.
func (p *TableProtection) unprotected() *RLSError {
	e := &RLSError{Table: p.Table, Relation: p.Table}
	switch {
	case p.Kind == "view" && !p.SecurityInvoker:
		e.Reason = "a view without security_invoker runs with its owner's rights, so the row-level security of the tables it reads does not apply to callers"
		e.Fix = fmt.Sprintf("alter view %s set (security_invoker = true);", p.Table)
	case p.Kind == "view":
		return nil
	case p.Kind == "materialized view" || p.Kind == "foreign table" || p.Kind == "relation":
		e.Reason = "a " + p.Kind + " cannot have row-level security"
		e.Fix = "serve the table it is built from, or a view over it created with (security_invoker = true)"
	case !p.RLS:
		e.Reason = "row-level security is disabled, so every caller with a grant reads and writes every row"
		e.Fix = fmt.Sprintf("alter table %s enable row level security; then create policies", p.Table)
	case len(p.Bypass) > 0:
		var owners, bypassers []string
		for _, r := range p.Bypass {
			if slices.Contains(p.Owners, r) && !p.ForceRLS {
				owners = append(owners, r)
			} else {
				bypassers = append(bypassers, r)
			}
		}
		if len(owners) > 0 {
			e.Reason = fmt.Sprintf("role %s owns it and row-level security is not forced, so its requests bypass the policies", strings.Join(owners, " and "))
			e.Fix = fmt.Sprintf("alter table %s force row level security; (or give the table to another owner: alter table %s owner to postgres;)", p.Table, p.Table)
		} else {
			e.Reason = fmt.Sprintf("role %s has BYPASSRLS", strings.Join(bypassers, " and "))
			e.Fix = fmt.Sprintf("alter role %s nobypassrls;", strings.Join(bypassers, ", "))
		}
	default:
		return nil
	}
	return e
}

// CheckRLS reads the protection of table and returns it, with an
// [*RLSError] when row-level security does not decide which rows the
// [RequestRoles] see through it:
//
//   - a table whose row-level security is disabled;
//   - a table a request role owns (or holds its owner's privileges) while
//     its row-level security is not forced, or a request role with
//     BYPASSRLS;
//   - a view without security_invoker (it reads with its owner's rights),
//     or a security_invoker view reading a relation that is unprotected;
//   - a materialized view or foreign table (they cannot have RLS).
//
// A table owned by another role (the migrating one, as on Supabase) need
// not force row-level security: requests never run as its owner. An
// enabled table without policies is protected (it shows no rows).
func CheckRLS(ctx context.Context, pool *pgxpool.Pool, table string) (*TableProtection, error) {
	p, err := ReadTableProtection(ctx, pool, table)
	if err != nil {
		return nil, err
	}
	if e := p.unprotected(); e != nil {
		return p, e
	}
	// A security_invoker view is as protected as what it reads.
	seen := map[string]bool{p.Table: true}
	queue := slices.Clone(p.Reads)
	for len(queue) > 0 && len(seen) < 64 {
		rel := queue[0]
		queue = queue[1:]
		if seen[rel] {
			continue
		}
		seen[rel] = true
		q, err := ReadTableProtection(ctx, pool, rel)
		if errors.Is(err, ErrNoRelation) {
			continue
		}
		if err != nil {
			return p, err
		}
		if e := q.unprotected(); e != nil {
			e.Table, e.Reason = p.Table, "it reads "+q.Table+": "+e.Reason
			return p, e
		}
		queue = append(queue, q.Reads...)
	}
	return p, nil
}
