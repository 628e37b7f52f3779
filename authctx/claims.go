package authctx

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/problem"
)

// ClaimsSchema types the verified claims of a token: claims that fail it
// make the caller invalid (401 CLAIMS_INVALID, naming paths). Build one
// with [ClaimsOf] (a Go type), [ClaimsJSONSchema] (a JSON Schema document)
// or [StandardClaimsSchema] (the conventional tenant/roles/memberships
// shape). A ClaimsSchema is immutable and safe for concurrent use.
//
// Applying a schema to a payload works like a Standard Schema parse whose
// output is merged over the payload one level deep:
//
//   - every top-level claim of the token stays (sub, exp, …);
//   - a property the schema lists is replaced by its parsed value, and a
//     missing one with a default gets the default;
//   - a nested object schema replaces the payload's object: properties it
//     does not list are dropped (like zod's z.object), unless the schema
//     sets additionalProperties to true or a schema (a loose object, like
//     z.looseObject), and additionalProperties false rejects them (like
//     z.strictObject). Schemas inferred from Go structs strip.
//
// A failure names the failing JSON Pointer paths and never the values.
// Subschemas reached through $ref are validated (by google/jsonschema-go)
// but not shaped, and their failures are reported at the root path.
type ClaimsSchema struct {
	root     *node
	resolved *jsonschema.Resolved
	doc      json.RawMessage
}

// ClaimsOf infers a claims schema from the Go type T with
// google/jsonschema-go (json tags name the claims; fields without
// omitempty/omitzero are required). Typed access to the merged claims is
// [TypedClaims].
func ClaimsOf[T any]() (*ClaimsSchema, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, fmt.Errorf("authctx: claims schema: %w", err)
	}
	stripClosedObjects(s, true)
	return compileSchema(s)
}

// MustClaimsOf is [ClaimsOf] that panics on an error (for package-level
// variables; the error only depends on T).
func MustClaimsOf[T any]() *ClaimsSchema {
	s, err := ClaimsOf[T]()
	if err != nil {
		panic(err)
	}
	return s
}

// ClaimsJSONSchema builds a claims schema from a JSON Schema document
// (draft 2020-12 or draft-07) describing the claims object.
func ClaimsJSONSchema(raw []byte) (*ClaimsSchema, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("authctx: claims schema is not a JSON Schema: %w", err)
	}
	return compileSchema(&s)
}

// Schema returns the JSON Schema document of the claims (for docs).
func (cs *ClaimsSchema) Schema() json.RawMessage { return cs.doc }

func compileSchema(s *jsonschema.Schema) (*ClaimsSchema, error) {
	if s.Type != "" && s.Type != "object" {
		return nil, errors.New("authctx: a claims schema must describe an object")
	}
	rs, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, fmt.Errorf("authctx: claims schema: %w", err)
	}
	root, err := compileNode(s, 0)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("authctx: claims schema: %w", err)
	}
	return &ClaimsSchema{root: root, resolved: rs, doc: doc}, nil
}

// stripClosedObjects turns the additionalProperties:false that schema
// inference puts on structs into "absent" (strip semantics), recursively.
func stripClosedObjects(s *jsonschema.Schema, top bool) {
	if s == nil {
		return
	}
	if isFalseSchema(s.AdditionalProperties) {
		s.AdditionalProperties = nil
	}
	for _, p := range s.Properties {
		stripClosedObjects(p, false)
	}
	stripClosedObjects(s.Items, false)
	_ = top
}

func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil {
		return false
	}
	b, err := json.Marshal(s.Not)
	return err == nil && (string(b) == "true" || string(b) == "{}")
}

type extraMode int

const (
	extraStrip  extraMode = iota // additionalProperties absent
	extraLoose                   // true or a schema
	extraStrict                  // false
)

// node is the part of a JSON Schema used to shape the output and to name
// failing paths; jsonschema-go gives the final verdict.
type node struct {
	types     []string
	props     map[string]*node
	order     []string
	required  []string
	extra     extraMode
	extraNode *node
	items     *node
	def       json.RawMessage
	enum      []any
	pattern   *regexp.Regexp
	format    string
	minLen    *int
	maxLen    *int
	minItems  *int
	maxItems  *int
}

