package spec

import (
	"fmt"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Keywords whose value is a schema, a map of schemas or a list of schemas
// (JSON Schema 2020-12), for walking embedded schemas.
var (
	schemaKeys = map[string]bool{
		"items": true, "additionalProperties": true, "not": true, "if": true, "then": true,
		"else": true, "contains": true, "propertyNames": true, "unevaluatedItems": true,
		"unevaluatedProperties": true, "contentSchema": true, "additionalItems": true,
	}
	schemaMapKeys  = map[string]bool{"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true}
	schemaListKeys = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "prefixItems": true}
)

// embedSchema converts a schema of a resource (inferred from a Go type or
// written by hand) into a schema that stands inside the OpenAPI document:
// its $defs move to components.schemas under owner+name and references to
// them are rewritten, $schema and $id are dropped (the document's dialect
// is JSON Schema 2020-12), and boolean subschemas in object positions
// become {} and {"not": {}}.
func (b *builder) embedSchema(s *jsonschema.Schema, owner string) (any, error) {
	v, err := toValue(s)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", owner, err)
	}
	v = boolSchema(v)
	o, ok := v.(*omap)
	if !ok {
		return nil, fmt.Errorf("schema %s: not an object", owner)
	}
	renames := map[string]string{}
	var defs []string
	for _, key := range []string{"$defs", "definitions"} {
		dv, ok := o.get(key)
		if !ok {
			continue
		}
		dm, ok := dv.(*omap)
		if !ok {
			return nil, fmt.Errorf("schema %s: %s is not an object", owner, key)
		}
		for _, name := range dm.keys {
			comp := componentName(owner + "_" + name)
			renames["#/"+key+"/"+name] = "#/components/schemas/" + comp
			defs = append(defs, key+"\x00"+name)
		}
	}
	sort.Strings(defs)
	rewriteRefs(o, renames)
	for _, kn := range defs {
		key, name, _ := strings.Cut(kn, "\x00")
		dv, _ := o.get(key)
		def, _ := dv.(*omap).get(name)
		comp := strings.TrimPrefix(renames["#/"+key+"/"+name], "#/components/schemas/")
		if err := b.addSchema(comp, def); err != nil {
			return nil, err
		}
	}
	o.del("$defs")
	o.del("definitions")
	o.del("$schema")
	o.del("$id")
	return o, nil
}

// boolSchema replaces boolean schemas in schema positions by objects, so
// every tool reads them (additionalProperties: false stays as it is).
func boolSchema(v any) any {
	switch x := v.(type) {
	case bool:
		if x {
			return newMap()
		}
		return newMap().set("not", newMap())
	case *omap:
		for _, k := range x.keys {
			val := x.m[k]
			switch {
			case k == "additionalProperties":
				if _, isBool := val.(bool); !isBool {
					x.m[k] = boolSchema(val)
				}
			case schemaKeys[k]:
				x.m[k] = boolSchema(val)
			case schemaMapKeys[k]:
				if m, ok := val.(*omap); ok {
					for _, pk := range m.keys {
						m.m[pk] = boolSchema(m.m[pk])
					}
				}
			case schemaListKeys[k]:
				if a, ok := val.([]any); ok {
					for i := range a {
						a[i] = boolSchema(a[i])
					}
				}
			}
		}
	}
	return v
}

// rewriteRefs rewrites every "$ref" (and "$dynamicRef") found in renames
// or below one of its targets.
func rewriteRefs(v any, renames map[string]string) {
	switch x := v.(type) {
	case *omap:
		for _, k := range x.keys {
			if k == "$ref" || k == "$dynamicRef" {
				if s, ok := x.m[k].(string); ok {
					for from, to := range renames {
						if s == from || strings.HasPrefix(s, from+"/") {
							x.m[k] = to + s[len(from):]
							break
						}
					}
				}
				continue
			}
			rewriteRefs(x.m[k], renames)
		}
	case []any:
		for _, e := range x {
			rewriteRefs(e, renames)
		}
	}
}

// componentName makes s a valid component name (^[a-zA-Z0-9.\-_]+$).
func componentName(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}
