package rest

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tablegate/tablegate/authctx"
)

// TestRouter: the route table lists every resource operation, described
// handler operation and mount route below the base path; unknown paths
// are 404 problems; the guard wraps resources and handlers, not mounts.
func TestRouter(t *testing.T) {
	t.Parallel()
	items := mustFake(t, &Config{Operations: []Operation{OpList, OpGet}})
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.URL.Path) })
	things := DescribeHandler(ok, []HandlerOperation{{ID: "listThings", Method: "GET", Path: "/"},
		{ID: "approveThing", Method: "POST", Path: "/{id}/approve"}})
	var guarded []string
	guard := func(allow ...authctx.Allow) func(http.Handler) http.Handler {
		return func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				guarded = append(guarded, fmt.Sprint(allow))
				h.ServeHTTP(w, r)
			})
		}
	}
	rt, err := NewRouter(&RouterConfig{BasePath: "/api/", Resources: map[string]*Resource{"items": items},
		Handlers: map[string]DescribedHandler{"things": things}, Guard: guard,
		Allow:  map[string][]authctx.Allow{"things": {authctx.AllowService}},
		Mounts: []Mount{{Path: "/doc.json", Handler: ok, Routes: []Route{{Method: "GET", Path: "/doc.json", OperationID: "getDoc"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Route{{"GET", "/api/doc.json", "getDoc"}, {"GET", "/api/items", "listItems"}, {"GET", "/api/items/{id}", "getItem"},
		{"GET", "/api/things", "listThings"}, {"POST", "/api/things/{id}/approve", "approveThing"}}
	if got := rt.Routes(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("routes\n got %v\nwant %v", got, want)
	}
	for _, c := range []struct {
		path   string
		status int
		body   string
		guard  string
	}{
		{"/api/things/x/approve", 200, "/x/approve", "[service]"},
		{"/api/doc.json", 200, "/api/doc.json", ""},
		{"/api/nope", 404, "", ""},
		{"/api", 404, "", ""},
		{"/elsewhere", 404, "", ""},
		{"/api/items/1/x", 404, "", "[user]"},
	} {
		guarded = nil
		w := httptest.NewRecorder()
		rt.ServeHTTP(w, httptest.NewRequest("GET", c.path, nil))
		wantGuard := "[]"
		if c.guard != "" {
			wantGuard = "[" + c.guard + "]"
		}
		if w.Code != c.status || c.body != "" && w.Body.String() != c.body || fmt.Sprint(guarded) != wantGuard {
			t.Errorf("GET %s: %d %q guarded %v", c.path, w.Code, w.Body, guarded)
		}
		if w.Code == 404 && w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: 404 as %q", c.path, w.Header().Get("Content-Type"))
		}
	}
	for name, cfg := range map[string]*RouterConfig{
		"nil resource":  {Resources: map[string]*Resource{"a": nil}},
		"slash":         {Resources: map[string]*Resource{"a/b": items}},
		"dot dot":       {Resources: map[string]*Resource{"..": items}},
		"both":          {Resources: map[string]*Resource{"a": items}, Handlers: map[string]DescribedHandler{"a": things}},
		"base":          {BasePath: "api"},
		"mount twice":   {Mounts: []Mount{{Path: "/x", Handler: ok}, {Path: "/x/", Handler: ok}}},
		"nil mount":     {Mounts: []Mount{{Path: "/x"}}},
		"mount no root": {Mounts: []Mount{{Path: "x", Handler: ok}}},
	} {
		if _, err := NewRouter(cfg); !errors.Is(err, ErrBuild) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
