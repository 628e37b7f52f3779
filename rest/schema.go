package rest

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/problem"
)

// validator validates decoded JSON against a resolved schema and reports
// failing paths (JSON Pointers) with value-free messages. The library's
// own errors echo values, so they are reduced to their keyword.
type validator struct {
	schema *jsonschema.Schema
	rs     *jsonschema.Resolved
	props  map[string]*validator // sub-validators for named properties
	items  *validator
}

// newValidator resolves s once (at build time).
func newValidator(s *jsonschema.Schema) (*validator, error) {
	if s == nil {
		return nil, fmt.Errorf("nil schema")
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return nil, err
	}
	v := &validator{schema: s, rs: rs}
	v.sub()
	return v, nil
}

// sub builds sub-validators for properties and items where they resolve on
// their own (they do not when they $ref the root's $defs; failures below
// them are then reported at the parent's path).
func (v *validator) sub() {
	s := v.schema
	for name, ps := range s.Properties {
		if ps == nil {
			continue
		}
		if rs, err := ps.Resolve(nil); err == nil {
			if v.props == nil {
				v.props = map[string]*validator{}
			}
			c := &validator{schema: ps, rs: rs}
			c.sub()
			v.props[name] = c
		}
	}
	if s.Items != nil {
		if rs, err := s.Items.Resolve(nil); err == nil {
			v.items = &validator{schema: s.Items, rs: rs}
			v.items.sub()
		}
	}
}

// check validates instance and returns the failing paths, nil when valid.
// Numbers may be json.Number (decoded with UseNumber).
func (v *validator) check(instance any) []problem.FieldError {
	instance = plainNumbers(instance)
	if v.rs.Validate(instance) == nil {
		return nil
	}
	var out []problem.FieldError
	v.walk("", instance, &out)
	return out
}

func (v *validator) walk(path string, inst any, out *[]problem.FieldError) {
	if v.rs.Validate(inst) == nil {
		return
	}
	n := len(*out)
	switch x := inst.(type) {
	case Row:
		v.walkObject(path, x, out)
	case map[string]any:
		v.walkObject(path, x, out)
	case []any:
		if v.items != nil {
			for i, e := range x {
				v.items.walk(fmt.Sprintf("%s/%d", path, i), e, out)
			}
		}
	}
	if len(*out) == n {
		err := v.rs.Validate(inst)
		*out = append(*out, problem.FieldError{Path: path, Message: keywordMessage(err)})
	}
}

func (v *validator) walkObject(path string, obj map[string]any, out *[]problem.FieldError) {
	s := v.schema
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			*out = append(*out, problem.FieldError{Path: path + "/" + pointerEscape(name), Message: "is required"})
		}
	}
	if isFalseSchema(s.AdditionalProperties) && len(s.PatternProperties) == 0 {
		var extra []string
		for k := range obj {
			if _, ok := s.Properties[k]; !ok {
				extra = append(extra, k)
			}
		}
		sort.Strings(extra)
		for _, k := range extra {
			*out = append(*out, problem.FieldError{Path: path + "/" + pointerEscape(k), Message: "is not allowed"})
		}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if pv := v.props[k]; pv != nil {
			pv.walk(path+"/"+pointerEscape(k), obj[k], out)
		}
	}
}

// plainNumbers returns a copy of a decoded JSON value with json.Number
// replaced by int64 or float64: the validator reads json.Number as a
// string. The copy is used for validation only; values keep every digit.
func plainNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case Row:
		return plainNumbers(map[string]any(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plainNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainNumbers(e)
		}
		return out
	}
	return v
}

func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	if s.Not != nil && s.Not.Type == "" && len(s.Not.Types) == 0 && len(s.Not.Properties) == 0 && s.Not.Ref == "" {
		return true
	}
	b, err := s.MarshalJSON()
	return err == nil && string(b) == "false"
}

// keywordMessage reduces a validation error to the failing keyword, so no
// value reaches the response.
func keywordMessage(err error) string {
	if err == nil {
		return "is invalid"
	}
	msg := err.Error()
	for strings.HasPrefix(msg, "validating ") {
		i := strings.Index(msg, ": ")
		if i < 0 {
			break
		}
		msg = msg[i+2:]
	}
	if strings.HasPrefix(msg, "unexpected additional properties") {
		return "has properties that are not allowed"
	}
	kw := msg
	if i := strings.IndexAny(kw, ":[ "); i >= 0 {
		kw = kw[:i]
	}
	for _, c := range kw {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return "does not match the schema"
		}
	}
	if kw == "" {
		return "does not match the schema"
	}
	return "fails " + kw
}

func pointerEscape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
