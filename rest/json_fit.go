package rest

import (
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// JSON kinds a column accepts in a body without an input schema, read
// from its input form (json_form.go): a value of another JSON type answers
// 400 naming the field instead of reaching Postgres, whose
// json_populate_record would read "yes" as true for a boolean column.
// null always passes (NOT NULL is the database's to report).
const (
	fitString uint8 = 1 << iota
	fitNumber
	fitBool
	fitObject
	fitArray
)

// fitKinds returns the JSON kinds a column of input form s accepts; 0
// means any JSON value. Numbers may also come as strings (int8 beyond
// 2^53, NaN and Infinity), and money as a number.
func fitKinds(s *jsonschema.Schema, typeName string) uint8 {
	types := s.Types
	if s.Type != "" {
		types = []string{s.Type}
	}
	var k uint8
	for _, t := range types {
		switch t {
		case "string":
			k |= fitString
		case "integer", "number":
			k |= fitNumber | fitString
		case "boolean":
			k |= fitBool
		case "object":
			k |= fitObject
		case "array":
			k |= fitArray
		}
	}
	if typeName == "money" {
		k |= fitNumber
	}
	return k
}

// fits reports whether v, a decoded JSON value (numbers as json.Number),
// is of a kind in k.
func fits(v any, k uint8) bool {
	if k == 0 {
		return true
	}
	switch v.(type) {
	case nil:
		return true
	case string:
		return k&fitString != 0
	case json.Number, float64:
		return k&fitNumber != 0
	case bool:
		return k&fitBool != 0
	case map[string]any:
		return k&fitObject != 0
	case []any:
		return k&fitArray != 0
	}
	return true
}

// fitMessage says which JSON types a column takes, e.g. "must be a JSON
// boolean (the column is boolean)".
func fitMessage(k uint8, colType string) string {
	var names []string
	if k&fitBool != 0 {
		names = append(names, "boolean")
	}
	if k&fitNumber != 0 {
		if k&fitString != 0 && k&fitBool == 0 {
			names = append(names, "number (or a string of one)")
			k &^= fitString
		} else {
			names = append(names, "number")
		}
	}
	if k&fitString != 0 {
		names = append(names, "string")
	}
	if k&fitObject != 0 {
		names = append(names, "object")
	}
	if k&fitArray != 0 {
		names = append(names, "array")
	}
	return "must be a JSON " + strings.Join(names, " or ") + " (the column is " + colType + ")"
}
