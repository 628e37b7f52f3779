package rest

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// SchemaTag is the struct tag whose validation keywords [SchemaFor],
// [MustSchemaFor] and [DefineAction] add to the schema inferred from a Go
// type. Schemas are inferred by github.com/google/jsonschema-go, whose own
// `jsonschema` tag is the property's description only (it refuses
// "minLength=3" there); the keywords go in this tag instead, comma
// separated:
//
//	type NewProject struct {
//		Name string   `json:"name" jsonschema:"the project's name" tablegate:"minLength=3,maxLength=80"`
//		Seats int     `json:"seats,omitempty" tablegate:"minimum=1,maximum=500"`
//		Tags []string `json:"tags,omitempty" tablegate:"maxItems=10,uniqueItems"`
//		Plan string   `json:"plan" tablegate:"enum=free|team|enterprise"`
//		Slug string   `json:"slug" tablegate:"pattern=^[a-z0-9-]+$"`
//	}
//
// Keywords: minLength, maxLength, pattern, format (strings); minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, multipleOf (numbers);
// minItems, maxItems, uniqueItems (arrays); minProperties, maxProperties
// (objects); enum (values separated by |, numbers for number and integer
// properties); title. pattern takes the rest of the tag, commas included,
// so it comes last. An unknown keyword or a malformed value fails
// inference (and so [NewResource]) naming the field.
//
// The keywords reach both the request validator (a body breaking them
// answers 400 naming the path and the keyword, never the value) and the
// OpenAPI and MCP descriptions, which are built from the same schema. For
// anything a tag cannot say, change the *jsonschema.Schema that SchemaFor
// returns before handing it to [Config.Input] or [ActionDef.Input]: it is
// the caller's, and the same object is validated and described.
const SchemaTag = "tablegate"

// inferSchema is jsonschema.ForType followed by the [SchemaTag] keywords,
// with a hint when a jsonschema tag holds a keyword.
func inferSchema(t reflect.Type) (*jsonschema.Schema, error) {
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		if strings.Contains(err.Error(), "tag must not begin with 'WORD='") {
			return nil, fmt.Errorf("%w (a jsonschema tag is the description only; put validation keywords in a %s tag: `%s:\"minLength=3\"`)",
				err, SchemaTag, SchemaTag)
		}
		return nil, err
	}
	if err := applySchemaTags(t, s, map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	return s, nil
}

// applySchemaTags walks t beside its inferred schema s and applies the
// [SchemaTag] keywords of struct fields to their property schemas.
func applySchemaTags(t reflect.Type, s *jsonschema.Schema, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || seen[t] {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return applySchemaTags(t.Elem(), s.Items, seen)
	case reflect.Map:
		return applySchemaTags(t.Elem(), s.AdditionalProperties, seen)
	case reflect.Struct:
	default:
		return nil
	}
	seen[t] = true
	defer delete(seen, t)
	for _, f := range reflect.VisibleFields(t) {
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, omit := jsonFieldName(f)
		if omit {
			continue
		}
		ps := s.Properties[name]
		if ps == nil {
			continue
		}
		if tag, ok := f.Tag.Lookup(SchemaTag); ok {
			if err := applySchemaTag(ps, tag); err != nil {
				return fmt.Errorf("field %s.%s: %s tag: %w", t, f.Name, SchemaTag, err)
			}
		}
		if err := applySchemaTags(f.Type, ps, seen); err != nil {
			return err
		}
	}
	return nil
}

// jsonFieldName is the property name encoding/json gives f, and whether
// it is omitted ("-").
func jsonFieldName(f reflect.StructField) (string, bool) {
	tag := f.Tag.Get("json")
	if tag == "-" {
		return "", true
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name, false
}

// applySchemaTag applies one tag's keywords to s.
func applySchemaTag(s *jsonschema.Schema, tag string) error {
	rest := strings.TrimSpace(tag)
	for rest != "" {
		var item string
		if strings.HasPrefix(rest, "pattern=") {
			item, rest = rest, ""
		} else {
			item, rest, _ = strings.Cut(rest, ",")
		}
		key, val, hasVal := strings.Cut(strings.TrimSpace(item), "=")
		if key == "" {
			continue
		}
		intVal := func() (*int, error) {
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%s wants a non-negative integer, got %q", key, val)
			}
			return &n, nil
		}
		numVal := func() (*float64, error) {
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return nil, fmt.Errorf("%s wants a number, got %q", key, val)
			}
			return &f, nil
		}
		if !hasVal && key != "uniqueItems" {
			return fmt.Errorf("%s needs a value (%s=…)", key, key)
		}
		var err error
		switch key {
		case "minLength":
			s.MinLength, err = intVal()
		case "maxLength":
			s.MaxLength, err = intVal()
		case "minItems":
			s.MinItems, err = intVal()
		case "maxItems":
			s.MaxItems, err = intVal()
		case "minProperties":
			s.MinProperties, err = intVal()
		case "maxProperties":
			s.MaxProperties, err = intVal()
		case "minimum":
			s.Minimum, err = numVal()
		case "maximum":
			s.Maximum, err = numVal()
		case "exclusiveMinimum":
			s.ExclusiveMinimum, err = numVal()
		case "exclusiveMaximum":
			s.ExclusiveMaximum, err = numVal()
		case "multipleOf":
			if s.MultipleOf, err = numVal(); err == nil && *s.MultipleOf <= 0 {
				err = fmt.Errorf("multipleOf must be positive")
			}
		case "uniqueItems":
			s.UniqueItems = !hasVal || val == "true"
		case "pattern":
			s.Pattern = val
		case "format":
			s.Format = val
		case "title":
			s.Title = val
		case "enum":
			s.Enum = nil
			numeric := s.Type == "integer" || s.Type == "number" ||
				(len(s.Types) > 0 && (contains(s.Types, "integer") || contains(s.Types, "number")))
			for _, v := range strings.Split(val, "|") {
				if !numeric {
					s.Enum = append(s.Enum, v)
					continue
				}
				f, perr := strconv.ParseFloat(v, 64)
				if perr != nil {
					return fmt.Errorf("enum of a number wants numbers, got %q", v)
				}
				s.Enum = append(s.Enum, f)
			}
		default:
			return fmt.Errorf("unknown keyword %q (known: minLength, maxLength, pattern, format, minimum, maximum, "+
				"exclusiveMinimum, exclusiveMaximum, multipleOf, minItems, maxItems, uniqueItems, minProperties, "+
				"maxProperties, enum, title)", key)
		}
		if err != nil {
			return err
		}
	}
	if s.Pattern != "" {
		if _, err := (&jsonschema.Schema{Pattern: s.Pattern}).Resolve(nil); err != nil {
			return fmt.Errorf("pattern: %w", err)
		}
	}
	return nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
