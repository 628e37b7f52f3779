package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

func TestRequestIDAcceptedOrGenerated(t *testing.T) {
	t.Parallel()
	tel, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen string
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Get(RequestIDHeader)
		if RequestID(r.Context()) != seen {
			t.Errorf("RequestID(ctx) %q, header %q", RequestID(r.Context()), seen)
		}
	}))
	for _, tc := range []struct {
		in     []string
		accept bool
	}{
		{[]string{"abc-123"}, true},
		{[]string{"4bf92f3577b34da6a3ce929d0e0e4736"}, true},
		{[]string{"a.b_c:d+e/f=g"}, true},
		{[]string{strings.Repeat("x", MaxRequestIDLen)}, true},
		{[]string{strings.Repeat("x", MaxRequestIDLen+1)}, false},
		{[]string{""}, false},
		{nil, false},
		{[]string{"has space"}, false},
		{[]string{"new\nline"}, false},
		{[]string{"quote\""}, false},
		{[]string{"ünïcode"}, false},
		{[]string{"a", "b"}, false},
	} {
		req := httptest.NewRequest("GET", "/", nil)
		for _, v := range tc.in {
			req.Header.Add(RequestIDHeader, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		got := rec.Header().Get(RequestIDHeader)
		if got != seen {
			t.Errorf("%q: echoed %q, handler saw %q", tc.in, got, seen)
		}
		if tc.accept && got != tc.in[0] {
			t.Errorf("%q: not accepted, got %q", tc.in, got)
		}
		if !tc.accept && (len(got) != 24 || (len(tc.in) > 0 && got == tc.in[0])) {
			t.Errorf("%q: want a generated 24-digit id, got %q", tc.in, got)
		}
	}
}

func TestNilTelemetryIsInert(t *testing.T) {
	var tel *Telemetry
	next := http.NotFoundHandler()
	if h := tel.Handler(next); h == nil {
		t.Fatal("nil Handler")
	}
	// Off costs nothing: the stack is the one built without telemetry.
	mux := http.NewServeMux()
	if h, ok := tel.Handler(mux).(*http.ServeMux); !ok || h != mux {
		t.Error("a nil Telemetry's Handler wraps its handler")
	}
	ctx, span := tel.Start(t.Context(), "x")
	if ctx != t.Context() || span.IsRecording() {
		t.Error("nil Telemetry recorded a span")
	}
	tel.MemoHit(ctx)
	tel.MemoMiss(ctx)
	tel.Resolved(ctx, "user", "", "bearer", "sub")
	tel.RefreshOutcome(ctx, "success")
	tel.RefreshShared(ctx)
	tel.ObserveMemoSize(func() int64 { return 1 })
	tel.EventsDelivered(ctx, 1)
	ApprovalRequested(ctx, "p")
	ApprovalDecided(ctx, "approved")
	SetRoute(ctx, "/1", "/{id}", "get", "t")
	if tel.Transport("jwks", http.DefaultTransport) != http.DefaultTransport {
		t.Error("nil Telemetry wrapped the transport")
	}
	if tel.TracerProvider() != nil || tel.MeterProvider() != nil || tel.Tracing() {
		t.Error("nil Telemetry has providers")
	}
	if testing.AllocsPerRun(100, func() { tel.MemoHit(ctx); tel.Resolved(ctx, "user", "", "bearer", "") }) != 0 {
		t.Error("nil Telemetry allocates")
	}
}

// TestAccessLog checks the access log line: route pattern (never the
// path or query), status, request id, caller kind, operation; the subject
// only with LogSubject; unknown methods collapse to _OTHER.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	for _, withSubject := range []bool{false, true} {
		var buf bytes.Buffer
		tel, err := New(&Config{AccessLog: newTestLogger(&buf), LogSubject: withSubject})
		if err != nil {
			t.Fatal(err)
		}
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			tel.Resolved(r.Context(), "user", "", "bearer", "user-42")
			SetRoute(r.Context(), "/17", "/{id}", "get", "public.todos")
			w.WriteHeader(http.StatusTeapot)
		})
		h := tel.Handler(http.StripPrefix("/api/todos", inner))
		req := httptest.NewRequest("GET", "/api/todos/17?title=eq.secret", nil)
		req.Header.Set(RequestIDHeader, "rid-1")
		h.ServeHTTP(httptest.NewRecorder(), req)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("BREW", "/api/todos/17", nil))

		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("want 2 lines, got %q", buf.String())
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"msg": "request", "method": "GET", "route": "/api/todos/{id}", "status": float64(418),
			"request_id": "rid-1", "caller_kind": "user", "operation": "get", "table": "public.todos"}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s = %v, want %v (line %s)", k, m[k], v, lines[0])
			}
		}
		for _, k := range []string{"time", "duration_ms"} {
			if _, ok := m[k]; !ok {
				t.Errorf("no %s in %s", k, lines[0])
			}
		}
		if strings.Contains(buf.String(), "secret") || strings.Contains(buf.String(), "/17") {
			t.Errorf("the path or query leaks into the access log: %s", buf.String())
		}
		if got := strings.Contains(lines[0], "user-42"); got != withSubject {
			t.Errorf("LogSubject %v: subject in line = %v", withSubject, got)
		}
		if !strings.Contains(lines[1], `"method":"_OTHER"`) {
			t.Errorf("unknown method not collapsed: %s", lines[1])
		}
	}
	if _, err := New(&Config{LogSubject: true}); err == nil {
		t.Error("LogSubject without AccessLog accepted")
	}

	// A ServeMux right below the Handler names the route of handlers that
	// report none; what it does not match stays "other".
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /whoami/{who}", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {}) // a catch-all names no route
	h := tel.Handler(mux)
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/whoami/secret-name", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/nowhere", nil))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"route":"/whoami/{who}"`) || !strings.Contains(lines[1], `"route":"other"`) ||
		strings.Contains(buf.String(), "secret-name") {
		t.Errorf("mux routes in the access log:\n%s", buf.String())
	}
}

func FuzzRequestID(f *testing.F) {
	for _, s := range []string{"abc", "", "a b", strings.Repeat("z", 65), "x\x00y", "req-1:2/3+4=5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ok := ValidRequestID(s)
		if ok && (len(s) == 0 || len(s) > MaxRequestIDLen) {
			t.Fatalf("accepted %q", s)
		}
		if ok && strings.ContainsAny(s, " \t\r\n\"'<>\\,;") {
			t.Fatalf("accepted %q", s)
		}
		// Whatever comes in, the echoed id is a valid header value.
		tel, _ := New(nil)
		req := httptest.NewRequest("GET", "/", nil)
		req.Header[RequestIDHeader] = []string{s}
		rec := httptest.NewRecorder()
		tel.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, req)
		if got := rec.Header().Get(RequestIDHeader); !ValidRequestID(got) {
			t.Fatalf("echoed %q for %q", got, s)
		}
	})
}

func newTestLogger(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewJSONHandler(buf, nil)) }

// TestAttributeCachesBounded serves more distinct routes than the
// attribute caches hold: they stop growing at maxCached and every request
// still reports its own route.
func TestAttributeCachesBounded(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tel, err := New(&Config{TracerProvider: tracenoop.NewTracerProvider(), AccessLog: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	n := maxCached + 50
	for i := range n {
		// Patterns come from the application's code (one per action of a
		// resource): an application with this many still gets each.
		pattern := fmt.Sprintf("/{id}/a%d", i)
		h := tel.Handler(http.StripPrefix("/m", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			SetRoute(r.Context(), r.URL.EscapedPath(), pattern, "get", "items")
		})))
		buf.Reset()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", fmt.Sprintf("/m/7/a%d", i), nil))
		var line struct{ Route string }
		if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if want := "/m" + pattern; line.Route != want {
			t.Fatalf("request %d: route %q, want %q", i, line.Route, want)
		}
	}
	tel.cacheMu.RLock()
	defer tel.cacheMu.RUnlock()
	if len(tel.routes) != maxCached || len(tel.requests) != maxCached {
		t.Errorf("caches hold %d routes and %d request attribute sets after %d routes, want %d each",
			len(tel.routes), len(tel.requests), n, maxCached)
	}
}
