package mcptools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// HandlerTools serves the operations of a described handler (one that is
// not a rest.Resource, such as package authz's approvals endpoint) as
// tools, for [Config].Handlers.
type HandlerTools struct {
	// Handler serves the operations, relative to its mount point.
	Handler rest.DescribedHandler
	// Guard, when set, is checked on every call after the transport's
	// guard, as [Config].Guards for resources.
	Guard func(authctx.Auth) *problem.Problem
}

// handlerTool is one operation of a described handler served as a tool.
type handlerTool struct {
	h      rest.DescribedHandler
	op     rest.HandlerOperation
	def    *mcp.Tool
	params []string // path parameter names, in schema order
	query  map[string]bool
	guard  func(authctx.Auth) *problem.Problem
}

// newHandlerTool builds the tool of one operation: its arguments are the
// path and query parameters by name, plus data for a body.
func newHandlerTool(h rest.DescribedHandler, op rest.HandlerOperation, guard func(authctx.Auth) *problem.Problem) (*handlerTool, error) {
	if op.ID == "" || op.Method == "" || !strings.HasPrefix(op.Path, "/") {
		return nil, fmt.Errorf("an operation needs an ID, a method and a path starting with /")
	}
	t := &handlerTool{h: h, op: op, guard: guard, query: map[string]bool{}}
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, AdditionalProperties: falseSchema()}
	if op.Params != nil {
		for _, name := range orderedProps(op.Params) {
			in.Properties[name] = op.Params.Properties[name]
			in.PropertyOrder = append(in.PropertyOrder, name)
			in.Required = append(in.Required, name)
			t.params = append(t.params, name)
		}
	}
	if op.Query != nil {
		for _, name := range orderedProps(op.Query) {
			if _, dup := in.Properties[name]; dup {
				return nil, fmt.Errorf("query parameter %s is also a path parameter", name)
			}
			in.Properties[name] = op.Query.Properties[name]
			in.PropertyOrder = append(in.PropertyOrder, name)
			t.query[name] = true
		}
		in.Required = append(in.Required, op.Query.Required...)
	}
	if op.Input != nil {
		in.Properties[argData] = op.Input
		in.PropertyOrder = append(in.PropertyOrder, argData)
		in.Required = append(in.Required, argData)
	}
	desc := op.Summary
	if op.Description != "" {
		desc = op.Description
	}
	t.def = &mcp.Tool{
		Name: op.ID, Title: op.Summary,
		Description: desc + " Errors are RFC 9457 Problem Details JSON.",
		InputSchema: in,
	}
	if op.Output != nil && op.Output.Type == "object" {
		t.def.OutputSchema = op.Output
	}
	a := &mcp.ToolAnnotations{OpenWorldHint: jsonschema.Ptr(false)}
	if op.ReadOnly {
		a.ReadOnlyHint, a.IdempotentHint = true, true
	} else {
		a.DestructiveHint = jsonschema.Ptr(false)
	}
	t.def.Annotations = a
	return t, nil
}

func orderedProps(s *jsonschema.Schema) []string {
	names := slices.Clone(s.PropertyOrder)
	for _, n := range slices.Sorted(maps.Keys(s.Properties)) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names
}

// handlerToolFunc answers a call by running the handler in-process on the
// request the same call makes over HTTP, as the caller of the call.
func (s *Server) handlerToolFunc(t *handlerTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, raw, refused := s.admit(req, t.guard)
		if refused != nil {
			return refused, nil
		}
		hr, p := t.request(ctx, raw)
		if p != nil {
			return s.problemResult(p), nil
		}
		hr = hr.WithContext(authctx.WithResult(hr.Context(), authctx.Result{Auth: a}))
		w := &bodyWriter{h: http.Header{}}
		t.h.ServeHTTP(w, hr)
		if w.status == 0 {
			w.status = http.StatusOK
		}
		if w.status >= 400 {
			meta := mcp.Meta{MetaStatus: w.status}
			if ra := w.h.Get("Retry-After"); ra != "" {
				meta[MetaRetryAfter] = ra
			}
			return &mcp.CallToolResult{IsError: true, Meta: meta,
				Content: []mcp.Content{&mcp.TextContent{Text: string(bytes.TrimSuffix(w.body.Bytes(), []byte("\n")))}}}, nil
		}
		return result(&rest.Result{Status: w.status, Body: w.body.Bytes(), ContentType: w.h.Get("Content-Type")}), nil
	}
}

// request builds the HTTP request of a call from its arguments. Errors
// are 400 problems naming the argument, never its value.
func (t *handlerTool) request(ctx context.Context, raw json.RawMessage) (*http.Request, *problem.Problem) {
	args := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, badArg("", "The arguments must be a JSON object.")
		}
	}
	path := t.op.Path
	for _, name := range t.params {
		var v string
		if err := json.Unmarshal(args[name], &v); err != nil || v == "" {
			return nil, badArg(name, "required: a non-empty string")
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(v), 1)
	}
	q := url.Values{}
	var body []byte
	for _, name := range slices.Sorted(maps.Keys(args)) {
		v := args[name]
		switch {
		case slices.Contains(t.params, name):
		case t.query[name]:
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(bytes.TrimSpace(v)) // numbers and booleans as written
			}
			q.Set(name, s)
		case name == argData && t.op.Input != nil:
			body = v
		default:
			return nil, badArg(name, "unknown argument")
		}
	}
	u := "http://mcp.invalid" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	hr, err := http.NewRequestWithContext(ctx, t.op.Method, u, bytes.NewReader(body))
	if err != nil {
		return nil, badArg("", "The arguments do not form a request.")
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	return hr, nil
}
