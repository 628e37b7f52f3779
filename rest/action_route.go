package rest

import (
	"github.com/google/jsonschema-go/jsonschema"

	"fmt"
	"net/http"
	"regexp"
	"strings"
)

var actionNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*$`)

// boundAction is an action checked and compiled for one resource.
type boundAction struct {
	*Action
	name    string
	segs    []string // path segments; "" is the key parameter
	item    bool
	docPath string // path with the key as {<key column>}
	input   *validator
	query   *validator
	qtypes  map[string]string // query property → JSON type for conversion
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// bindAction checks an action's name (not a CRUD name), method and path
// (under the collection or /{id}, no clash with CRUD routes) and compiles
// its schemas.
func (r *Resource) bindAction(name string, a *Action) (*boundAction, error) {
	if a == nil {
		return nil, fmt.Errorf("action %q is nil", name)
	}
	if !actionNameRE.MatchString(name) {
		return nil, fmt.Errorf("action name %q: must start with a letter and hold only letters, digits and '_'", name)
	}
	if Operation(name).IsCRUD() {
		return nil, fmt.Errorf("action name %q: must not be a CRUD operation name (list, get, create, update, delete)", name)
	}
	if a.err != nil {
		return nil, fmt.Errorf("action %q: %v", name, a.err)
	}
	if !validMethod(a.Method) {
		return nil, fmt.Errorf("action %q: method %q is not one of GET, POST, PUT, PATCH, DELETE", name, a.Method)
	}
	ba := &boundAction{Action: a, name: name}
	if !strings.HasPrefix(a.Path, "/") {
		return nil, fmt.Errorf("action %q: path %q must start with /", name, a.Path)
	}
	if a.Path != "/" {
		if strings.HasSuffix(a.Path, "/") {
			return nil, fmt.Errorf("action %q: path %q must not end with /", name, a.Path)
		}
		doc := make([]string, 0, 4)
		for i, seg := range strings.Split(a.Path[1:], "/") {
			switch {
			case seg == "":
				return nil, fmt.Errorf("action %q: path %q has an empty segment", name, a.Path)
			case strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}"):
				p := seg[1 : len(seg)-1]
				if p != "key" && p != r.key.Name {
					return nil, fmt.Errorf("action %q: path %q names parameter {%s}; the only path parameter allowed is the key {%s}", name, a.Path, p, r.key.Name)
				}
				if i != 0 {
					return nil, fmt.Errorf("action %q: path %q: the key parameter must be the first segment", name, a.Path)
				}
				ba.item = true
				ba.segs = append(ba.segs, "")
				doc = append(doc, "{"+r.key.Name+"}")
			case seg == "." || seg == "..":
				return nil, fmt.Errorf("action %q: path %q: segment %q would be resolved away by any ServeMux in front", name, a.Path, seg)
			case strings.ContainsAny(seg, "{}*?#%"):
				return nil, fmt.Errorf("action %q: path %q: segment %q holds a reserved character", name, a.Path, seg)
			default:
				ba.segs = append(ba.segs, seg)
				doc = append(doc, seg)
			}
		}
		ba.docPath = "/" + strings.Join(doc, "/")
	} else {
		ba.docPath = "/"
	}
	if a.Input != nil {
		v, err := newValidator(a.Input)
		if err != nil {
			return nil, fmt.Errorf("action %q: input schema: %v", name, err)
		}
		ba.input = v
	}
	if a.Query != nil {
		v, err := newValidator(a.Query)
		if err != nil {
			return nil, fmt.Errorf("action %q: query schema: %v", name, err)
		}
		if a.Query.Type != "object" {
			return nil, fmt.Errorf("action %q: query schema must be an object", name)
		}
		ba.query = v
		ba.qtypes = map[string]string{}
		for p, s := range a.Query.Properties {
			t := schemaType(s)
			ba.qtypes[p] = t
			if t == "array" && s.Items != nil {
				ba.qtypes[p] = "array:" + schemaType(s.Items)
			}
		}
	}
	return ba, nil
}

// checkRouteClashes rejects two routes with the same method and path shape.
func (r *Resource) checkRouteClashes() error {
	seen := map[string]string{}
	for _, op := range crud {
		if r.ops[op] {
			p := "/"
			if op.Item() {
				p = "/{}"
			}
			seen[op.Method()+" "+p] = string(op)
		}
	}
	for _, name := range r.actionNames {
		ba := r.actions[name]
		var b strings.Builder
		for _, s := range ba.segs {
			b.WriteByte('/')
			if s == "" {
				b.WriteString("{}")
			} else {
				b.WriteString(s)
			}
		}
		p := b.String()
		if p == "" {
			p = "/"
		}
		k := ba.Method + " " + p
		if other, ok := seen[k]; ok {
			return fmt.Errorf("action %q: route %s %s clashes with %q", name, ba.Method, ba.Path, other)
		}
		seen[k] = name
	}
	return nil
}

// schemaType returns the JSON type a query value is decoded as: Type, or
// the first non-null entry of Types (a Go pointer field infers
// ["null", "boolean"]; the value of ?done=true is then a boolean).
func schemaType(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	for _, t := range s.Types {
		if t != "null" {
			return t
		}
	}
	return ""
}
