package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/rest"
)

var varcharLen = regexp.MustCompile(`^character varying\((\d+)\)$`)

// columnSchema is the schema of a column in the row schema: the JSON form
// rest describes for it (row, the property of rest.Description.Row: what
// to_json writes, composites as objects, enums with their labels), with
// the OpenAPI formats of the number types (int32, int64, float, double),
// varchar(n)'s maxLength, readOnly and the Postgres type as
// x-postgres-type.
func columnSchema(c rest.Column, row *jsonschema.Schema) (*omap, error) {
	v, err := toValue(row)
	if err != nil {
		return nil, fmt.Errorf("schema of column %s: %w", c.Name, err)
	}
	s, ok := boolSchema(v).(*omap)
	if !ok {
		return nil, fmt.Errorf("schema of column %s: not an object", c.Name)
	}
	numberFormat(s, c.TypeName)
	if m := varcharLen.FindStringSubmatch(c.Type); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			s.set("maxLength", n)
		}
	}
	if c.ReadOnly {
		s.set("readOnly", true)
	}
	s.set("x-postgres-type", c.Type)
	return s, nil
}

// numberFormat adds the OpenAPI format of a number type (and of the
// elements of an array of one) to s.
func numberFormat(s *omap, typname string) {
	if len(typname) > 1 && typname[0] == '_' {
		// The elements, under as many levels of arrays as the schema has
		// (int4[][] nests arrays in one array type).
		for {
			items, ok := s.get("items")
			if !ok {
				break
			}
			if s, ok = items.(*omap); !ok {
				return
			}
		}
		typname = strings.TrimLeft(typname, "_")
	}
	switch typname {
	case "int2", "int4":
		s.set("format", "int32")
	case "int8":
		s.set("format", "int64")
	case "float4":
		s.set("format", "float")
	case "float8":
		s.set("format", "double")
	}
}

// keySchema is the schema of the key path parameter (never null): the key
// types rest takes (integers, uuid, text-like).
func keySchema(c rest.Column) *omap {
	s := newMap()
	switch c.TypeName {
	case "int2", "int4":
		s.set("type", "integer").set("format", "int32")
	case "int8":
		s.set("type", "integer").set("format", "int64")
	case "uuid":
		s.set("type", "string").set("format", "uuid")
	default:
		s.set("type", "string")
		if m := varcharLen.FindStringSubmatch(c.Type); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				s.set("maxLength", n)
			}
		}
	}
	return s
}

// rowSchema is the object schema of a row of the selected columns.
func rowSchema(d *rest.Description) (*omap, error) {
	props := newMap()
	var req []any
	for _, c := range d.Columns {
		cs, err := columnSchema(c, d.Row.Properties[c.Name])
		if err != nil {
			return nil, err
		}
		props.set(c.Name, cs)
		req = append(req, c.Name)
	}
	s := newMap().set("type", "object")
	if len(req) > 0 {
		s.set("required", req)
	}
	s.set("properties", props)
	return s, nil
}