func compileNode(s *jsonschema.Schema, depth int) (*node, error) {
	if s == nil {
		return nil, nil
	}
	if depth > 32 {
		return nil, errors.New("authctx: claims schema nested too deep")
	}
	n := &node{def: s.Default, enum: s.Enum, format: s.Format, minLen: s.MinLength, maxLen: s.MaxLength,
		minItems: s.MinItems, maxItems: s.MaxItems, required: s.Required}
	if s.Type != "" {
		n.types = []string{s.Type}
	} else {
		n.types = s.Types
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			return nil, fmt.Errorf("authctx: claims schema pattern: %w", err)
		}
		n.pattern = re
	}
	switch {
	case s.AdditionalProperties == nil:
		n.extra = extraStrip
	case isFalseSchema(s.AdditionalProperties):
		n.extra = extraStrict
	default:
		n.extra = extraLoose
		en, err := compileNode(s.AdditionalProperties, depth+1)
		if err != nil {
			return nil, err
		}
		n.extraNode = en
	}
	if len(s.Properties) > 0 {
		n.props = make(map[string]*node, len(s.Properties))
		for k, p := range s.Properties {
			pn, err := compileNode(p, depth+1)
			if err != nil {
				return nil, err
			}
			n.props[k] = pn
			n.order = append(n.order, k)
		}
		sort.Strings(n.order)
	}
	if s.Items != nil {
		in, err := compileNode(s.Items, depth+1)
		if err != nil {
			return nil, err
		}
		n.items = in
	}
	return n, nil
}

// ClaimsError reports the paths at which verified claims failed the
// claims schema (reason claims) or the profile schema. It never holds
// claim values.
type ClaimsError struct {
	// Errors lists each failing path (JSON Pointer) and what is wrong.
	Errors []problem.FieldError
}

// Error implements error.
func (e *ClaimsError) Error() string {
	paths := make([]string, 0, len(e.Errors))
	for _, f := range e.Errors {
		p := f.Path
		if p == "" {
			p = "/"
		}
		paths = append(paths, p+" "+f.Message)
	}
	return "authctx: claims failed the schema: " + strings.Join(paths, "; ")
}

// Apply parses payload with the schema and returns the merged claims. The
// payload is not modified. On failure the error is a *[ClaimsError].
func (cs *ClaimsSchema) Apply(payload Claims) (Claims, error) {
	out, errs := cs.parse(map[string]any(payload))
	if len(errs) > 0 {
		return nil, &ClaimsError{Errors: errs}
	}
	merged := make(Claims, len(payload)+len(out))
	for k, v := range payload {
		merged[k] = v
	}
	for k, v := range out {
		merged[k] = v
	}
	return merged, nil
}

// parse returns the schema output for the listed top-level properties.
func (cs *ClaimsSchema) parse(payload map[string]any) (map[string]any, []problem.FieldError) {
	var errs []problem.FieldError
	out := map[string]any{}
	root := cs.root
	for _, k := range root.order {
		pn := root.props[k]
		path := "/" + escapePointer(k)
		if v, ok := payload[k]; ok {
			out[k] = shape(v, pn, path, &errs, 0)
			continue
		}
		if pn != nil && len(pn.def) > 0 {
			var d any
			if err := json.Unmarshal(pn.def, &d); err == nil {
				out[k] = d
			}
		}
	}
	for _, r := range root.required {
		if _, ok := out[r]; !ok {
			errs = append(errs, problem.FieldError{Path: "/" + escapePointer(r), Message: "is required"})
		}
	}
	if root.extra == extraLoose {
		for k, v := range payload {
			if _, listed := root.props[k]; !listed {
				if root.extraNode != nil {
					_ = shape(v, root.extraNode, "/"+escapePointer(k), &errs, 0)
				}
			}
		}
	}
	if len(errs) == 0 {
		inst := out
		if root.extra == extraLoose {
			inst = make(map[string]any, len(payload))
			for k, v := range payload {
				inst[k] = v
			}
			for k, v := range out {
				inst[k] = v
			}
		}
		if err := cs.resolved.Validate(inst); err != nil {
			errs = append(errs, problem.FieldError{Path: "", Message: "claims do not match the schema"})
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Path < errs[j].Path })
	return out, errs
}

