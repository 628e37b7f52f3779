package rest

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jackc/pgx/v5"
	"github.com/tablegate/tablegate/db"
)

const introspectSQL = `
SELECT a.attname, format_type(a.atttypid, a.atttypmod), format_type(a.atttypid, -1),
       CASE WHEN e.oid IS NOT NULL
            THEN '_' || CASE WHEN en.nspname = 'pg_catalog' THEN e.typname ELSE en.nspname || '.' || e.typname END
            ELSE CASE WHEN tn.nspname = 'pg_catalog' THEN t.typname ELSE tn.nspname || '.' || t.typname END END,
       a.attnotnull, a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '',
       a.attidentity = 'a' OR a.attgenerated <> '',
       coalesce(a.attnum = ANY (i.indkey), false), a.atttypid,
       t.typtype = 'd' OR coalesce(e.typtype = 'd', false), a.attndims
FROM pg_attribute a
JOIN pg_type t ON t.oid = a.atttypid
JOIN pg_namespace tn ON tn.oid = t.typnamespace
LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
LEFT JOIN pg_namespace en ON en.oid = e.typnamespace
LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum`

// introspect reads the columns and primary key of schema.name once, with
// the pool's own role (catalog reads are not subject to RLS).
func introspect(ctx context.Context, d *db.DB, schema, name string) ([]*column, []string, error) {
	rows, err := d.Pool().Query(ctx, introspectSQL, pgx.Identifier{schema, name}.Sanitize())
	if err != nil {
		return nil, nil, fmt.Errorf("introspect: %w", err)
	}
	var cols []*column
	var pk []string
	for rows.Next() {
		c := &column{}
		var isPK bool
		var castType string
		if err := rows.Scan(&c.Name, &c.Type, &castType, &c.TypeName, &c.NotNull, &c.HasDefault, &c.ReadOnly, &isPK, &c.typeOID, &c.domain, &c.ndims); err != nil {
			rows.Close()
			return nil, nil, fmt.Errorf("introspect: %w", err)
		}
		c.ident = pgx.Identifier{c.Name}.Sanitize()
		c.key = jsonKey(c.Name)
		// Parameters are cast to the type WITHOUT its modifier: an explicit
		// cast to varchar(5) or numeric(5,1) truncates or rounds, so a key
		// or filter value that cannot be stored would match another row.
		c.cast = "::text::" + castType
		c.expr = "t." + c.ident
		if isPK {
			pk = append(pk, c.Name)
		}
		cols = append(cols, c)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("introspect: %w", err)
	}
	if len(cols) == 0 {
		return nil, nil, missingTable(ctx, d, schema, name)
	}
	seen := map[uint32]bool{}
	forms := &typeForms{ctx: ctx, d: d, cache: map[formKey]formEntry{}}
	for _, c := range cols {
		if c.outForm, err = forms.columnForm(c.typeOID, c.ndims, false); err != nil {
			return nil, nil, fmt.Errorf("introspect: column %s: %w", c.Name, err)
		}
		if c.inForm, err = forms.columnForm(c.typeOID, c.ndims, true); err != nil {
			return nil, nil, fmt.Errorf("introspect: column %s: %w", c.Name, err)
		}
		if c.domain {
			var base string
			if c.TypeName, base, err = baseTypeName(ctx, d, c.typeOID); err != nil {
				return nil, nil, fmt.Errorf("introspect: column %s: %w", c.Name, err)
			}
			if base != "" {
				// Compared as the base type, both sides: Postgres has no
				// operators for some domains (a domain over an enum), and a
				// filter value outside the domain just matches nothing.
				c.cast = "::text::" + base
				c.expr = "t." + c.ident + "::" + base
			}
		}
		if c.TypeName == "json" { // json has no operators: compare as jsonb
			c.cast = "::text::jsonb"
			c.expr += "::jsonb"
			c.comparable = true
		} else if c.comparable, err = comparableType(ctx, d, c.typeOID, seen, 0); err != nil {
			return nil, nil, fmt.Errorf("introspect: column %s: %w", c.Name, err)
		}
		// A composite whose fields are all NULL is NULL to IS NULL yet
		// sorts among the values, so keyset pages ordered by it would
		// repeat or skip rows: filtered, never ordered.
		c.composite = holdsObjects(c.outForm)
		c.fit = fitKinds(c.inForm, c.TypeName)
		c.textIn, c.textArrays = textOnly(c.outForm, c.inForm)
	}
	return cols, pk, nil
}

