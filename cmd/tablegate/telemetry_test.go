package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/demo"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
)

// telBundle is a tablegate stack (resolver with JWKS URL and cookie
// refresh, a todos resource with hooks and a permission, an instrumented
// pool) recording into in-memory exporters.
type telBundle struct {
	srv        *httptest.Server
	spans      *tracetest.InMemoryExporter
	metrics    *sdkmetric.ManualReader
	accessLog  *syncBuffer
	auth       *authstub.Server
	ks         *keySet
	issuer     string
	cookieName string
	hooks      []string
	hooksMu    sync.Mutex
	// refreshHeaders are the headers of the refresh calls the auth
	// server received.
	refreshHeaders []http.Header
	// seen are the spans exported before the last reset.
	seen []tracetest.SpanStub
	// dbName and dbAddr (host:port) are the pool's connection details,
	// which no telemetry may carry.
	dbName, dbAddr string
	// jwksDown makes the JWKS endpoint answer 503.
	jwksDown atomic.Bool
}

// reset starts a new section: spans recorded so far move to seen, where
// the final scan for secrets still finds them.
func (b *telBundle) reset() {
	b.seen = append(b.seen, b.spans.GetSpans()...)
	b.spans.Reset()
}

func setupTelemetryStack(t *testing.T) *telBundle {
	t.Helper()
	ctx := context.Background()
	b := &telBundle{spans: tracetest.NewInMemoryExporter(), metrics: sdkmetric.NewManualReader(), accessLog: &syncBuffer{}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(b.spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.metrics))
	t.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	tel, err := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp,
		AccessLog: slog.New(slog.NewJSONHandler(b.accessLog, nil))})
	if err != nil {
		t.Fatal(err)
	}

	url := pgtest.URL(t)
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	pcfg.MaxConns = 4
	b.dbName, b.dbAddr = pcfg.ConnConfig.Database, fmt.Sprintf("%s:%d", pcfg.ConnConfig.Host, pcfg.ConnConfig.Port)
	db.Instrument(pcfg, tel)
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := db.RecordPoolStats(pool, tel); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}

	b.ks = testKeySet(t, algES256)

	var handler http.Handler
	var ready sync.WaitGroup
	ready.Add(1)
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/auth/v1/.well-known/jwks.json":
			if b.jwksDown.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			_, _ = w.Write(b.ks.PublicJWKS())
			return
		case "/auth/v1/token": // the auth server, outside the instrumented stack
			b.hooksMu.Lock()
			b.refreshHeaders = append(b.refreshHeaders, r.Header.Clone())
			b.hooksMu.Unlock()
			b.auth.ServeHTTP(w, r)
			return
		}
		ready.Wait()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(b.srv.Close)
	b.issuer = b.srv.URL + "/auth/v1"
	const publishable = "sb_publishable_telemetrytest"
	b.auth = newAuthStub(t, authstub.Config{Keys: b.ks, Issuer: b.issuer, APIKey: publishable})

	rv, err := authctx.New(ctx, &authctx.Config{
		ProjectURL: b.srv.URL, PublishableKeys: []string{publishable}, Refresh: true, Telemetry: tel,
		// The cookie refresh below must finish inside its request (its
		// span a child of that resolution), also on a loaded machine: wait
		// up to the refresh timeout, not DefaultRefreshWait's 250 ms.
		RefreshWait: authctx.DefaultRefreshTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	b.cookieName = rv.CookieName()

	hook := func(name string) {
		b.hooksMu.Lock()
		b.hooks = append(b.hooks, name)
		b.hooksMu.Unlock()
	}
	admins, err := authz.Claims(authz.Rules{"todos.delete": authz.Role("admin")}, &authz.Config{DenyServices: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := rest.NewResource(ctx, db.New(pool, nil), "public.todos", &rest.Config{
		Select:      []string{"id", "tenant_id", "owner_id", "title", "done", "created_at"},
		Permissions: map[rest.Operation]string{rest.OpDelete: "todos.delete"},
		Authorizer:  admins,
		Hooks: rest.Hooks{
			BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
				hook("BeforeCreate")
				var n int
				if err := c.DB.QueryRow(c, "select count(*) from public.todos").Scan(&n); err != nil {
					return nil, err
				}
				data["done"] = false
				return data, nil
			},
			AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				hook("AfterCreate")
				return row, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", res))
	handler = tel.Handler(rv.Middleware(rv.CrossSite(mux)))
	ready.Done()
	// The JWKS was fetched at construction: forget its span for the
	// per-request assertions (TestTelemetrySpans checks it first).
	return b
}

// send makes one request to the stack and returns the response.
func (b *telBundle) send(t *testing.T, method, path string, header map[string]string, body any) response {
	t.Helper()
	return do(t, caller{"telemetry", header}, method, b.srv.URL+path, body)
}

// serverSpan returns the one server span recorded since the last reset,
// and every span of its trace.
func (b *telBundle) trace(t *testing.T) (tracetest.SpanStub, []tracetest.SpanStub) {
	t.Helper()
	var server []tracetest.SpanStub
	all := b.spans.GetSpans()
	for _, s := range all {
		if s.SpanKind == trace.SpanKindServer {
			server = append(server, s)
		}
	}
	if len(server) != 1 {
		t.Fatalf("want 1 server span, got %d: %v", len(server), names(all))
	}
	var same []tracetest.SpanStub
	for _, s := range all {
		if s.SpanContext.TraceID() == server[0].SpanContext.TraceID() {
			same = append(same, s)
		}
	}
	return server[0], same
}

func names(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

func find(spans []tracetest.SpanStub, name string) (tracetest.SpanStub, bool) {
	for _, s := range spans {
		if s.Name == name {
			return s, true
		}
	}
	return tracetest.SpanStub{}, false
}

// wantAttrs checks that span has every attribute of want.
func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[string]string) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("span %q: %s = %q, want %q (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

// wantChild checks that child's parent is parent.
func wantChild(t *testing.T, parent, child tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() {
		t.Errorf("span %q is not a child of %q", child.Name, parent.Name)
	}
}

// dbSpans returns the Postgres spans (from the pgx tracer) of spans.
func dbSpans(spans []tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.InstrumentationScope.Name == "github.com/exaring/otelpgx" {
			out = append(out, s)
		}
	}
	return out
}

// TestTelemetrySpans drives a get, a list, a create with hooks, a delete
// refused by the permission, an invalid token and a cookie session refresh
// through the instrumented stack and asserts the spans and attributes each
// produces; then it scans every span, metric attribute and access log line
// for the tokens, cookies and claim values used.
func TestTelemetrySpans(t *testing.T) {
	b := setupTelemetryStack(t)
	now := time.Now()
	user, err := mintToken(b.ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: time.Hour, Issuer: b.issuer, Email: "ada@example.com"}, now)
	if err != nil {
		t.Fatal(err)
	}
	userH := map[string]string{"Authorization": "Bearer " + user}

	// The JWKS was fetched once at construction, in its own span.
	if s, ok := find(b.spans.GetSpans(), "tablegate jwks"); !ok {
		t.Errorf("no JWKS fetch span: %v", names(b.spans.GetSpans()))
	} else {
		wantAttrs(t, s, map[string]string{"tablegate.outcome": "ok", "http.response.status_code": "200"})
	}
	b.reset()

	// list, continuing the caller's trace (traceparent in).
	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	h := map[string]string{"Authorization": "Bearer " + user, "traceparent": parent, "X-Request-Id": "req-list-1"}
	r := b.send(t, "GET", "/api/todos/?done=eq.false", h, nil)
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	if got := r.header.Get("X-Request-Id"); got != "req-list-1" {
		t.Errorf("X-Request-Id echoed %q", got)
	}
	server, spans := b.trace(t)
	if server.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || server.Parent.SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("the server span does not continue the incoming traceparent: trace %s parent %s", server.SpanContext.TraceID(), server.Parent.SpanID())
	}
	if server.Name != "GET /api/todos" {
		t.Errorf("server span name %q", server.Name)
	}
	wantAttrs(t, server, map[string]string{"http.route": "/api/todos", "http.response.status_code": "200",
		"tablegate.operation": "list", "tablegate.table": "public.todos", "tablegate.caller.kind": "user",
		"tablegate.caller.source": "bearer", "tablegate.request_id": "req-list-1", "http.request.method": "GET"})
	resolve, ok := find(spans, "tablegate.resolve")
	if !ok {
		t.Fatalf("no resolve span: %v", names(spans))
	}
	wantChild(t, server, resolve)
	wantAttrs(t, resolve, map[string]string{"tablegate.caller.kind": "user", "tablegate.caller.source": "bearer"})
	if d := dbSpans(spans); len(d) == 0 {
		t.Errorf("no Postgres span under the list: %v", names(spans))
	} else {
		for _, s := range d {
			if _, ok := attrs(s)["db.query.text"]; ok {
				t.Errorf("Postgres span %q carries the SQL text", s.Name)
			}
		}
	}
	var page struct {
		Items []map[string]any `json:"items"`
	}
	_ = json.Unmarshal(r.body, &page)
	if len(page.Items) == 0 {
		t.Fatalf("list returned no rows: %s", r.body)
	}
	id := fmt.Sprint(page.Items[0]["id"])
	b.reset()

	// get
	r = b.send(t, "GET", "/api/todos/"+id, userH, nil)
	if r.status != 200 {
		t.Fatalf("get: %d %s", r.status, r.body)
	}
	server, spans = b.trace(t)
	if server.Name != "GET /api/todos/{id}" {
		t.Errorf("get span name %q", server.Name)
	}
	wantAttrs(t, server, map[string]string{"http.route": "/api/todos/{id}", "tablegate.operation": "get", "http.response.status_code": "200"})
	if len(r.header.Get("X-Request-Id")) != 24 {
		t.Errorf("no generated X-Request-Id: %q", r.header.Get("X-Request-Id"))
	}
	// Its access log line names its trace.
	if want := `"trace_id":"` + server.SpanContext.TraceID().String() + `"`; !strings.Contains(b.accessLog.String(), want) {
		t.Errorf("no access log line with %s:\n%s", want, b.accessLog.String())
	}
	// One round trip: one batch (claims, role and the select) under the
	// server span, its statements under the batch.
	direct := 0
	for _, s := range dbSpans(spans) {
		if s.Parent.SpanID() == server.SpanContext.SpanID() {
			direct++
			if s.Name != "batch start" {
				t.Errorf("Postgres span %q directly under the get, want the batch", s.Name)
			}
		}
	}
	if direct != 1 {
		t.Errorf("want 1 Postgres round trip under the get, got %d: %v", direct, names(spans))
	}
	b.reset()

	// create, with hooks: each hook has a span, the hook's own query is
	// a child of the hook's span.
	r = b.send(t, "POST", "/api/todos/", userH, map[string]any{"title": "secret-row-title-123"})
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	server, spans = b.trace(t)
	wantAttrs(t, server, map[string]string{"http.route": "/api/todos", "tablegate.operation": "create", "http.response.status_code": "201"})
	before, ok1 := find(spans, "tablegate.hook BeforeCreate")
	after, ok2 := find(spans, "tablegate.hook AfterCreate")
	if !ok1 || !ok2 {
		t.Fatalf("hook spans missing: %v", names(spans))
	}
	wantChild(t, server, before)
	wantChild(t, server, after)
	wantAttrs(t, before, map[string]string{"tablegate.hook": "BeforeCreate", "tablegate.operation": "create", "tablegate.table": "public.todos"})
	inHook := 0
	for _, s := range dbSpans(spans) {
		if s.Parent.SpanID() == before.SpanContext.SpanID() {
			inHook++
		}
	}
	if inHook != 1 {
		t.Errorf("want the hook's query as a child of its span, got %d", inHook)
	}
	b.reset()

	// delete refused by the permission: 403, the authorizer's span says
	// which permission.
	r = b.send(t, "DELETE", "/api/todos/"+id, userH, nil)
	if r.status != 403 {
		t.Fatalf("delete without todos.delete: %d %s", r.status, r.body)
	}
	server, spans = b.trace(t)
	wantAttrs(t, server, map[string]string{"http.route": "/api/todos/{id}", "tablegate.operation": "delete", "http.response.status_code": "403"})
	az, ok := find(spans, "tablegate.authorize")
	if !ok {
		t.Fatalf("no authorizer span: %v", names(spans))
	}
	wantAttrs(t, az, map[string]string{"tablegate.permission": "todos.delete", "tablegate.operation": "delete"})
	b.reset()

	// invalid token
	bad := user[:len(user)-4] + "AAAA"
	r = b.send(t, "GET", "/api/todos/", map[string]string{"Authorization": "Bearer " + bad}, nil)
	if r.status != 401 {
		t.Fatalf("invalid token: %d %s", r.status, r.body)
	}
	server, spans = b.trace(t)
	wantAttrs(t, server, map[string]string{"tablegate.caller.kind": "invalid", "tablegate.caller.reason": "token", "http.response.status_code": "401"})
	resolve, _ = find(spans, "tablegate.resolve")
	wantAttrs(t, resolve, map[string]string{"tablegate.caller.kind": "invalid", "tablegate.caller.reason": "token", "tablegate.caller.source": "bearer"})
	b.reset()

	// A value Postgres refuses: the round trip's span records the failure
	// and its SQLSTATE, never the error's text, which quotes the value.
	r = b.send(t, "GET", "/api/todos/?tenant_id=eq.SECRET-filter-value-77", userH, nil)
	if r.status != 400 {
		t.Fatalf("filter value Postgres refuses: %d %s", r.status, r.body)
	}
	_, spans = b.trace(t)
	failed := 0
	for _, s := range dbSpans(spans) {
		if s.Status.Code == codes.Error {
			failed++
			wantAttrs(t, s, map[string]string{"pgx.sql_state": "22P02"})
		}
	}
	if failed != 1 {
		t.Errorf("want 1 failed Postgres span, got %d: %v", failed, names(spans))
	}
	b.reset()

	// cookie session refresh: the token expires within the leeway, the
	// refresh call is a child of the resolution and carries traceparent.
	access, refresh, err := b.auth.SignIn(tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cookies := sessionCookies(t, b.cookieName, access, refresh, demoUserID, 30*time.Second)
	var cookieParts []string
	for _, c := range cookies {
		cookieParts = append(cookieParts, c.Name+"="+c.Value)
	}
	cookieHeader := strings.Join(cookieParts, "; ")
	r = b.send(t, "GET", "/api/todos/", map[string]string{"Cookie": cookieHeader, "Baggage": "caller=SECRET-baggage-9"}, nil)
	if r.status != 200 || len(r.header["Set-Cookie"]) == 0 {
		t.Fatalf("cookie refresh: %d %v %s", r.status, r.header["Set-Cookie"], r.body)
	}
	server, spans = b.trace(t)
	wantAttrs(t, server, map[string]string{"tablegate.caller.kind": "user", "tablegate.caller.source": "cookie"})
	resolve, _ = find(spans, "tablegate.resolve")
	call, ok := find(spans, "tablegate refresh")
	if !ok {
		t.Fatalf("no refresh span: %v", names(spans))
	}
	wantChild(t, resolve, call)
	wantAttrs(t, call, map[string]string{"tablegate.outcome": "ok", "http.response.status_code": "200", "http.request.method": "POST"})
	wantAttrs(t, resolve, map[string]string{"tablegate.refresh.outcome": "success"})
	b.hooksMu.Lock()
	hdrs := b.refreshHeaders
	b.hooksMu.Unlock()
	if len(hdrs) != 1 {
		t.Fatalf("want 1 refresh call, got %d", len(hdrs))
	}
	if v := hdrs[0].Get("Baggage"); v != "" {
		t.Errorf("a caller's baggage reached the auth server: %q", v)
	}
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(hdrs[0])))
	if sc.TraceID() != server.SpanContext.TraceID() || sc.SpanID() != call.SpanContext.SpanID() {
		t.Errorf("the refresh call's traceparent %q is not the refresh span of the request's trace", hdrs[0].Get("traceparent"))
	}

	// Metrics moved.
	var rm metricdata.ResourceMetrics
	if err := b.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	sums := metricSums(rm)
	for name, min := range map[string]int64{
		"http.server.request.duration":    6,
		"tablegate.auth.resolutions":      6,
		"tablegate.auth.memo.hits":        4,
		"tablegate.auth.memo.misses":      2,
		"tablegate.auth.jwks.fetches":     1,
		"tablegate.auth.refresh.calls":    1,
		"tablegate.auth.refresh.outcomes": 1,
		"tablegate.auth.memo.size":        1,
		"pgxpool.acquires":                1,
	} {
		if sums[name] < min {
			t.Errorf("metric %s = %d, want ≥ %d (all: %v)", name, sums[name], min, sums)
		}
	}

	// Nothing secret anywhere: tokens, cookie values, claim values, the
	// row title.
	secrets := map[string]string{"access token": user, "bad token": bad, "cookie access token": access,
		"refresh token": refresh, "user id (sub)": demoUserID, "tenant claim": demoTenantA, "email claim": "ada@example.com",
		"row title": "secret-row-title-123", "filter value": "SECRET-filter-value-77",
		"database name": b.dbName, "database address": b.dbAddr}
	for _, c := range cookies {
		secrets["cookie "+c.Name] = c.Value
	}
	var haystack []string
	for _, s := range append(b.seen, b.spans.GetSpans()...) {
		haystack = append(haystack, s.Name, s.Status.Description)
		for _, kv := range s.Attributes {
			haystack = append(haystack, string(kv.Key)+"="+kv.Value.String())
		}
		for _, ev := range s.Events {
			haystack = append(haystack, ev.Name)
			for _, kv := range ev.Attributes {
				haystack = append(haystack, string(kv.Key)+"="+kv.Value.String())
			}
		}
	}
	for _, kv := range metricAttrs(rm) {
		haystack = append(haystack, string(kv.Key)+"="+kv.Value.String())
	}
	haystack = append(haystack, b.accessLog.String())
	if len(haystack) < 20 {
		t.Fatalf("the scan has too little to look at: %d strings", len(haystack))
	}
	for what, v := range secrets {
		for _, h := range haystack {
			if strings.Contains(h, v) {
				t.Errorf("the %s leaks into telemetry: %q", what, h)
			}
		}
	}
	// The scan can fail: the subject does appear when the access log is
	// asked for it (checked in TestAccessLog), and the route does appear.
	if !strings.Contains(strings.Join(haystack, "\n"), "/api/todos/{id}") {
		t.Error("scan sanity: the route pattern is not in the haystack")
	}
}

// metricSums sums every data point of each metric (histogram counts for
// histograms).
func metricSums(rm metricdata.ResourceMetrics) map[string]int64 {
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] += p.Value
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] += int64(p.Count)
				}
			}
		}
	}
	return out
}

