package rest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"testing"
)

var updateRoutes = flag.Bool("update-routes", false, "rewrite testdata/routes.golden")

// opRecorder is a slog handler keeping the operation of the last
// unexpected-error record: the route the request took.
type opRecorder struct {
	mu sync.Mutex
	op string
}

func (o *opRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (o *opRecorder) Handle(_ context.Context, rec slog.Record) error {
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "operation" {
			o.mu.Lock()
			o.op = a.Value.String()
			o.mu.Unlock()
		}
		return true
	})
	return nil
}
func (o *opRecorder) WithAttrs([]slog.Attr) slog.Handler { return o }
func (o *opRecorder) WithGroup(string) slog.Handler      { return o }

// TestRouteTable pins what every method answers on a set of ordinary and
// odd paths (trailing slashes, encoded slashes, dot segments, empty and
// very long keys, action paths under other methods): status, Allow,
// Content-Type, body and the operation the request was routed to. A
// routed request ends in its Caller, which panics, so the operation is
// read from the unexpected-error log record.
func TestRouteTable(t *testing.T) {
	rec := &opRecorder{}
	none := func(*Ctx, ActionInput[None, None]) (None, error) { return None{}, nil }
	act := func(method, path string) *Action {
		return DefineAction(ActionDef[None, None, None]{Method: method, Path: path, Handler: none})
	}
	r := mustFake(t, &Config{
		Operations: []Operation{OpList, OpGet, OpUpdate, OpCreate},
		Actions: map[string]*Action{
			"export": act("GET", "/export"), "purge": act("POST", "/export"), "imp": act("POST", "/import"),
			"complete": act("POST", "/{id}/complete"), "replace": act("PUT", "/{id}"), "wipe": act("DELETE", "/"),
			"csv": act("GET", "/{id}/export"), "stats": act("GET", "/export/stats"),
		},
		Caller: func(req *http.Request) (authctx.Auth, error) {
			panic("routed")
		},
		Logger: slog.New(rec),
	})
	long := strings.Repeat("9", 5000)
	paths := []string{"", "/", "//", "/5", "/5/", "/5//", "/abc", "/%35", "/a%2Fb", "/%2F", "/5%2Fcomplete",
		"/export", "/export/", "/%65xport", "/import", "/import/x", "/export/stats", "/export/stats/",
		"/export/7", "/5/complete", "/5/complete/", "/5/complete/x", "/5/export", "/complete", "/x/y/z",
		"/..", "/../5", "/5/..", "/.", "/./5", "/%2E%2E", "/%00", "/%zz", "/%", "/5%20", "/%20", "/" + long,
		"/" + long + "/complete", "/;", "/5;x"}
	var out bytes.Buffer
	for _, p := range paths {
		for _, m := range routeMethods {
			rec.op = ""
			req := httptest.NewRequest(m, "http://x/", nil)
			req.URL.RawPath, req.URL.Path = "", ""
			if err := setPath(req, p); err != nil {
				fmt.Fprintf(&out, "%s %s: bad path\n", m, short(p))
				continue
			}
			w := httptest.NewRecorder()
			r.ServeHTTP(w, req)
			body := w.Body.String()
			if w.Code == http.StatusInternalServerError {
				body = "(unexpected)"
			}
			fmt.Fprintf(&out, "%s %s: %d op=%s allow=%q ct=%q %s\n", m, short(p), w.Code, rec.op,
				w.Header().Values("Allow"), w.Header().Get("Content-Type"), body)
		}
	}
	golden := "testdata/routes.golden"
	if *updateRoutes {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		gl, wl := strings.Split(out.String(), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Errorf("line %d:\n got %s\nwant %s", i+1, gl[i], wl[i])
			}
		}
		if len(gl) != len(wl) {
			t.Errorf("%d lines, want %d", len(gl), len(wl))
		}
	}
}

// setPath sets an escaped path on req as a server would parse it (dot
// segments and double slashes kept).
func setPath(req *http.Request, escaped string) error {
	u := &url.URL{}
	if escaped != "" {
		var err error
		if u, err = url.ParseRequestURI(escaped); err != nil {
			return err
		}
	}
	req.URL = u
	req.RequestURI = escaped
	return nil
}

func short(p string) string {
	if len(p) > 40 {
		return p[:20] + fmt.Sprintf("…(%d)…", len(p)) + p[len(p)-10:]
	}
	return p
}

