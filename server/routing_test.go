package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/mcpdiscovery"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestSkipCatchAllAsMux: the server's outer mux (health, the sign-in
// flows, "/" to the application) answers every request alike with and
// without skipCatchAll in front: same status, headers, body, handler and
// r.Pattern, for clean and unclean paths, escapes, trailing slashes and
// methods.
func TestSkipCatchAllAsMux(t *testing.T) {
	t.Parallel()
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Handler", name)
			fmt.Fprintf(w, "%s pattern=%q path=%q", name, r.Pattern, r.URL.Path)
		})
	}
	app := named("app")
	mux := http.NewServeMux()
	mux.Handle("GET /livez", named("livez"))
	mux.Handle("GET /readyz", named("readyz"))
	for _, p := range healthPaths {
		mux.Handle(p, named("405 "+p))
	}
	for _, p := range flowPatterns {
		mux.Handle(p, named("flow "+p))
	}
	mux.Handle("/", app)
	literal := append(append([]string(nil), healthPaths...), flowPatterns...)
	plain := problemFallback(mux)
	skip := skipCatchAll(literal, app, problemFallback(mux))

	paths := []string{"/", "/api/todos/5", "/api/todos", "/api/todos/", "/livez", "/livez/", "/live%7A", "/readyz",
		"/readyz?x=1", "/auth/sign-in", "/auth/sign-in/", "/auth/otp", "/auth", "/auth/", "/api//todos", "/api/./todos",
		"/api/../livez", "/api/todos/.", "/api/todos/..", "/a/%2F/b", "/%2e%2e/livez", "/a/b/c/d/e/", "/x.y", "/.well-known/x"}
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT"} {
		for _, p := range paths {
			a, b := httptest.NewRecorder(), httptest.NewRecorder()
			plain.ServeHTTP(a, httptest.NewRequest(m, p, nil))
			skip.ServeHTTP(b, httptest.NewRequest(m, p, nil))
			if a.Code != b.Code || fmt.Sprint(a.Header()) != fmt.Sprint(b.Header()) || a.Body.String() != b.Body.String() {
				t.Errorf("%s %s: mux %d %v %q, skipCatchAll %d %v %q", m, p, a.Code, a.Header(), a.Body, b.Code, b.Header(), b.Body)
			}
		}
	}
}

// muxCleanPath is net/http's cleanPath, which ServeMux redirects a path
// to when it differs.
func muxCleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			np = p
		} else {
			np += "/"
		}
	}
	return np
}

// FuzzCleanMuxPath: cleanMuxPath is true exactly for the paths ServeMux
// leaves as they are.
func FuzzCleanMuxPath(f *testing.F) {
	for _, p := range []string{"", "/", "//", "/a", "/a/", "/a//", "/a/./b", "/a/../b", "/.", "/..", "/a/.", "/a/..", "a", "/.a", "/a..", "/a/b/"} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p string) {
		want := p != "" && p[0] == '/' && muxCleanPath(p) == p
		if got := cleanMuxPath(p); got != want {
			t.Errorf("cleanMuxPath(%q) = %v, want %v", p, got, want)
		}
	})
}

// TestMountAPIAsNested: serve's mux (/mcp, the MCP discovery document, a
// data API) with the API's router registered on it by mountAPI answers
// every request as with the router mounted at "/", for base paths beside
// those routes and for ones that meet them (mountAPI then mounts it so).
func TestMountAPIAsNested(t *testing.T) {
	t.Parallel()
	named := func(name string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s pattern=%q path=%q", name, r.Pattern, r.URL.Path)
		})
	}
	for _, base := range []string{"", "/api", "/mcp", "/rest", "/rest/v1/x", "/.well-known", "/v1/api"} {
		rt, err := rest.NewRouter(&rest.RouterConfig{
			BasePath: base,
			Handlers: map[string]rest.DescribedHandler{
				"todos": rest.DescribeHandler(named("todos"), nil),
				"mcp":   rest.DescribeHandler(named("mcp-table"), nil),
			},
			Mounts: []rest.Mount{{Path: "/openapi.json", Handler: named("doc")},
				{Path: "/docs", Handler: named("docs"), Subtree: true}},
			Problems: problem.Writer{},
		})
		if err != nil {
			t.Fatal(err)
		}
		serveMux := func(merge bool) http.Handler {
			mux := http.NewServeMux()
			mux.Handle("/mcp", named("mcp"))
			mux.Handle(mcpdiscovery.Path, named("discovery"))
			mux.Handle("/rest/v1/", named("data"))
			if merge {
				mountAPI(mux, rt, base, "/mcp", mcpdiscovery.Path, "/rest/v1")
			} else {
				mux.Handle("/", rt)
			}
			return reportPatterns(mux)
		}
		nested, merged := serveMux(false), serveMux(true)
		paths := []string{"/", "/mcp", "/mcp/", "/mcp/todos", "/api", "/api/", "/api/todos", "/api/todos/", "/api/todos/5",
			"/api/todos/5/", "/api/mcp", "/api/openapi.json", "/api/openapi.json/", "/api/docs", "/api/docs/x", "/api/nowhere",
			"/todos", "/todos/5", "/openapi.json", "/docs/", "/rest", "/rest/v1", "/rest/v1/todos", "/rest/todos",
			"/rest/v1/x/todos/1", "/.well-known/oauth-protected-resource/mcp", "/.well-known/todos", "/v1/api/todos",
			"/api//todos", "/api/./todos", "/api/tod%6Fs/5", "/x"}
		for _, m := range []string{"GET", "POST", "CONNECT"} {
			for _, p := range paths {
				a, b := httptest.NewRecorder(), httptest.NewRecorder()
				nested.ServeHTTP(a, httptest.NewRequest(m, p, nil))
				merged.ServeHTTP(b, httptest.NewRequest(m, p, nil))
				if a.Code != b.Code || fmt.Sprint(a.Header()) != fmt.Sprint(b.Header()) || a.Body.String() != b.Body.String() {
					t.Errorf("base %q: %s %s: nested %d %v %q, merged %d %v %q", base, m, p, a.Code, a.Header(), a.Body, b.Code, b.Header(), b.Body)
				}
			}
		}
	}
}
