package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/syncbuf"
	"github.com/tablegate/tablegate/telemetry"
)

// TestMuxRoutesBelowMiddleware: the command's routes (/livez, /whoami, the
// auth server's, /mcp) are reported under their pattern also when the mux
// sits below middleware that copies the request (authctx), as in serve
// (an outer mux, "/" to the middleware, an inner mux with /mcp) and demo;
// a route a resource reports stays the resource's, and an unmatched path
// is "other", also through a catch-all "/". Before, all of them were
// "other".
func TestMuxRoutesBelowMiddleware(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	tel, err := telemetry.New(&telemetry.Config{AccessLog: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
	copying := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r.WithContext(r.Context())) // as authctx's middleware does
		})
	}
	inner := http.NewServeMux()
	inner.HandleFunc("/mcp", ok)
	inner.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		telemetry.SetRoute(r.Context(), strings.TrimPrefix(r.URL.Path, "/api"), "/{id}", "get", "public.todos")
		w.WriteHeader(http.StatusOK)
	})
	inner.HandleFunc("/", ok)
	outer := http.NewServeMux()
	outer.HandleFunc("GET /livez", ok)
	outer.HandleFunc("GET /auth/v1/verify", ok)
	outer.Handle("/", copying(reportPatterns(inner)))
	h := tel.Handler(copying(problemFallback(outer)))
	for _, path := range []string{"/livez", "/auth/v1/verify?token=secret-token", "/mcp", "/api/todos/42", "/nowhere"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	want := []string{`"route":"/livez"`, `"route":"/auth/v1/verify"`, `"route":"/mcp"`, `"route":"/api/{id}"`, `"route":"other"`}
	if len(lines) != len(want) {
		t.Fatalf("access log:\n%s", logs.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: want %s in %s", i, w, lines[i])
		}
	}
	if strings.Contains(logs.String(), "secret-token") || strings.Contains(logs.String(), "/42") {
		t.Errorf("a path or query value in the access log:\n%s", logs.String())
	}
}
