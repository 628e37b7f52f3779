package rest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/problem"
)

// A constraint violation names the constraint and its columns, never the
// value: Postgres reports the constraint's name and table, and the
// columns are read from the catalog once per constraint and remembered by
// the resource (on the error path only).

// constraintInfo is what the catalog says about one constraint of a table.
type constraintInfo struct {
	found bool
	// own: the constraint belongs to the table written (a foreign key
	// whose referencing columns it holds); false for a foreign key of
	// another table that references it.
	own  bool
	cols []string // the table's columns it covers, in key order
}

// maxConstraintCache bounds the constraints a resource remembers.
const maxConstraintCache = 256

// constraintCache remembers constraint columns per resource.
type constraintCache struct {
	mu sync.Mutex
	m  map[string]constraintInfo
}

const constraintSQL = `
WITH t AS (SELECT to_regclass($2::text) AS rel)
(SELECT c.conrelid = t.rel,
        array(SELECT a.attname::text
              FROM unnest(CASE WHEN c.conrelid = t.rel THEN c.conkey ELSE c.confkey END) WITH ORDINALITY k(n, i)
              JOIN pg_catalog.pg_attribute a ON a.attrelid = t.rel AND a.attnum = k.n
              ORDER BY k.i)
 FROM t JOIN pg_catalog.pg_constraint c ON c.conrelid = t.rel OR c.confrelid = t.rel
 WHERE c.conname = $1
 ORDER BY 1 DESC)
UNION ALL
(SELECT true,
        array(SELECT a.attname::text
              FROM unnest(x.indkey::int2[]) WITH ORDINALITY k(n, i)
              JOIN pg_catalog.pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.n
              ORDER BY k.i)
 FROM t JOIN pg_catalog.pg_index x ON x.indrelid = t.rel
 JOIN pg_catalog.pg_class ic ON ic.oid = x.indexrelid
 WHERE ic.relname = $1 AND x.indisunique)
LIMIT 1`

// constraint returns the columns of constraint name on the table the
// error names (schema.table), from the cache or the catalog (read with
// the pool's own role, within a second). A failed read is not cached.
func (r *Resource) constraint(schema, table, name string) constraintInfo {
	key := schema + "\x00" + table + "\x00" + name
	c := &r.constraints
	c.mu.Lock()
	info, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return info
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rel := pgx.Identifier{schema, table}.Sanitize()
	err := r.d.Pool().QueryRow(ctx, constraintSQL, name, rel).
		Scan(&info.own, &info.cols)
	switch {
	case err == nil:
		info.found = true
	case errors.Is(err, pgx.ErrNoRows):
	default:
		return constraintInfo{}
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxConstraintCache {
		c.m = map[string]constraintInfo{}
	}
	c.m[key] = info
	c.mu.Unlock()
	return info
}

// withConstraint rewrites the problem of a unique (23505), foreign-key
// (23503), check (23514) or not-null (23502) violation to name the
// constraint and its column(s), with one field error per column of the
// table. Any other problem is returned unchanged.
func (r *Resource) withConstraint(err error, p *problem.Problem, op Operation) *problem.Problem {
	var pe *pgconn.PgError
	if p == nil || !errors.As(err, &pe) {
		return p
	}
	switch pe.Code {
	case "23502":
		if pe.ColumnName != "" {
			p.Detail = "A required value is missing: " + pe.ColumnName + " may not be null."
			p.Errors = []problem.FieldError{{Path: "/" + pointerEscape(pe.ColumnName), Message: "may not be null"}}
		}
		return p
	case "23505", "23503", "23514":
	default:
		return p
	}
	if pe.ConstraintName == "" {
		return p
	}
	var info constraintInfo
	if pe.TableName != "" {
		schema := pe.SchemaName
		if schema == "" {
			schema = r.schema
		}
		info = r.constraint(schema, pe.TableName, pe.ConstraintName)
	}
	name := strconv.Quote(pe.ConstraintName)
	on := ""
	if len(info.cols) > 0 {
		on = " on " + strings.Join(info.cols, ", ")
	}
	var msg string
	switch pe.Code {
	case "23505":
		msg = "violates unique constraint " + name
		if len(info.cols) > 0 {
			p.Detail = "A row with the same " + strings.Join(info.cols, ", ") + " already exists (unique constraint " + name + ")."
		} else {
			p.Detail = "A row with the same unique value already exists (unique constraint " + name + ")."
		}
	case "23503":
		if op == OpDelete || (info.found && !info.own) {
			// A foreign key (Postgres reports the referencing table's)
			// still points at this row.
			if len(info.cols) > 0 && info.own {
				on = " on " + pe.TableName + "." + strings.Join(info.cols, ", "+pe.TableName+".")
			}
			p.Detail = "The row is still referenced by another row (foreign key " + name + on + ")."
			return p
		}
		msg = "violates foreign key " + name
		if len(info.cols) > 0 {
			p.Detail = "The value of " + strings.Join(info.cols, ", ") + " does not reference an existing row (foreign key " + name + ")."
		} else {
			p.Detail = "The row references a row that does not exist, or is still referenced (foreign key " + name + ")."
		}
	case "23514":
		msg = "violates check constraint " + name
		p.Detail = "A value violates check constraint " + name + on + "."
	}
	if len(info.cols) > 0 && info.own {
		p.Errors = make([]problem.FieldError, len(info.cols))
		for i, col := range info.cols {
			p.Errors[i] = problem.FieldError{Path: "/" + pointerEscape(col), Message: msg}
		}
	}
	return p
}
