package spec

import (
	"regexp"
	"strconv"

	"github.com/tablegate/tablegate/rest"
)

var varcharLen = regexp.MustCompile(`^character varying\((\d+)\)$`)

// columnSchema maps a column to the JSON Schema of the value the table
// repository serves for it. Rows are rendered as Postgres' to_json
// renders each value, so the JSON form is Postgres' own:
//
//	int2, int4                 → integer (int32)
//	int8                       → integer (int64; JSON number, every digit)
//	numeric                    → number (JSON number, every digit: decode as a decimal)
//	float4, float8             → number (float, double)
//	money                      → string (locale formatted, e.g. "$1.50")
//	bool                       → boolean
//	uuid                       → string, format uuid
//	timestamptz                → string, format date-time (RFC 3339 with offset)
//	timestamp                  → string, no offset ("2024-05-01T10:00:00")
//	date                       → string, format date
//	json, jsonb                → any JSON value
//	arrays                     → array of the element type
//	everything else            → string (text, varchar(n) with maxLength, …)
//
// A nullable column adds "null" to the type.
func columnSchema(c rest.Column) *omap {
	s := typeSchema(c.TypeName, c.Type)
	if !c.NotNull {
		nullable(s)
	}
	if c.ReadOnly {
		s.set("readOnly", true)
	}
	s.set("x-postgres-type", c.Type)
	return s
}

func typeSchema(typname, format string) *omap {
	s := newMap()
	if len(typname) > 1 && typname[0] == '_' {
		s.set("type", "array")
		el := typeSchema(typname[1:], "")
		nullable(el) // Postgres array elements may be NULL
		s.set("items", el)
		return s
	}
	switch typname {
	case "int2", "int4":
		s.set("type", "integer").set("format", "int32")
	case "int8":
		s.set("type", "integer").set("format", "int64")
	case "oid":
		s.set("type", "integer")
	case "float4":
		s.set("type", "number").set("format", "float")
	case "float8":
		s.set("type", "number").set("format", "double")
	case "numeric":
		s.set("type", "number")
		s.set("description", "Arbitrary precision: served as a JSON number with every digit; decode it as a decimal.")
	case "bool":
		s.set("type", "boolean")
	case "uuid":
		s.set("type", "string").set("format", "uuid")
	case "timestamptz":
		s.set("type", "string").set("format", "date-time")
	case "timestamp":
		s.set("type", "string")
		s.set("description", "Timestamp without time zone, e.g. 2024-05-01T10:00:00.")
	case "date":
		s.set("type", "string").set("format", "date")
	case "json", "jsonb":
		s.set("description", "Any JSON value.")
	default:
		s.set("type", "string")
		if m := varcharLen.FindStringSubmatch(format); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				s.set("maxLength", n)
			}
		}
	}
	return s
}

// nullable lets s also accept null.
func nullable(s *omap) {
	t, ok := s.get("type")
	if !ok {
		return // any value, null included
	}
	switch x := t.(type) {
	case string:
		s.set("type", []any{x, "null"})
	case []any:
		for _, e := range x {
			if e == "null" {
				return
			}
		}
		s.set("type", append(x, "null"))
	}
}

// rowSchema is the object schema of a row of the selected columns.
func rowSchema(d *rest.Description) *omap {
	props := newMap()
	var req []any
	for _, c := range d.Columns {
		props.set(c.Name, columnSchema(c))
		req = append(req, c.Name)
	}
	s := newMap().set("type", "object")
	if len(req) > 0 {
		s.set("required", req)
	}
	s.set("properties", props)
	return s
}
