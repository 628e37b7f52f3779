package mcptools

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// FuzzHandlerToolArgs: any arguments either become a 400 problem naming
// the argument or a request whose path stays below the operation's route
// (a path parameter cannot add segments or a query).
func FuzzHandlerToolArgs(f *testing.F) {
	for _, s := range []string{
		`{"id":"a0000000-0000-4000-8000-00000000000a"}`, `{"id":"../../x?y=1#z"}`, `{"id":1}`, `{}`, `null`, `[]`,
		`{"id":"x","state":"pending","limit":50}`, `{"id":"x","data":{"a":1}}`, `{"id":"x","nope":true}`, `{"id":"%2F"}`,
	} {
		f.Add([]byte(s))
	}
	h := rest.DescribeHandler(http.NotFoundHandler(), nil)
	t, err := newHandlerTool(h, rest.HandlerOperation{
		ID: "approveThing", Method: "POST", Path: "/{id}/approve",
		Params: &jsonschema.Schema{Type: "object", Required: []string{"id"}, Properties: map[string]*jsonschema.Schema{"id": {Type: "string"}}},
		Query:  &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"state": {Type: "string"}, "limit": {Type: "integer"}}},
	}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(tt *testing.T, raw []byte) {
		r, p := t.request(context.Background(), raw)
		if p != nil {
			if p.Kind != problem.KindBadRequest {
				tt.Fatalf("argument problem of kind %s", p.Kind)
			}
			return
		}
		if r.URL.Host != "mcp.invalid" || r.URL.Fragment != "" || !strings.HasSuffix(r.URL.EscapedPath(), "/approve") ||
			strings.Count(r.URL.EscapedPath(), "/") != 2 {
			tt.Fatalf("request escaped its route: %q", r.URL.String())
		}
	})
}