// shape returns the schema output of v and records failing paths.
func shape(v any, n *node, path string, errs *[]problem.FieldError, depth int) any {
	if n == nil {
		return v
	}
	if depth > 64 {
		*errs = append(*errs, problem.FieldError{Path: path, Message: "is nested too deep"})
		return v
	}
	fail := func(msg string) { *errs = append(*errs, problem.FieldError{Path: path, Message: msg}) }
	jt := jsonType(v)
	if len(n.types) > 0 && !typeAllowed(n.types, jt, v) {
		fail("must be of type " + strings.Join(n.types, " or "))
		return v
	}
	if len(n.enum) > 0 {
		found := false
		for _, e := range n.enum {
			if jsonschema.Equal(e, v) {
				found = true
				break
			}
		}
		if !found {
			fail("is not one of the allowed values")
		}
	}
	switch x := v.(type) {
	case string:
		if n.pattern != nil && !n.pattern.MatchString(x) {
			fail("does not match the required pattern")
		}
		if n.format == "uuid" && !uuidRE.MatchString(x) {
			fail("must be a uuid")
		}
		l := len([]rune(x))
		if n.minLen != nil && l < *n.minLen {
			fail("is too short")
		}
		if n.maxLen != nil && l > *n.maxLen {
			fail("is too long")
		}
		return x
	case []any:
		if n.minItems != nil && len(x) < *n.minItems {
			fail("has too few items")
		}
		if n.maxItems != nil && len(x) > *n.maxItems {
			fail("has too many items")
		}
		if n.items == nil {
			return x
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = shape(e, n.items, fmt.Sprintf("%s/%d", path, i), errs, depth+1)
		}
		return out
	case map[string]any:
		if n.props == nil && n.extra != extraStrict && n.extraNode == nil {
			return x
		}
		out := make(map[string]any, len(x))
		for _, k := range n.order {
			pn := n.props[k]
			if e, ok := x[k]; ok {
				out[k] = shape(e, pn, path+"/"+escapePointer(k), errs, depth+1)
			} else if pn != nil && len(pn.def) > 0 {
				var d any
				if err := json.Unmarshal(pn.def, &d); err == nil {
					out[k] = d
				}
			}
		}
		for _, r := range n.required {
			if _, ok := out[r]; !ok {
				*errs = append(*errs, problem.FieldError{Path: path + "/" + escapePointer(r), Message: "is required"})
			}
		}
		for k, e := range x {
			if _, listed := n.props[k]; listed {
				continue
			}
			switch n.extra {
			case extraLoose:
				out[k] = shape(e, n.extraNode, path+"/"+escapePointer(k), errs, depth+1)
			case extraStrict:
				*errs = append(*errs, problem.FieldError{Path: path + "/" + escapePointer(k), Message: "is not allowed"})
			}
		}
		return out
	}
	return v
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeAllowed(types []string, jt string, v any) bool {
	for _, t := range types {
		if t == jt || (t == "number" && jt == "integer") {
			return true
		}
		if t == "integer" && jt == "number" {
			if n, ok := v.(json.Number); ok {
				if _, err := n.Int64(); err == nil {
					return true
				}
			}
		}
	}
	return false
}

func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// TypedClaims decodes the (merged) claims of a user into T, the type the
// claims schema was built from (or any type the claims JSON fits). It
// fails for a non-user state.
func TypedClaims[T any](a Auth) (T, error) {
	var t T
	if a.Kind != KindUser || a.User == nil {
		return t, fmt.Errorf("authctx: TypedClaims of a %s state", a.Kind)
	}
	raw := a.User.db.Claims()
	if raw == nil {
		b, err := json.Marshal(a.User.Claims)
		if err != nil {
			return t, fmt.Errorf("authctx: claims: %w", err)
		}
		raw = b
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("authctx: claims do not fit %T: %w", t, err)
	}
	return t, nil
}

// ProfileAs returns a user's profile (the user_metadata parsed with the
// Config.UserMetadata schema) decoded into T. ok is false when there is
// no profile (no schema, no user, or user_metadata failed the schema).
func ProfileAs[T any](a Auth) (T, bool) {
	var t T
	if a.Kind != KindUser || a.User == nil || a.User.Profile == nil {
		return t, false
	}
	b, err := json.Marshal(a.User.Profile)
	if err != nil {
		return t, false
	}
	if err := json.Unmarshal(b, &t); err != nil {
		return t, false
	}
	return t, true
}

// parseProfile parses the user_metadata claim with the profile schema.
// Profile is display-only: a failure yields no profile, never an error.
func parseProfile(cs *ClaimsSchema, claims Claims) any {
	um, ok := claims["user_metadata"].(map[string]any)
	if !ok {
		return nil
	}
	out, err := cs.Apply(um)
	if err != nil {
		return nil
	}
	// A profile is the schema output, not the raw metadata: keep only
	// what the schema describes unless it is a loose object.
	if cs.root.extra != extraLoose {
		p := make(map[string]any, len(cs.root.props))
		for k := range cs.root.props {
			if v, ok := out[k]; ok {
				p[k] = v
			}
		}
		return p
	}
	return map[string]any(out)
}