// Routing benchmarks: the request ends in its Caller (401) or in routing
// (404, 405), so only this process's work is measured.
func BenchmarkRouteGet(b *testing.B) { benchRoute(b, "GET", "/5", http.StatusUnauthorized) }
func BenchmarkRouteAction(b *testing.B) {
	benchRoute(b, "POST", "/5/complete", http.StatusUnauthorized)
}
func BenchmarkRouteList(b *testing.B)     { benchRoute(b, "GET", "/", http.StatusUnauthorized) }
func BenchmarkRouteNotFound(b *testing.B) { benchRoute(b, "GET", "/5/x/y", http.StatusNotFound) }
func BenchmarkRouteMethodNotAllowed(b *testing.B) {
	benchRoute(b, "DELETE", "/5", http.StatusMethodNotAllowed)
}

func benchRoute(b *testing.B, method, path string, status int) {
	r := routeResource(b)
	req := httptest.NewRequest(method, path, nil)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != status {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

// TestRouteKey: the key a routed request carries (r.PathValue("key"), the
// Call's Key) is the first segment unescaped, whatever it holds.
func TestRouteKey(t *testing.T) {
	t.Parallel()
	var got struct {
		key, pattern string
	}
	none := func(*Ctx, ActionInput[None, None]) (None, error) { return None{}, nil }
	r := mustFake(t, &Config{
		Operations: []Operation{OpList, OpGet, OpUpdate},
		Actions: map[string]*Action{
			"complete": DefineAction(ActionDef[None, None, None]{Method: "POST", Path: "/{id}/complete", Handler: none}),
			"export":   DefineAction(ActionDef[None, None, None]{Method: "GET", Path: "/export", Handler: none}),
		},
		Caller: func(req *http.Request) (authctx.Auth, error) {
			got.key, got.pattern = req.PathValue("key"), req.Pattern
			return authctx.Auth{}, errRouteKey
		},
	})
	long := strings.Repeat("k", 10000)
	for _, c := range []struct{ method, path, key, pattern string }{
		{"GET", "/5", "5", "GET /{key}"},
		{"GET", "/5/", "5", "GET /{key}"},
		{"GET", "/%35", "5", "GET /{key}"},
		{"GET", "/a%2Fb", "a/b", "GET /{key}"},
		{"GET", "/%2F", "/", ""},
		{"PATCH", "/%2f", "/", ""},
		{"POST", "/%2F/complete", "/", ""},
		{"POST", "/%2F/complete/", "/", ""},
		{"GET", "/..", "..", "GET /{key}"},
		{"GET", "/.", ".", "GET /{key}"},
		{"POST", "/../complete", "..", "POST /{key}/complete"},
		{"GET", "/%2E%2E", "..", "GET /{key}"},
		{"GET", "/5%20", "5 ", "GET /{key}"},
		{"GET", "/%00", "\x00", "GET /{key}"},
		{"GET", "/" + long, long, "GET /{key}"},
		{"POST", "/" + long + "/complete", long, "POST /{key}/complete"},
		{"GET", "/export", "", "GET /export"},
		{"GET", "/%65xport/", "", "GET /export"},
		{"GET", "//", "", "GET /{$}"},
		{"GET", "", "", "GET /{$}"},
	} {
		got.key, got.pattern = "", ""
		req := httptest.NewRequest(c.method, "http://x/", nil)
		if err := setPath(req, c.path); err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusForbidden || got.key != c.key || got.pattern != c.pattern {
			t.Errorf("%s %s: %d key %q pattern %q, want 403 key %q pattern %q", c.method, short(c.path), w.Code,
				short(got.key), got.pattern, short(c.key), c.pattern)
		}
		if req.Pattern != "" {
			t.Errorf("%s %s: the caller's request was given the pattern %q", c.method, short(c.path), req.Pattern)
		}
	}
	// Paths with an empty segment name no route.
	for _, p := range []string{"//5", "/5//", "//complete", "/5//complete", "///"} {
		req := httptest.NewRequest("GET", "http://x/", nil)
		if err := setPath(req, p); err != nil {
			t.Fatal(err)
		}
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != http.StatusNotFound || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("GET %s: %d %s", p, w.Code, w.Body)
		}
	}
}

var errRouteKey = problem.New(problem.KindForbidden, "Routed.")