// comparableType reports whether values of type oid can be compared with
// =, <, > and sorted: a type with a default btree operator class (its own,
// or one it is binary-coercible to), an enum, a range, an array or a domain
// of such a type, or a composite whose fields all are. Text search and
// reg* types are not: a value the caller sends would fail to parse with an
// error the database reports as its own (a syntax error, a missing
// relation), and the reg* lookups would tell the caller which objects
// exist. seen caches answers (and breaks cycles) within one introspection.
func comparableType(ctx context.Context, d *db.DB, oid uint32, seen map[uint32]bool, depth int) (bool, error) {
	if ok, done := seen[oid]; done {
		return ok, nil
	}
	if depth > 32 {
		return false, nil
	}
	seen[oid] = false
	var kind, ns, name string
	var array, btree bool
	var base, elem, rel uint32
	err := d.Pool().QueryRow(ctx, `SELECT t.typtype, n.nspname, t.typname, t.typcategory = 'A' AND t.typelem <> 0,
       t.typbasetype, t.typelem, t.typrelid,
       EXISTS (SELECT FROM pg_catalog.pg_opclass o JOIN pg_catalog.pg_am m ON m.oid = o.opcmethod
               WHERE m.amname = 'btree' AND o.opcdefault
                 AND (o.opcintype = t.oid OR o.opcintype IN (SELECT c.casttarget FROM pg_catalog.pg_cast c
                      WHERE c.castsource = t.oid AND c.castmethod = 'b' AND c.castcontext = 'i'))
                 -- the filters are written with <, =, >: a class whose
                 -- operators are named otherwise (hstore's #<#) does not do
                 AND (SELECT count(DISTINCT op.oprname) FROM pg_catalog.pg_amop ap
                      JOIN pg_catalog.pg_operator op ON op.oid = ap.amopopr
                      WHERE ap.amopfamily = o.opcfamily AND ap.amoplefttype = o.opcintype
                        AND ap.amoprighttype = o.opcintype
                        AND (ap.amopstrategy, op.oprname) IN ((1, '<'), (2, '<='), (3, '='), (4, '>='), (5, '>'))) = 5)
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = $1`, oid).Scan(&kind, &ns, &name, &array, &base, &elem, &rel, &btree)
	if err != nil {
		return false, err
	}
	ok := false
	switch {
	case kind == "d":
		ok, err = comparableType(ctx, d, base, seen, depth+1)
	case ns == "pg_catalog" && (name == "tsvector" || name == "tsquery" || strings.HasPrefix(name, "reg")):
	case array:
		ok, err = comparableType(ctx, d, elem, seen, depth+1)
		if ok && err == nil {
			// An array of domains compares its elements as the domain,
			// which has no operators when it is over an enum.
			ok, err = noDomainOverEnum(ctx, d, elem)
		}
	case kind == "e", kind == "r", kind == "m":
		ok = true
	case kind == "c":
		ok, err = comparableFields(ctx, d, rel, seen, depth+1)
	case kind == "b":
		ok = btree
	}
	if err != nil {
		return false, err
	}
	seen[oid] = ok
	return ok, nil
}

// noDomainOverEnum reports false for a domain whose base type (through
// domains) is an enum: Postgres has no operators for it.
func noDomainOverEnum(ctx context.Context, d *db.DB, oid uint32) (bool, error) {
	var over bool
	err := d.Pool().QueryRow(ctx, `WITH RECURSIVE b AS (
  SELECT t.oid, t.typtype, t.typbasetype, 0 AS n FROM pg_catalog.pg_type t WHERE t.oid = $1
  UNION ALL
  SELECT t.oid, t.typtype, t.typbasetype, b.n + 1 FROM b JOIN pg_catalog.pg_type t ON t.oid = b.typbasetype
  WHERE b.typtype = 'd' AND b.n < 64)
SELECT (SELECT typtype FROM b WHERE n = 0) = 'd' AND EXISTS (SELECT FROM b WHERE typtype = 'e')`, oid).Scan(&over)
	return !over, err
}

// comparableFields reports whether every field of composite relation rel
// is of a comparable type.
func comparableFields(ctx context.Context, d *db.DB, rel uint32, seen map[uint32]bool, depth int) (bool, error) {
	rows, err := d.Pool().Query(ctx, `SELECT atttypid FROM pg_catalog.pg_attribute
WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, rel)
	if err != nil {
		return false, err
	}
	types, err := pgx.CollectRows(rows, pgx.RowTo[uint32])
	if err != nil {
		return false, err
	}
	for _, t := range types {
		if ok, err := comparableType(ctx, d, t, seen, depth); !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// baseTypeName is the name of the type a column of type oid is filtered,
// keyed and described as: a domain's base type (through domains over
// domains), and for an array of domains, "_" and its elements' base type.
// cast is the base type as a cast names it, for a domain over a type that
// is no array ("" otherwise: an array of domains is cast to itself).
func baseTypeName(ctx context.Context, d *db.DB, oid uint32) (name, cast string, err error) {
	prefix := ""
	for range 64 {
		var kind, format string
		var base, elem uint32
		var array bool
		err := d.Pool().QueryRow(ctx, `SELECT CASE WHEN n.nspname = 'pg_catalog' THEN t.typname ELSE n.nspname || '.' || t.typname END,
       pg_catalog.format_type(t.oid, -1), t.typtype, t.typbasetype, t.typelem, t.typcategory = 'A' AND t.typelem <> 0
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = $1`, oid).Scan(&name, &format, &kind, &base, &elem, &array)
		if err != nil {
			return "", "", err
		}
		switch {
		case kind == "d":
			oid = base
		case array:
			prefix += "_"
			oid = elem
		case prefix == "":
			return name, format, nil
		default:
			return prefix + name, "", nil
		}
	}
	return "", "", errors.New("its type nests domains and arrays too deeply")
}

// typeSchema is the JSON Schema of c's values in rows (input false) or
// bodies (input true): its JSON form (json_form.go), nullable unless NOT
// NULL. The result is the caller's.
func typeSchema(c *column, input bool) *jsonschema.Schema {
	f := c.outForm
	if input {
		f = c.inForm
	}
	if f == nil { // a column built without introspection
		f = builtinForm(c.TypeName)
	}
	return nullable(f.CloneSchemas(), c.NotNull)
}

// rowSchema is the object schema of a row holding cols, as rows carry it
// (input false) or as a body sends it (input true).
func rowSchema(cols []*column, input bool) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, c := range cols {
		s.Properties[c.Name] = typeSchema(c, input)
		s.PropertyOrder = append(s.PropertyOrder, c.Name)
		s.Required = append(s.Required, c.Name)
	}
	return s
}