// metricAttrs returns every attribute of every data point.
func metricAttrs(rm metricdata.ResourceMetrics) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				out = appendAttrs(out, d.DataPoints)
			case metricdata.Sum[float64]:
				out = appendAttrs(out, d.DataPoints)
			case metricdata.Gauge[int64]:
				out = appendAttrs(out, d.DataPoints)
			case metricdata.Gauge[float64]:
				out = appendAttrs(out, d.DataPoints)
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out = append(out, p.Attributes.ToSlice()...)
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					out = append(out, p.Attributes.ToSlice()...)
				}
			}
		}
	}
	return out
}

func appendAttrs[N int64 | float64](out []attribute.KeyValue, points []metricdata.DataPoint[N]) []attribute.KeyValue {
	for _, p := range points {
		out = append(out, p.Attributes.ToSlice()...)
	}
	return out
}

// TestTelemetryApprovalsAndEvents counts an approval requested by the
// demo's approval-gated purge and its decision by an approver, and an
// event delivered on the demo's event stream.
func TestTelemetryApprovalsAndEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	tel, err := telemetry.New(&telemetry.Config{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	ks := testKeySet(t, algES256)
	const issuer = "http://tablegate.test/auth/v1"
	rv, err := authctx.New(ctx, &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: ks.PublicJWKS(), Issuer: issuer}, Telemetry: tel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	parts, err := demo.BuildAPI(ctx, db.New(pool, nil), rv, "http://tablegate.test", issuer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(parts.Hub.Close)
	demo := &demo.Routes{JWKS: ks.PublicJWKS(), API: parts}
	srv := httptest.NewServer(tel.Handler(rv.Middleware(rv.CrossSite(demoHandler(demo)))))
	t.Cleanup(srv.Close)
	mint := func(sub string, roles ...string) caller {
		tok, err := mintToken(ks, tokenSpec{Sub: sub, Tenant: demoTenantA, Roles: roles, TTL: time.Hour, Issuer: issuer}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return bearer(sub, tok)
	}
	user, approver := mint(demoUserID), mint(demoApproverID, "approver")

	// An event stream receives the create below.
	sctx, stop := context.WithTimeout(ctx, 20*time.Second)
	defer stop()
	req, _ := http.NewRequestWithContext(sctx, "GET", srv.URL+"/api/todos/events", nil)
	req.Header.Set("Authorization", user.header["Authorization"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("event stream: %d", resp.StatusCode)
	}
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), ": connected") {
	}
	if r := do(t, user, "POST", srv.URL+"/api/todos/", map[string]any{"title": "event me"}); r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "event: todos.created") {
	}
	if lines.Err() != nil {
		t.Fatalf("no event: %v", lines.Err())
	}

	r := do(t, user, "POST", srv.URL+"/api/todos/purge", nil)
	wantProblem(t, "purge without approval", r, 403, "APPROVAL_REQUIRED")
	appr, _ := r.json(t)["approval"].(map[string]any)
	id, _ := appr["id"].(string)
	if r := do(t, approver, "POST", srv.URL+"/api/approvals/"+id+"/approve", nil); r.status != 200 {
		t.Fatalf("approve: %d %s", r.status, r.body)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					for _, kv := range p.Attributes.ToSlice() {
						got[m.Name] += fmt.Sprintf("%s=%s:%d ", kv.Key, kv.Value.String(), p.Value)
					}
				}
			}
		}
	}
	if got["tablegate.approvals.requested"] != "tablegate.permission=todos.purge:1 " {
		t.Errorf("approvals requested: %q", got["tablegate.approvals.requested"])
	}
	if got["tablegate.approvals.decided"] != "tablegate.decision=approved:1 " {
		t.Errorf("approvals decided: %q", got["tablegate.approvals.decided"])
	}
	if sums := metricSums(rm); sums["tablegate.events.delivered"] < 1 {
		t.Errorf("events delivered: %d", sums["tablegate.events.delivered"])
	}
}

