package spec_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

// TestDescribedHandlers: a handler in Options.Handlers is served under its
// segment behind the guard and described from its operations; bad
// definitions are refused.
func TestDescribedHandlers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var seen string
	h := rest.DescribeHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Method + " " + r.URL.Path
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"approved"}`))
	}), []rest.HandlerOperation{{
		ID: "approveThing", Method: "POST", Path: "/{id}/approve", Summary: "Approve a thing",
		Params: &jsonschema.Schema{Type: "object", Required: []string{"id"}, Properties: map[string]*jsonschema.Schema{"id": {Type: "string", Format: "uuid"}}},
		Output: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"state": {Type: "string"}}},
		Errors: []int{401, 404, 409},
	}})
	opts := apiOptions(b.res)
	opts.Handlers = map[string]rest.DescribedHandler{"things": h}
	opts.Allow["things"] = []authctx.Allow{authctx.AllowUser}
	opts.Guard = authctx.Guard
	api, err := spec.DefineAPI(opts)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	op, _ := doc["paths"].(map[string]any)["/things/{id}/approve"].(map[string]any)["post"].(map[string]any)
	b2, _ := json.Marshal(op)
	for _, want := range []string{`"operationId":"approveThing"`, `"in":"path"`, `"required":true`, `"409":{"$ref":"#/components/responses/Conflict"}`, `"x-service-allow":["user"]`} {
		if !strings.Contains(string(b2), want) {
			t.Errorf("operation lacks %s: %s", want, b2)
		}
	}
	// Served behind the guard, relative to its mount point.
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, httptest.NewRequest("POST", "/api/things/abc/approve", nil))
	if rec.Code != 401 {
		t.Errorf("without a caller: %d", rec.Code)
	}
	rec = httptest.NewRecorder()
	req := httptest.NewRequest("POST", "/api/things/abc/approve", nil)
	req = req.WithContext(authctx.WithResult(req.Context(), authctx.Result{Auth: authctx.NewUser(authctx.Claims{"sub": "11111111-1111-1111-1111-111111111111", "role": "authenticated"}, "t", nil)}))
	api.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || seen != "POST /abc/approve" || rec.Header().Get("Content-Security-Policy") != rest.ContentSecurityPolicy {
		t.Errorf("with a user: %d, handler saw %q, CSP %q", rec.Code, seen, rec.Header().Get("Content-Security-Policy"))
	}

	for name, mutate := range map[string]func(o *spec.Config){
		"nil handler":      func(o *spec.Config) { o.Handlers = map[string]rest.DescribedHandler{"x": nil} },
		"resource segment": func(o *spec.Config) { o.Handlers = map[string]rest.DescribedHandler{"todos": h} },
		"reserved segment": func(o *spec.Config) { o.Handlers = map[string]rest.DescribedHandler{"docs": h} },
		"unknown status": func(o *spec.Config) {
			o.Handlers = map[string]rest.DescribedHandler{"x": rest.DescribeHandler(h, []rest.HandlerOperation{{ID: "a", Method: "GET", Path: "/", Errors: []int{418}}})}
		},
		"duplicate op id": func(o *spec.Config) {
			o.Handlers = map[string]rest.DescribedHandler{"x": rest.DescribeHandler(h, []rest.HandlerOperation{{ID: "listTodos", Method: "GET", Path: "/"}})}
		},
		"relative path": func(o *spec.Config) {
			o.Handlers = map[string]rest.DescribedHandler{"x": rest.DescribeHandler(h, []rest.HandlerOperation{{ID: "a", Method: "GET", Path: "x"}})}
		},
	} {
		o := apiOptions(b.res)
		mutate(o)
		if _, err := spec.DefineAPI(o); !errors.Is(err, spec.ErrDefine) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
