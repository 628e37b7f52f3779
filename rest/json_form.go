package rest

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/db"
)

// A column's JSON form is the JSON Schema of its values as rows carry them
// (Postgres's to_json) and as bodies send them (json_populate_record),
// read from the catalog once per type when the resource is built:
//
//	int2, int4, int8             → integer
//	numeric, float4, float8      → number (NaN and ±Infinity come as strings)
//	money                        → string (formatted by lc_monetary; a number is accepted)
//	bool                         → boolean
//	uuid                         → string, format uuid
//	timestamptz                  → string, format date-time (infinity and BC as Postgres writes them)
//	timestamp                    → string (no offset: 2024-05-01T10:00:00)
//	date                         → string, format date (the same)
//	json, jsonb                  → any JSON value
//	enum                         → string, one of its labels
//	composite                    → object of its fields
//	array                        → array of the element's form (nested per dimension)
//	domain                       → its base type's form
//	a type with a cast to json   → any JSON value in rows (the cast decides), a string in bodies
//	everything else (oid too)    → string
//
// to_json writes a number only for the integer and floating-point types
// and numeric; every other scalar is a string of the type's text form.

// formKey caches a form per type and direction.
type formKey struct {
	oid   uint32
	input bool
}

// typeForms reads the JSON forms of types, caching them within one
// introspection.
type typeForms struct {
	ctx   context.Context
	d     *db.DB
	cache map[formKey]*jsonschema.Schema
}

// maxFormDepth bounds nesting (arrays of composites of arrays …).
const maxFormDepth = 16

// form returns the non-null JSON form of type oid; the caller owns the
// result (a fresh copy).
func (f *typeForms) form(oid uint32, input bool, depth int) (*jsonschema.Schema, error) {
	k := formKey{oid, input}
	if s, ok := f.cache[k]; ok {
		return s.CloneSchemas(), nil
	}
	if depth > maxFormDepth {
		return &jsonschema.Schema{Description: "A nested value (too deep to describe)."}, nil
	}
	var (
		kind, ns, name  string
		array, jsonCast bool
		base, elem, rel uint32
		labels          []string
	)
	err := f.d.Pool().QueryRow(f.ctx, `SELECT t.typtype, n.nspname, t.typname, t.typcategory = 'A' AND t.typelem <> 0,
       t.typbasetype, t.typelem, t.typrelid,
       t.oid >= 16384 AND EXISTS (SELECT FROM pg_catalog.pg_cast c
                                  WHERE c.castsource = t.oid AND c.casttarget = 'pg_catalog.json'::pg_catalog.regtype),
       CASE WHEN t.typtype = 'e' THEN ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum e
                                            WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) END
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = $1`, oid).Scan(&kind, &ns, &name, &array, &base, &elem, &rel, &jsonCast, &labels)
	if err != nil {
		return nil, fmt.Errorf("the JSON form of type %d: %w", oid, err)
	}
	var s *jsonschema.Schema
	switch {
	case kind == "d":
		if s, err = f.form(base, input, depth+1); err != nil {
			return nil, err
		}
	case array:
		el, err := f.form(elem, input, depth+1)
		if err != nil {
			return nil, err
		}
		s = &jsonschema.Schema{Type: "array", Items: nullable(el, false)} // elements may be NULL
	case kind == "e":
		s = &jsonschema.Schema{Type: "string", Enum: make([]any, len(labels))}
		for i, l := range labels {
			s.Enum[i] = l
		}
	case kind == "c":
		if s, err = f.composite(rel, input, depth); err != nil {
			return nil, err
		}
	case jsonCast && !input:
		s = &jsonschema.Schema{Description: "Any JSON value, as the type's cast to json renders it."}
	case jsonCast:
		s = &jsonschema.Schema{Type: "string", Description: "The type's text form."}
	case ns == "pg_catalog":
		s = builtinForm(name)
	default:
		s = &jsonschema.Schema{Type: "string"}
	}
	f.cache[k] = s
	return s.CloneSchemas(), nil
}

