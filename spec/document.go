package spec

import (
	"bytes"
	"encoding/json"
)

// The OpenAPI document is built from typed structs (document, operation,
// parameter, …) whose MarshalJSON writes their fields in the order the
// OpenAPI specification lists them and leaves empty optional fields out.
// JSON Schemas stay ordered trees (*omap): they come from jsonschema-go
// and from the column types, and are open-ended.

// document is an OpenAPI 3.1 document.
type document struct {
	OpenAPI           string
	Info              info
	JSONSchemaDialect string
	Servers           []server
	Tags              []tag
	Paths             *ordered[*pathItem]
	Components        components
	// Permissions is x-service-permissions: permission key → description.
	Permissions *ordered[string]
}

func (d *document) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("openapi", d.OpenAPI)
	w.add("info", d.Info)
	w.add("jsonSchemaDialect", d.JSONSchemaDialect)
	w.add("servers", d.Servers)
	w.add("tags", d.Tags)
	w.add("paths", d.Paths)
	w.add("components", d.Components)
	if d.Permissions != nil {
		w.add("x-service-permissions", d.Permissions)
	}
	return w.close()
}

type info struct {
	Title, Version, Description string
	Contact                     *contact
	License                     *license
}

func (i info) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("title", i.Title)
	w.add("version", i.Version)
	w.opt("description", i.Description, i.Description != "")
	w.opt("contact", i.Contact, i.Contact != nil)
	w.opt("license", i.License, i.License != nil)
	return w.close()
}

type contact struct{ Name, URL, Email string }

func (c *contact) MarshalJSON() ([]byte, error) {
	var w fields
	w.opt("name", c.Name, c.Name != "")
	w.opt("url", c.URL, c.URL != "")
	w.opt("email", c.Email, c.Email != "")
	return w.close()
}

// license has an SPDX Identifier or a URL, not both.
type license struct{ Name, Identifier, URL string }

func (l *license) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("name", l.Name)
	w.opt("identifier", l.Identifier, l.Identifier != "")
	w.opt("url", l.URL, l.URL != "")
	return w.close()
}

type server struct{ URL string }

func (s server) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("url", s.URL)
	return w.close()
}

type tag struct{ Name, Description string }

func (t tag) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("name", t.Name)
	w.opt("description", t.Description, t.Description != "")
	return w.close()
}

// httpMethods is the order of operations inside a path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// pathItem holds the operations of one path, by lower-case method.
type pathItem struct {
	ops map[string]*operation
}

func (p *pathItem) MarshalJSON() ([]byte, error) {
	var w fields
	for _, m := range httpMethods {
		if op, ok := p.ops[m]; ok {
			w.add(m, op)
		}
	}
	return w.close()
}

type operation struct {
	ID, Summary, Description string
	Tags                     []string
	Deprecated               bool
	Parameters               []*parameter
	RequestBody              *requestBody
	Responses                *ordered[any] // status → *response or a $ref
	Security                 []*omap
	// Extensions x-service-allow, x-service-permission, x-service-emits,
	// and x-service-rls: false (NoRLS).
	Allow      []string
	Permission string
	Emits      []string
	NoRLS      bool
}

func (o *operation) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("operationId", o.ID)
	w.add("tags", o.Tags)
	w.add("summary", o.Summary)
	w.opt("description", o.Description, o.Description != "")
	w.opt("deprecated", true, o.Deprecated)
	w.opt("parameters", o.Parameters, len(o.Parameters) > 0)
	w.opt("requestBody", o.RequestBody, o.RequestBody != nil)
	w.add("responses", o.Responses)
	w.add("security", o.Security)
	w.opt("x-service-allow", o.Allow, o.Allow != nil)
	w.opt("x-service-permission", o.Permission, o.Permission != "")
	w.opt("x-service-emits", o.Emits, len(o.Emits) > 0)
	w.opt("x-service-rls", false, o.NoRLS)
	return w.close()
}

type parameter struct {
	Name, In, Description string
	// Required is written when set (explicit false included).
	Required *bool
	// Form is style form with explode, for array parameters.
	Form   bool
	Schema any
}

