package telemetry_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/tablegate/tablegate/telemetry"
)

// A Telemetry without providers still echoes X-Request-Id and writes the
// access log; give it your SDK's tracer and meter providers to record
// spans and metrics.
func Example() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == "time" || a.Key == "duration_ms" {
				return slog.Attr{} // vary from run to run
			}
			return a
		},
	}))
	tel, err := telemetry.New(&telemetry.Config{AccessLog: logger})
	if err != nil {
		panic(err)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.SetRoute(r.Context(), r.URL.EscapedPath(), "/{id}", "get", "public.todos")
		fmt.Fprintln(w, "ok")
	})
	h := tel.Handler(http.StripPrefix("/api/todos", api))

	req := httptest.NewRequest("GET", "/api/todos/42", nil)
	req.Header.Set("X-Request-Id", "req-1")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Header().Get("X-Request-Id"))
	// Output:
	// {"level":"INFO","msg":"request","method":"GET","route":"/api/todos/{id}","status":200,"request_id":"req-1","caller_kind":"","operation":"get","table":"public.todos"}
	// req-1
}