// TestResolutionCountsBounded counts more distinct resolution outcomes
// than telemetry keeps attributes for, and memo hits and misses: every
// resolution is counted, the ones past the bound (4096 outcomes) under
// _OTHER, and the counters report what was counted.
func TestResolutionCountsBounded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	// Above the SDK's default cardinality limit (2000), which would fold
	// points into its own overflow point.
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithCardinalityLimit(10000))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	tel, err := telemetry.New(&telemetry.Config{MeterProvider: mp})
	if err != nil {
		t.Fatal(err)
	}
	const bound, extra = 4096, 10
	for i := range bound + extra {
		tel.Resolved(ctx, "anon", fmt.Sprintf("reason-%d", i), "resolver", "")
	}
	tel.Resolved(ctx, "anon", "reason-7", "resolver", "") // a cached outcome counts again
	for range 3 {
		tel.MemoHit(ctx)
	}
	tel.MemoMiss(ctx)
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := metricSums(rm)
	if got, want := sums["tablegate.auth.resolutions"], int64(bound+extra+1); got != want {
		t.Errorf("resolutions = %d, want %d", got, want)
	}
	if sums["tablegate.auth.memo.hits"] != 3 || sums["tablegate.auth.memo.misses"] != 1 {
		t.Errorf("memo hits %d, misses %d, want 3 and 1", sums["tablegate.auth.memo.hits"], sums["tablegate.auth.memo.misses"])
	}
	points, other := 0, int64(-1)
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "tablegate.auth.resolutions" {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				points++
				if v, _ := p.Attributes.Value("tablegate.caller.reason"); v.AsString() == "_OTHER" {
					other = p.Value
				} else if v.AsString() == "reason-7" && p.Value != 2 {
					t.Errorf("reason-7 counted %d, want 2", p.Value)
				}
			}
		}
	}
	if points != bound+1 || other != extra {
		t.Errorf("%d data points with %d under _OTHER, want %d and %d", points, other, bound+1, extra)
	}
}

