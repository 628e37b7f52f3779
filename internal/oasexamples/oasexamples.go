// Package oasexamples checks that every example of an OpenAPI 3.1 document
// validates against its own schema, with the JSON Schema library tablegate
// uses (github.com/google/jsonschema-go). Tests use it on generated
// documents.
package oasexamples

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Check walks doc (an OpenAPI 3.1 document as JSON) and validates:
//
//   - beside a "schema" (a media type, a parameter, a header): its
//     "example", and the "value" of each entry of its "examples" map,
//     against that schema;
//   - in a schema object: its "example" and each item of its "examples"
//     array, against the schema itself.
//
// References to #/components/schemas/... resolve within doc. It returns
// the number of examples checked and one error per example that fails,
// named by its JSON pointer.
func Check(doc []byte) (int, []error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return 0, []error{fmt.Errorf("document: %w", err)}
	}
	c := &checker{defs: map[string]any{}}
	if comps, ok := root["components"].(map[string]any); ok {
		if schemas, ok := comps["schemas"].(map[string]any); ok {
			for k, v := range schemas {
				c.defs[k] = rewriteRefs(v)
			}
		}
	}
	c.walk(root, "", false)
	return c.n, c.errs
}

type checker struct {
	defs map[string]any
	n    int
	errs []error
}

// walk visits v at pointer ptr; inSchema reports that v is a schema
// object (the value of a "schema" key, or nested in one).
func (c *checker) walk(v any, ptr string, inSchema bool) {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			c.walk(e, fmt.Sprintf("%s/%d", ptr, i), inSchema)
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if s, ok := x["schema"]; ok && !inSchema {
			if ex, ok := x["example"]; ok {
				c.check(s, ex, ptr+"/example")
			}
			if exs, ok := x["examples"].(map[string]any); ok {
				for name, e := range exs {
					if em, ok := e.(map[string]any); ok {
						if val, ok := em["value"]; ok {
							c.check(s, val, ptr+"/examples/"+name+"/value")
						}
					}
				}
			}
		}
		if inSchema {
			if ex, ok := x["example"]; ok {
				c.check(x, ex, ptr+"/example")
			}
			if exs, ok := x["examples"].([]any); ok {
				for i, e := range exs {
					c.check(x, e, fmt.Sprintf("%s/examples/%d", ptr, i))
				}
			}
		}
		for _, k := range keys {
			child := ptr + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
			switch {
			case inSchema && (k == "example" || k == "examples" || k == "enum" || k == "const" || k == "default"):
				// values, not schemas
			case !inSchema && (k == "example" || k == "examples"):
				// checked above; an examples map holds values
			case k == "schema":
				c.walk(x[k], child, true)
			case k == "schemas" && ptr == "/components":
				if schemas, ok := x[k].(map[string]any); ok {
					for name, s := range schemas {
						c.walk(s, child+"/"+name, true)
					}
				}
			case inSchema && k == "properties":
				if props, ok := x[k].(map[string]any); ok {
					for name, p := range props {
						c.walk(p, child+"/"+name, true)
					}
				}
			default:
				c.walk(x[k], child, inSchema)
			}
		}
	}
}

// check validates value against schema s (with every component schema
// as $defs), counting it.
func (c *checker) check(s, value any, ptr string) {
	c.n++
	sm, ok := rewriteRefs(s).(map[string]any)
	if !ok {
		return // a boolean schema
	}
	full := map[string]any{"$defs": c.defs}
	for k, v := range sm {
		if k != "example" && k != "examples" {
			full[k] = v
		}
	}
	b, err := json.Marshal(full)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: schema: %w", ptr, err))
		return
	}
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: schema: %w", ptr, err))
		return
	}
	rs, err := js.Resolve(nil)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("%s: schema: %w", ptr, err))
		return
	}
	if err := rs.Validate(value); err != nil {
		got, _ := json.Marshal(value)
		c.errs = append(c.errs, fmt.Errorf("%s: example %s does not validate: %w", ptr, got, err))
	}
}

// rewriteRefs returns a copy of v whose #/components/schemas/ references
// point at #/$defs/.
func rewriteRefs(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				out[k] = strings.Replace(s, "#/components/schemas/", "#/$defs/", 1)
				continue
			}
			out[k] = rewriteRefs(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = rewriteRefs(e)
		}
		return out
	}
	return v
}