// composite is the object form of composite relation rel: every field as
// a key, in field order, each nullable.
func (f *typeForms) composite(rel uint32, input bool, depth int) (*jsonschema.Schema, error) {
	rows, err := f.d.Pool().Query(f.ctx, `SELECT attname, atttypid FROM pg_catalog.pg_attribute
WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, rel)
	if err != nil {
		return nil, fmt.Errorf("the fields of a composite type: %w", err)
	}
	type field struct {
		name string
		oid  uint32
	}
	var fields []field
	for rows.Next() {
		var fl field
		if err := rows.Scan(&fl.name, &fl.oid); err != nil {
			rows.Close()
			return nil, err
		}
		fields = append(fields, fl)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, fl := range fields {
		fs, err := f.form(fl.oid, input, depth+1)
		if err != nil {
			return nil, err
		}
		s.Properties[fl.name] = nullable(fs, false)
		s.PropertyOrder = append(s.PropertyOrder, fl.name)
		if !input {
			s.Required = append(s.Required, fl.name) // to_json writes every field
		}
	}
	return s, nil
}

// outOfRange describes the values of the date and time types RFC 3339
// has no form for.
const outOfRange = `"infinity", "-infinity" and years BC ("0044-03-15 BC") come as Postgres writes them.`

// builtinForm is the form of a base type of pg_catalog by name.
func builtinForm(name string) *jsonschema.Schema {
	switch name {
	case "int2", "int4", "int8":
		return &jsonschema.Schema{Type: "integer"}
	case "float4", "float8":
		return &jsonschema.Schema{Type: "number",
			Description: `NaN, Infinity and -Infinity are served as the strings "NaN", "Infinity" and "-Infinity".`}
	case "numeric":
		return &jsonschema.Schema{Type: "number",
			Description: "Arbitrary precision: served as a JSON number with every digit; decode it as a decimal. " +
				`NaN, Infinity and -Infinity are served as strings.`}
	case "money":
		return &jsonschema.Schema{Type: "string",
			Description: `Formatted by the database's lc_monetary, e.g. "$1.50"; a number is accepted too.`}
	case "bool":
		return &jsonschema.Schema{Type: "boolean"}
	case "uuid":
		return &jsonschema.Schema{Type: "string", Format: "uuid"}
	case "timestamptz":
		return &jsonschema.Schema{Type: "string", Format: "date-time", Description: outOfRange}
	case "timestamp":
		return &jsonschema.Schema{Type: "string", Description: "Timestamp without time zone, e.g. 2024-05-01T10:00:00. " + outOfRange}
	case "date":
		return &jsonschema.Schema{Type: "string", Format: "date", Description: outOfRange}
	case "json", "jsonb":
		return &jsonschema.Schema{Description: "Any JSON value."}
	}
	return &jsonschema.Schema{Type: "string"}
}

// columnForm is the non-null form of a column of type oid declared with
// ndims array dimensions: a column declared int[][] holds arrays of arrays
// (sub-arrays are never NULL; elements may be).
func (f *typeForms) columnForm(oid uint32, ndims int, input bool) (*jsonschema.Schema, error) {
	s, err := f.form(oid, input, 0)
	if err != nil {
		return nil, err
	}
	if s.Type == "array" {
		el := s.Items
		for i := 1; i < ndims && i < maxFormDepth; i++ {
			el = &jsonschema.Schema{Type: "array", Items: el}
		}
		s.Items = el
	}
	return s, nil
}

// nullable lets s accept null too, unless notNull; s is changed in place
// and returned. A schema of any value already does.
func nullable(s *jsonschema.Schema, notNull bool) *jsonschema.Schema {
	if notNull {
		return s
	}
	switch {
	case s.Type != "":
		s.Types = []string{s.Type, "null"}
		s.Type = ""
	case len(s.Types) > 0:
		for _, t := range s.Types {
			if t == "null" {
				return s
			}
		}
		s.Types = append(s.Types, "null")
	default:
		return s // any value, null included
	}
	if s.Enum != nil {
		s.Enum = append(s.Enum, nil)
	}
	return s
}

// holdsObjects reports whether values of form s are composites (objects),
// or arrays of them.
func holdsObjects(s *jsonschema.Schema) bool {
	for ; s != nil; s = s.Items {
		if s.Type == "object" || slices.Contains(s.Types, "object") {
			return true
		}
	}
	return false
}