// TestTelemetryJWKSFetchInRequest: a token with an unknown kid makes its
// request fetch the JWKS, in a span under its resolution; a failed fetch
// is counted with outcome error and its span says so, naming no URL path
// or body.
func TestTelemetryJWKSFetchInRequest(t *testing.T) {
	b := setupTelemetryStack(t)
	b.reset()
	tok, err := mintToken(testKeySet(t, algES256), tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: time.Hour, Issuer: b.issuer}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.jwksDown.Store(true)
	if r := b.send(t, "GET", "/api/todos/", map[string]string{"Authorization": "Bearer " + tok}, nil); r.status != 401 {
		t.Fatalf("unknown kid with the JWKS down: %d %s", r.status, r.body)
	}
	server, spans := b.trace(t)
	resolve, ok := find(spans, "tablegate.resolve")
	if !ok {
		t.Fatalf("no resolve span: %v", names(spans))
	}
	fetch, ok := find(spans, "tablegate jwks")
	if !ok {
		t.Fatalf("no JWKS fetch span under the request: %v", names(spans))
	}
	wantChild(t, server, resolve)
	wantChild(t, resolve, fetch)
	wantAttrs(t, fetch, map[string]string{"tablegate.outcome": "error", "http.response.status_code": "503"})
	wantAttrs(t, resolve, map[string]string{"tablegate.caller.kind": "invalid"})
	for _, kv := range fetch.Attributes {
		if v := kv.Value.String(); strings.Contains(v, "jwks.json") || strings.Contains(v, "down") {
			t.Errorf("the fetch span carries %s=%s", kv.Key, v)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := b.metrics.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var failed int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "tablegate.auth.jwks.fetches" {
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value("tablegate.outcome"); v.AsString() == "error" {
						failed += p.Value
					}
				}
			}
		}
	}
	if failed != 1 {
		t.Errorf("JWKS fetches with outcome error: %d, want 1", failed)
	}
}