func (p *parameter) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("name", p.Name)
	w.add("in", p.In)
	w.opt("required", p.Required, p.Required != nil)
	w.opt("description", p.Description, p.Description != "")
	w.opt("style", "form", p.Form)
	w.opt("explode", true, p.Form)
	w.add("schema", p.Schema)
	return w.close()
}

type requestBody struct {
	Required bool
	Content  *ordered[*mediaType]
}

func (r *requestBody) MarshalJSON() ([]byte, error) {
	var w fields
	w.opt("required", true, r.Required)
	w.add("content", r.Content)
	return w.close()
}

type mediaType struct {
	Schema   any
	Examples *omap
	// Extensions are written last, in order (x-service-events, …).
	Extensions *omap
}

func (m *mediaType) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("schema", m.Schema)
	w.opt("examples", m.Examples, m.Examples != nil)
	if m.Extensions != nil {
		for _, k := range m.Extensions.keys {
			w.add(k, m.Extensions.m[k])
		}
	}
	return w.close()
}

type response struct {
	Description string
	Headers     *ordered[*header]
	Content     *ordered[*mediaType]
}

func (r *response) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("description", r.Description)
	w.opt("headers", r.Headers, r.Headers != nil)
	w.opt("content", r.Content, r.Content != nil)
	return w.close()
}

type header struct {
	Description string
	Schema      any
}

func (h *header) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("description", h.Description)
	w.add("schema", h.Schema)
	return w.close()
}

type components struct {
	Schemas         *omap
	Responses       *ordered[*response]
	SecuritySchemes *ordered[*securityScheme]
}

func (c components) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("schemas", c.Schemas)
	w.add("responses", c.Responses)
	w.add("securitySchemes", c.SecuritySchemes)
	return w.close()
}

type securityScheme struct {
	Type, Scheme, BearerFormat, In, Name, Description string
}

func (s *securityScheme) MarshalJSON() ([]byte, error) {
	var w fields
	w.add("type", s.Type)
	w.opt("scheme", s.Scheme, s.Scheme != "")
	w.opt("bearerFormat", s.BearerFormat, s.BearerFormat != "")
	w.opt("in", s.In, s.In != "")
	w.opt("name", s.Name, s.Name != "")
	w.opt("description", s.Description, s.Description != "")
	return w.close()
}

// ordered is a JSON object with values of one type, keys in insertion
// order.
type ordered[V any] struct {
	keys []string
	m    map[string]V
}

func newOrdered[V any]() *ordered[V] { return &ordered[V]{m: map[string]V{}} }

// set adds or replaces k; a new key goes last.
func (o *ordered[V]) set(k string, v V) *ordered[V] {
	if _, ok := o.m[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.m[k] = v
	return o
}

func (o *ordered[V]) MarshalJSON() ([]byte, error) {
	var w fields
	for _, k := range o.keys {
		w.add(k, o.m[k])
	}
	return w.close()
}

// fields writes one JSON object, member by member, in call order.
type fields struct {
	b   bytes.Buffer
	err error
}

// add writes the member k: v.
func (w *fields) add(k string, v any) {
	if w.err != nil {
		return
	}
	if w.b.Len() == 0 {
		w.b.WriteByte('{')
	} else {
		w.b.WriteByte(',')
	}
	writeString(&w.b, k)
	w.b.WriteByte(':')
	b, err := json.Marshal(v)
	if err != nil {
		w.err = err
		return
	}
	w.b.Write(b)
}

// opt writes the member k: v when present.
func (w *fields) opt(k string, v any, present bool) {
	if present {
		w.add(k, v)
	}
}

func (w *fields) close() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.b.Len() == 0 {
		return []byte("{}"), nil
	}
	w.b.WriteByte('}')
	return w.b.Bytes(), nil
}

// tree renders v (a document or any part of it) as the ordered tree that
// the JSON, YAML and HTML renderers read.
func tree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return decodeOrdered(b)
}
