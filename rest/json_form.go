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

// formEntry is a cached form and its size in schema nodes.
type formEntry struct {
	s     *jsonschema.Schema
	nodes int
}

// typeForms reads the JSON forms of types, caching them within one
// introspection.
type typeForms struct {
	ctx    context.Context
	d      *db.DB
	cache  map[formKey]formEntry
	budget int // schema nodes left for the column being described
}

const (
	// maxFormDepth bounds nesting (arrays of composites of arrays …).
	maxFormDepth = 16
	// maxFormNodes bounds the schema of one column: composites nest
	// composites, and one whose four fields are each of the type below,
	// eight levels down, would describe 65 536 leaves (and take seconds
	// and gigabytes to build). Past it a composite is described as an
	// object, anything else as any value.
	maxFormNodes = 512
)

// form returns the non-null JSON form of type oid (the caller owns the
// result, a fresh copy), its size in nodes, and whether it was cut short by
// the depth or node bound (cut forms are not cached: the same type reached
// with more room is described in full).
func (f *typeForms) form(oid uint32, input bool, depth int) (*jsonschema.Schema, int, bool, error) {
	k := formKey{oid, input}
	if e, ok := f.cache[k]; ok && e.nodes <= f.budget {
		f.budget -= e.nodes
		return e.s.CloneSchemas(), e.nodes, false, nil
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
                                  WHERE c.castsource = t.oid AND c.casttarget = 'pg_catalog.json'::pg_catalog.regtype
                                    AND c.castmethod = 'f'),
       CASE WHEN t.typtype = 'e' THEN ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum e
                                            WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) END
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = $1`, oid).Scan(&kind, &ns, &name, &array, &base, &elem, &rel, &jsonCast, &labels)
	if err != nil {
		return nil, 0, false, fmt.Errorf("the JSON form of type %d: %w", oid, err)
	}
	if depth > maxFormDepth || f.budget <= 0 {
		if kind == "c" {
			return &jsonschema.Schema{Type: "object", Description: "A composite value (too large to describe here)."}, 1, true, nil
		}
		return &jsonschema.Schema{Description: "A nested value (too large to describe here)."}, 1, true, nil
	}
	f.budget--
	nodes, cut := 1, false
	var s *jsonschema.Schema
	switch {
	case kind == "d":
		var n int
		if s, n, cut, err = f.form(base, input, depth+1); err != nil {
			return nil, 0, false, err
		}
		nodes += n
	case array:
		el, n, c, err := f.form(elem, input, depth+1)
		if err != nil {
			return nil, 0, false, err
		}
		nodes, cut = nodes+n, c
		s = &jsonschema.Schema{Type: "array", Items: nullable(el, false)} // elements may be NULL
	case kind == "e" && jsonCast && !input:
		// to_json applies an enum's cast to json (a composite's or an
		// array's it does not).
		s = &jsonschema.Schema{Description: "Any JSON value, as the type's cast to json renders it."}
	case kind == "e":
		s = &jsonschema.Schema{Type: "string", Enum: make([]any, len(labels))}
		for i, l := range labels {
			s.Enum[i] = l
		}
	case kind == "c":
		var n int
		if s, n, cut, err = f.composite(rel, input, depth); err != nil {
			return nil, 0, false, err
		}
		nodes += n
	case jsonCast && !input:
		s = &jsonschema.Schema{Description: "Any JSON value, as the type's cast to json renders it."}
	case jsonCast:
		s = &jsonschema.Schema{Type: "string", Description: "The type's text form."}
	case ns == "pg_catalog":
		s = builtinForm(name)
	default:
		s = &jsonschema.Schema{Type: "string"}
	}
	if !cut {
		f.cache[k] = formEntry{s: s.CloneSchemas(), nodes: nodes}
	}
	return s, nodes, cut, nil
}

// composite is the object form of composite relation rel: every field as
// a key, in field order, each nullable; its size in nodes and whether a
// field's form was cut short.
func (f *typeForms) composite(rel uint32, input bool, depth int) (*jsonschema.Schema, int, bool, error) {
	rows, err := f.d.Pool().Query(f.ctx, `SELECT attname, atttypid FROM pg_catalog.pg_attribute
WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, rel)
	if err != nil {
		return nil, 0, false, fmt.Errorf("the fields of a composite type: %w", err)
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
			return nil, 0, false, err
		}
		fields = append(fields, fl)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, false, err
	}
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	nodes, cut := 0, false
	for _, fl := range fields {
		fs, n, c, err := f.form(fl.oid, input, depth+1)
		if err != nil {
			return nil, 0, false, err
		}
		nodes, cut = nodes+n, cut || c
		s.Properties[fl.name] = nullable(fs, false)
		s.PropertyOrder = append(s.PropertyOrder, fl.name)
		if !input {
			s.Required = append(s.Required, fl.name) // to_json writes every field
		}
	}
	return s, nodes, cut, nil
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
	f.budget = maxFormNodes
	s, _, _, err := f.form(oid, input, 0)
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

// textOnly reports whether a body gives values of this form as their text
// only (rows carry any JSON, bodies a string: a type with a cast to json),
// and in how many levels of arrays (0 for the type itself).
func textOnly(out, in *jsonschema.Schema) (bool, int) {
	for arrays := 0; out != nil && in != nil; arrays++ {
		if out.Type == "" && len(out.Types) == 0 {
			return in.Type == "string" || slices.Contains(in.Types, "string"), arrays
		}
		out, in = out.Items, in.Items
	}
	return false, 0
}

// isText reports whether v is a string or null, inside arrays levels of
// arrays at most (Postgres does not enforce an array's dimensions).
func isText(v any, arrays int) bool {
	switch x := v.(type) {
	case nil, string:
		return true
	case []any:
		if arrays == 0 {
			return false
		}
		for _, e := range x {
			if !isText(e, arrays) {
				return false
			}
		}
		return true
	}
	return false
}
