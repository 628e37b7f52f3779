package rest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/suggest"
)

// privilegesOf lists the privileges a CRUD operation's statements need:
// every one reads the key column (a WHERE or a RETURNING needs SELECT).
var privilegesOf = map[Operation][]string{
	OpList:   {"SELECT"},
	OpGet:    {"SELECT"},
	OpCreate: {"INSERT", "SELECT"},
	OpUpdate: {"UPDATE", "SELECT"},
	OpDelete: {"DELETE", "SELECT"},
}

// MissingGrant is a privilege a role lacks for a CRUD operation, as
// [MissingGrants] finds it.
type MissingGrant struct {
	Operation Operation
	Role      string
	// Privileges lists what the role lacks, in lower case: "insert",
	// "select".
	Privileges []string
	// Fix is the SQL that grants them: grant insert on public.t to authenticated.
	Fix string
}

// MissingGrants lists, for each operation of ops (CRUD only) and role of
// roles, the privileges the statements of the table repository need that
// the role lacks on the table of p: SELECT for every operation (a WHERE
// or a RETURNING reads the key), and INSERT, UPDATE or DELETE for create,
// update and delete. [NewResource] logs them; `tablegate doctor` prints
// them for the tables of a serve config.
func MissingGrants(p *db.TableProtection, ops []Operation, roles []string) []MissingGrant {
	var out []MissingGrant
	for _, role := range roles {
		for _, op := range ops {
			var missing []string
			for _, priv := range privilegesOf[op] {
				if !p.Has(role, priv) {
					missing = append(missing, strings.ToLower(priv))
				}
			}
			if len(missing) > 0 {
				out = append(out, MissingGrant{Operation: op, Role: role, Privileges: missing,
					Fix: fmt.Sprintf("grant %s on %s to %s", strings.Join(missing, ", "), p.Table, role)})
			}
		}
	}
	return out
}

// checkProtection refuses a table that row-level security does not
// protect ([db.CheckRLS]) unless o.AllowWithoutRLS, which it logs and
// describes instead; then it logs, once per served operation and role of
// o.GrantRoles, a privilege the role lacks. qualified is the quoted table
// name.
func (r *Resource) checkProtection(ctx context.Context, d *db.DB, qualified string, o *Config) error {
	p, err := db.CheckRLS(ctx, d.Pool(), qualified)
	var rlsErr *db.RLSError
	switch {
	case errors.As(err, &rlsErr) && !o.AllowWithoutRLS:
		return fmt.Errorf("%w (or, for a table every caller may read, set Config.AllowWithoutRLS)", err)
	case rlsErr != nil:
		r.desc.WithoutRLS, r.desc.WithoutRLSReason = true, rlsErr.Reason
		r.log.WarnContext(ctx, fmt.Sprintf("rest: %s is served WITHOUT row-level security (Config.AllowWithoutRLS): %s; to protect it: %s",
			rlsErr.Table, rlsErr.Reason, rlsErr.Fix), "table", r.table)
	case err != nil:
		return err
	}
	if o.Repository != nil {
		return nil // its statements are its own: they may need other privileges
	}
	roles := o.GrantRoles
	if roles == nil {
		roles = []string{"authenticated"}
	}
	schema := p.Schema
	for _, role := range roles {
		switch {
		case !slices.Contains(p.Roles, role):
			r.log.WarnContext(ctx, fmt.Sprintf("rest: role %s does not exist, so no request to %s can run as it; fix: run \"tablegate migrate up\" (db.Migrate), which creates the API roles", role, p.Table),
				"table", r.table)
			continue
		case !slices.Contains(p.SchemaUsage, role):
			r.log.WarnContext(ctx, fmt.Sprintf("rest: role %s lacks USAGE on schema %s, so every request to %s as %s fails; fix: grant usage on schema %s to %s", role, schema, p.Table, role, schema, role),
				"table", r.table)
			continue
		}
		var ops []Operation
		for _, op := range crud {
			if r.ops[op] {
				ops = append(ops, op)
			}
		}
		for _, m := range MissingGrants(p, ops, []string{role}) {
			r.log.WarnContext(ctx, fmt.Sprintf("rest: %s %s: role %s lacks the %s privilege, so every request as %s answers 403; fix: %s",
				r.table, m.Operation, role, strings.ToUpper(strings.Join(m.Privileges, ", ")), role, m.Fix),
				"table", r.table, "operation", string(m.Operation))
		}
	}
	return nil
}

// missingTable explains why introspection found no columns for
// schema.name: the database is not migrated, the schema or the table is
// missing (with the nearest table name of the schema), or it has none.
func missingTable(ctx context.Context, d *db.DB, schema, name string) error {
	var exists, schemaExists, migrated bool
	var tables []string
	err := d.Pool().QueryRow(ctx, `select pg_catalog.to_regclass($1) is not null,
  exists (select from pg_catalog.pg_namespace where nspname = $2),
  exists (select from pg_catalog.pg_namespace where nspname = 'tablegate'),
  array(select c.relname::text from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = $2 and c.relkind in ('r', 'p', 'v', 'm', 'f') order by 1)`,
		pgx.Identifier{schema, name}.Sanitize(), schema).Scan(&exists, &schemaExists, &migrated, &tables)
	const apply = `apply your migrations ("tablegate migrate up --dir <dir>"), or check the name`
	switch {
	case err != nil:
		return fmt.Errorf("introspect: %w", err)
	case exists:
		return errors.New("it has no columns")
	case !migrated:
		return errors.New(`no such table or view, and the database has no tablegate schema either: it is not migrated; run "tablegate migrate up" (db.Migrate), then your own migrations`)
	case !schemaExists:
		return fmt.Errorf("no such table or view: schema %q does not exist; %s", schema, apply)
	}
	return fmt.Errorf("no such table or view in schema %s%s; %s", schema, suggest.DidYouMean(name, tables), apply)
}
