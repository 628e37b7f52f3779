package rest

import (
	"encoding/json"
	"sort"
	"strconv"
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

// misfit returns the path below the column and the message of the first
// value of v whose JSON type c does not take: v itself, the elements of an
// array column, the fields of a composite one. message is "" when v fits.
func (c *column) misfit(v any) (path, message string) {
	if !fits(v, c.fit) {
		return "", fitMessage(c.fit, c.Type)
	}
	switch v.(type) {
	case []any, map[string]any:
		if c.inForm != nil {
			return misfit(v, c.inForm, "")
		}
	}
	return "", ""
}

// misfit checks the elements (Items) or fields (Properties) of v against
// the form s, depth first.
func misfit(v any, s *jsonschema.Schema, path string) (string, string) {
	check := func(e any, es *jsonschema.Schema, p string) (string, string) {
		if k := fitKinds(es, ""); !fits(e, k) {
			return p, fitMessage(k, "")
		}
		return misfit(e, es, p)
	}
	switch x := v.(type) {
	case []any:
		if s.Items == nil {
			return "", ""
		}
		for i, e := range x {
			if p, m := check(e, s.Items, path+"/"+strconv.Itoa(i)); m != "" {
				return p, m
			}
		}
	case map[string]any:
		if len(s.Properties) == 0 {
			return "", ""
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			if s.Properties[k] != nil {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, m := check(x[k], s.Properties[k], path+"/"+pointerEscape(k)); m != "" {
				return p, m
			}
		}
	}
	return "", ""
}

// fitMessage says which JSON types a column (or, with colType "", a
// value inside one) takes, e.g. "must be a JSON boolean (the column is
// boolean)".
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
	if colType == "" {
		return "must be a JSON " + strings.Join(names, " or ")
	}
	return "must be a JSON " + strings.Join(names, " or ") + " (the column is " + colType + ")"
}
