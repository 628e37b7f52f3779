package spec

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// bodyExamples returns the examples of a request body with schema s: one
// body the schema accepts (its required properties), which a reference page offers (and its try-it
// sends) instead of a value it makes up from the types alone, such as an
// empty string for a text with a minimum length. It returns nil when no
// generated body passes s (a pattern, say): no example beats a wrong one.
func bodyExamples(s *jsonschema.Schema) *omap {
	v, ok := validExample(s)
	if !ok {
		return nil
	}
	v, err := toValue(v) // the ordered tree, keys sorted
	if err != nil {
		return nil
	}
	return newMap().set("valid", newMap().
		set("summary", "A body the schema accepts").
		set("value", v))
}

// validExample generates a value from s (its own examples, defaults,
// enums and bounds first) and returns it only when s validates it.
func validExample(s *jsonschema.Schema) (any, bool) {
	if s == nil {
		return nil, false
	}
	g := exampleGen{root: s}
	v, ok := g.value(s, 0)
	if !ok {
		return nil, false
	}
	// What a client sends is JSON: validate the value as decoded from it.
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		return nil, false
	}
	rs, err := s.Resolve(nil)
	if err != nil || rs.Validate(inst) != nil {
		return nil, false
	}
	return inst, true
}

type exampleGen struct{ root *jsonschema.Schema }

// maxExampleDepth bounds recursive schemas.
const maxExampleDepth = 8

func (g exampleGen) value(s *jsonschema.Schema, depth int) (any, bool) {
	if s == nil || depth > maxExampleDepth {
		return nil, false
	}
	switch {
	case s.Const != nil:
		return *s.Const, true
	case len(s.Examples) > 0:
		return s.Examples[0], true
	case len(s.Default) > 0:
		var v any
		if json.Unmarshal(s.Default, &v) == nil {
			return v, true
		}
	case len(s.Enum) > 0:
		return s.Enum[0], true
	case s.Ref != "":
		return g.value(g.def(s.Ref), depth+1)
	}
	for _, alts := range [][]*jsonschema.Schema{s.OneOf, s.AnyOf} {
		for _, a := range alts {
			if v, ok := g.value(a, depth+1); ok {
				return v, true
			}
		}
	}
	typ := s.Type
	if typ == "" {
		for _, t := range s.Types {
			if t != "null" {
				typ = t
				break
			}
		}
		if typ == "" && len(s.Types) > 0 {
			typ = "null"
		}
	}
	if typ == "" && s.Properties != nil {
		typ = "object"
	}
	switch typ {
	case "object":
		// The required properties only: a property the table fills itself
		// (an id, a timestamp) is better left out of a body offered to
		// send. With none required (an update), one property, a boolean
		// when there is one.
		out := map[string]any{}
		for _, r := range s.Required {
			v, ok := g.value(s.Properties[r], depth+1)
			if !ok {
				return nil, false // required but not described, or no value
			}
			out[r] = v
		}
		if len(out) == 0 && depth == 0 {
			names := make([]string, 0, len(s.Properties))
			for n := range s.Properties {
				names = append(names, n)
			}
			sort.Slice(names, func(i, j int) bool {
				bi, bj := s.Properties[names[i]].Type == "boolean", s.Properties[names[j]].Type == "boolean"
				if bi != bj {
					return bi
				}
				return names[i] < names[j]
			})
			for _, n := range names {
				if v, ok := g.value(s.Properties[n], depth+1); ok {
					out[n] = v
					break
				}
			}
		}
		return out, true
	case "array":
		if s.Items == nil {
			return []any{}, true
		}
		item, ok := g.value(s.Items, depth+1)
		if !ok {
			return []any{}, true
		}
		n := 1
		if s.MinItems != nil && *s.MinItems > n {
			n = *s.MinItems
		}
		if s.MaxItems != nil && *s.MaxItems < n {
			n = *s.MaxItems
		}
		out := make([]any, n)
		for i := range out {
			out[i] = item
		}
		return out, true
	case "string":
		return stringExample(s)
	case "integer", "number":
		return numberExample(s, typ == "integer")
	case "boolean":
		return false, true
	case "null":
		return nil, true
	}
	return nil, false
}

// def returns the schema a local reference (#/$defs/x, #/definitions/x)
// names in the root, or nil.
func (g exampleGen) def(ref string) *jsonschema.Schema {
	if name, ok := strings.CutPrefix(ref, "#/$defs/"); ok {
		return g.root.Defs[name]
	}
	if name, ok := strings.CutPrefix(ref, "#/definitions/"); ok {
		return g.root.Definitions[name]
	}
	return nil
}

func stringExample(s *jsonschema.Schema) (any, bool) {
	if s.Pattern != "" {
		return nil, false // not guessed: without an example, none
	}
	v := "string"
	switch s.Format {
	case "date-time":
		v = "2026-01-01T12:00:00Z"
	case "date":
		v = "2026-01-01"
	case "time":
		v = "12:00:00Z"
	case "uuid":
		v = "00000000-0000-4000-8000-000000000000"
	case "email":
		v = "user@example.com"
	case "uri", "url":
		v = "https://example.com/"
	}
	if s.MinLength != nil && len([]rune(v)) < *s.MinLength {
		v += strings.Repeat("x", *s.MinLength-len([]rune(v)))
	}
	if s.MaxLength != nil && len([]rune(v)) > *s.MaxLength {
		v = string([]rune(v)[:*s.MaxLength])
	}
	return v, true
}

func numberExample(s *jsonschema.Schema, integer bool) (any, bool) {
	v := 0.0
	if s.Minimum != nil {
		v = *s.Minimum
	}
	if s.ExclusiveMinimum != nil && v <= *s.ExclusiveMinimum {
		v = *s.ExclusiveMinimum + 1
	}
	if s.Maximum != nil && v > *s.Maximum {
		v = *s.Maximum
	}
	if s.ExclusiveMaximum != nil && v >= *s.ExclusiveMaximum {
		v = *s.ExclusiveMaximum - 1
	}
	if m := s.MultipleOf; m != nil && *m > 0 {
		v = math.Ceil(v / *m) * *m
	}
	if integer {
		v = math.Ceil(v)
		return int64(v), true
	}
	return v, true
}
