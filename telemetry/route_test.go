package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
)

// withPath returns a copy of r with the decoded path path (URL.RawPath
// cleared), as an application that strips a variable prefix itself
// passes its request on; the copy keeps r.Pattern.
func withPath(r *http.Request, path string) *http.Request {
	r2 := new(http.Request)
	*r2 = *r
	u := *r.URL
	u.Path, u.RawPath = path, ""
	r2.URL = &u
	return r2
}

// dropSegments serves next with the first n segments of the path taken
// off (see withPath).
func dropSegments(n int, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, withPath(r, "/"+strings.SplitN(r.URL.Path, "/", n+2)[n+1]))
	})
}

// routeOf serves req through h and returns the route of its access log
// line.
func routeOf(t *testing.T, h http.Handler, buf *bytes.Buffer, target string) string {
	t.Helper()
	buf.Reset()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
	var line struct{ Route string }
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("%s: %v (%q)", target, err, buf.String())
	}
	return line.Route
}

// restResource reports what rest reports for a todos resource: its
// request's ServeMux pattern, then its own route ("/{id}", or the
// collection's "").
var restResource = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	MountPattern(r.Context(), r.Pattern)
	pattern := "/{id}"
	if r.URL.Path == "" || r.URL.Path == "/" {
		pattern = ""
	}
	SetRoute(r.Context(), r.URL.EscapedPath(), pattern, "get", "todos")
})

// TestRouteNamesMountWildcards mounts a resource below a ServeMux pattern
// with a wildcard: every tenant's requests share one route, which names
// the wildcard and never holds its value.
func TestRouteNamesMountWildcards(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	resource := restResource
	// The application strips the variable prefix itself (StripPrefix takes
	// a fixed one); the request copy keeps r.Pattern.
	strip := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			i := strings.Index(r.URL.Path, "/todos")
			next.ServeHTTP(w, withPath(r, r.URL.Path[i+len("/todos"):]))
		})
	}
	// Nested: an outer mux takes the tenant off, an inner one routes the
	// table (each mux sets r.Pattern on the request it was given).
	inner := http.NewServeMux()
	inner.Handle("/todos/", http.StripPrefix("/todos", resource))
	mux := http.NewServeMux()
	mux.Handle("GET /t/{tenant}/todos/", strip(resource))
	mux.Handle("GET /o/{org}/p/{rest...}", strip(resource))
	mux.Handle("GET /a/{tenant}/todos/{$}", strip(resource))
	mux.Handle("GET /d/{tenant}/todos/{id}", strip(resource))
	mux.Handle("GET /b/{tenant}/a%20b/todos/", strip(resource))
	mux.Handle("/n/{tenant}/", dropSegments(2, inner))
	h := tel.Handler(mux)
	for target, want := range map[string]string{
		"/t/acme/todos/1":           "/t/{tenant}/todos/{id}",
		"/t/globex/todos/2":         "/t/{tenant}/todos/{id}",
		"/t/initech/todos/":         "/t/{tenant}/todos",
		"/t/secret-42/%74odos/1":    "/t/{tenant}/todos/{id}",
		"/o/acme/p/deep/todos/3":    "/o/{org}/p/{rest...}/{id}",
		"/o/globex/p/other/todos/":  "/o/{org}/p/{rest...}",
		"/n/acme/todos/4":           "/n/{tenant}/todos/{id}",
		"/n/globex/todos/5":         "/n/{tenant}/todos/{id}",
		"/a/secret-1/todos/":        "/a/{tenant}/todos",
		"/d/secret-4/todos/1":       "/d/{tenant}/todos/{id}",
		"/b/secret-2/a%20b/todos/1": "/b/{tenant}/a%20b/todos/{id}",
		"/t/acme/todos/%41":         "/t/{tenant}/todos/{id}", // the strip re-escapes the key its own way
	} {
		if got := routeOf(t, h, &buf, target); got != want {
			t.Errorf("%s: route %q, want %q", target, got, want)
		}
	}
	// Tenants do not fill the route cache (nor the mounts reported as
	// received).
	for i := range 200 {
		routeOf(t, h, &buf, fmt.Sprintf("/t/tenant-%d/todos/1", i))
	}
	tel.cacheMu.RLock()
	defer tel.cacheMu.RUnlock()
	if len(tel.routes) > 20 || len(tel.shapes) > 20 || len(tel.pathMounts) != 0 {
		t.Errorf("after 200 tenants: %d routes and %d shapes cached, %d path mounts", len(tel.routes), len(tel.shapes), len(tel.pathMounts))
	}
	for k := range tel.shapes {
		if strings.Contains(k.mount, "tenant-") || strings.Contains(k.mount, "acme") {
			t.Errorf("a shape holds a wildcard's value: %q", k.mount)
		}
	}
}

// shapeChains are chains of ServeMux patterns for the mount shape tests:
// wildcards, {rest...}, {$}, escaped literals (one holding a slash), a
// literal beside a wildcard at the same place, a method.
var shapeChains = [][]string{
	{"/t/{tenant}/todos/"},
	{"/todos/", "/t/{tenant}/"},
	{"/todos/", "/v1/", "/c/{tenant}/"},
	{"/o/{org}/p/{rest...}"},
	{"/b/{t}/a%20b/"},
	{"/x/{a}/a%2Fb/", "/a/", "/b/"},
	{"/api/todos/{$}", "/{x}/"},
	{"/{a}/", "/{b}/", "/todos/"},
	{"GET /t/{tenant}/todos/{id}", "/t/admin/todos/"},
	{"/t/%zz/", "/t/{tenant}/"},
}

// TestMountShape: mounts that differ only in wildcard values share a
// shape, which holds none of them; a segment a pattern names keeps it
// apart, however it is escaped, and a literal holding a slash does not
// pass for two segments.
func TestMountShape(t *testing.T) {
	t.Parallel()
	same := func(pats []string, a, b string) {
		t.Helper()
		if sa, sb := mountShape(a, pats), mountShape(b, pats); sa != sb {
			t.Errorf("%q: shapes of %q and %q differ: %q, %q", pats, a, b, sa, sb)
		} else if strings.Contains(sa, "acme") || strings.Contains(sa, "globex") {
			t.Errorf("%q: shape %q holds a wildcard's value", pats, sa)
		}
	}
	apart := func(pats []string, a, b string) {
		t.Helper()
		if sa, sb := mountShape(a, pats), mountShape(b, pats); sa == sb {
			t.Errorf("%q: %q and %q share the shape %q", pats, a, b, sa)
		}
	}
	same(shapeChains[0], "/t/acme/todos", "/t/globex/todos")
	same(shapeChains[0], "/t/acme/%74odos", "/t/globex/todos")
	same(shapeChains[3], "/o/acme/p/a/b", "/o/globex/p/c/d")
	apart(shapeChains[3], "/o/acme/p/a", "/o/acme/p/a/b")
	apart(shapeChains[8], "/t/admin/todos", "/t/acme/todos")
	apart(shapeChains[5], "/x/y/a%2Fb", "/x/y/a/b")
	if r1, _ := describeMount("/x/y/a%2Fb", shapeChains[5]); r1 != "/x/{a}/a%2Fb" {
		t.Errorf("describeMount(/x/y/a%%2Fb) = %q", r1)
	}
}

// FuzzMountShape: replacing every segment of a mount that no pattern
// names (a wildcard's value, say) by other such text keeps its shape, and
// describeMount describes both alike, so a route cached by shape is the
// route of every mount of that shape.
func FuzzMountShape(f *testing.F) {
	for _, seed := range [][2]string{
		{"/t/acme/todos", "globex"},
		{"/t/acme/%74odos", "x"},
		{"/x/y/a%2Fb", "z"},
		{"/t/admin/todos", "acme"},
		{"/o/acme/p/a/b/c", "%"},
		{"/c/x/v1/todos", ""},
		{"/a//b", "b%2"},
		{"/api/todos", "%61pi"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, mount, alt string) {
		if strings.Contains(alt, "/") {
			return
		}
		for _, pats := range shapeChains {
			if _, named := patternLiteral(alt, pats); named {
				continue
			}
			segs := strings.Split(strings.TrimPrefix(mount, "/"), "/")
			for i, seg := range segs {
				if _, named := patternLiteral(seg, pats); !named {
					segs[i] = alt
				}
			}
			other := "/" + strings.Join(segs, "/")
			if s1, s2 := mountShape(mount, pats), mountShape(other, pats); s1 != s2 {
				t.Fatalf("%q: shapes of %q and %q differ: %q, %q", pats, mount, other, s1, s2)
			}
			r1, ok1 := describeMount(mount, pats)
			r2, ok2 := describeMount(other, pats)
			if r1 != r2 || ok1 != ok2 {
				t.Errorf("%q: %q is described as %q, %v; %q of the same shape as %q, %v", pats, mount, r1, ok1, other, r2, ok2)
			}
		}
	})
}

// TestPathMountsBounded mounts resources where no ServeMux pattern
// describes the mount point: the first maxPathMounts are reported as
// received, further ones as "other", so path segments cannot mint series
// without bound.
func TestPathMountsBounded(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/7", "/{id}", "get", "items")
	}))
	for i := range maxPathMounts + 10 {
		want := fmt.Sprintf("/m%d/{id}", i)
		if i >= maxPathMounts {
			want = "other"
		}
		if got := routeOf(t, h, &buf, fmt.Sprintf("/m%d/7", i)); got != want {
			t.Fatalf("mount %d: route %q, want %q", i, got, want)
		}
	}
	// A mount seen before the bound keeps its route.
	if got := routeOf(t, h, &buf, "/m3/7"); got != "/m3/{id}" {
		t.Errorf("a known mount reported as %q", got)
	}
}

func TestDescribeMount(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mount    string
		patterns []string
		want     string // "" when not described
	}{
		{"/api/todos", []string{"/api/todos/"}, "/api/todos"},
		{"/api/todos", []string{"GET /api/todos/"}, "/api/todos"},
		{"/api/todos", []string{"example.com/api/todos/"}, "/api/todos"},
		{"/api/todos", []string{"/api/todos/{path...}"}, "/api/todos"},
		{"/api/todos", []string{"/api/todos"}, "/api/todos"},
		{"/t/acme/todos", []string{"/t/{tenant}/todos/"}, "/t/{tenant}/todos"},
		{"/t/acme/%74odos", []string{"/t/{tenant}/todos/"}, "/t/{tenant}/todos"}, // the mux matches unescaped
		{"/x/a/b", []string{"/x/{rest...}"}, "/x/{rest...}"},
		// Two levels: an outer prefix and an inner pattern for the rest.
		{"/t/acme/todos", []string{"/todos/", "/t/{tenant}/"}, "/t/{tenant}/todos"},
		{"/v1/todos", []string{"/todos/", "/v1/"}, "/v1/todos"},
		{"/api/todos", []string{"/", "/api/todos/"}, "/api/todos"},
		{"/c/x/v1/todos", []string{"/todos/", "/v1/", "/c/{tenant}/"}, "/c/{tenant}/v1/todos"}, // three levels
		{"/api/todos", []string{"/api/todos/{$}"}, "/api/todos"},
		{"/api/todos", []string{"GET\t/api/todos/"}, "/api/todos"},
		// Each pattern once: a wildcard-only one does not repeat, and of
		// two levels the one that names the segment wins.
		{"/v1/todos", []string{"/todos/", "/{version}/", "/{version}/"}, "/{version}/todos"},
		{"/v1/todos", []string{"/{a}/", "/{b}/", "/todos/"}, "/{a}/todos"},
		{"/t/x/v1/todos", []string{"/t/{tenant}/", "/todos/", "/v1/"}, "/t/{tenant}/v1/todos"},
		{"/api/todos", []string{"GET /api/todos/{id}"}, "/api/todos"}, // the pattern goes on into the resource's path
		{"/api/todos", []string{"/api/todos/x/"}, "/api/todos"},
		{"/b/x/a%20b", []string{"/b/{t}/a%20b/"}, "/b/{t}/a%20b"},
		{"/b/x/a b", []string{"/b/{t}/a%20b/"}, "/b/{t}/a%20b"},
		// Not described: the path as received is used (bounded).
		{"/api/todos", nil, ""},
		{"/api/todos", []string{""}, ""},
		{"/api/todos", []string{"/todos/"}, ""},         // another level's, nothing before it
		{"/t/acme/todos", []string{"/t/{tenant}/"}, ""}, // the rest unknown
		{"/v1/todos", []string{"/v1/"}, ""},
		{"/api/todos", []string{"/"}, ""},
		{"/a/todos", []string{"/{tenant}/"}, ""},
		{"/a/b/c", []string{"/{x}/", "/{y}/"}, ""},
		{"/api/todos/x", []string{"/api/todos/{$}", "/x/"}, ""}, // {$}: the path ends there
		{"/api/todos/more", []string{"/api/todos"}, ""},
		{"/api/todos", []string{"/api/%zz/"}, ""},
		{"/a", []string{"nohost"}, ""},
	} {
		got, ok := describeMount(tc.mount, tc.patterns)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("describeMount(%q, %q) = %q, %v; want %q", tc.mount, tc.patterns, got, ok, tc.want)
		}
	}
}

// TestAccessLogTraceID: with tracing off, the line still names the
// caller's trace from its traceparent.
func TestAccessLogTraceID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	h := tel.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), req)
	if !strings.Contains(buf.String(), `"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736"`) {
		t.Errorf("no caller trace id in %s", buf.String())
	}
	buf.Reset()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if strings.Contains(buf.String(), "trace_id") {
		t.Errorf("a trace id without a traceparent: %s", buf.String())
	}
}

// TestHandlerWithoutHeader serves a request built by hand with no header
// map: an id is generated, nothing panics.
func TestHandlerWithoutHeader(t *testing.T) {
	t.Parallel()
	tel, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest("GET", "/", nil)
	req.Header = nil
	rec := httptest.NewRecorder()
	tel.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(rec, req)
	if !ValidRequestID(rec.Header().Get(RequestIDHeader)) {
		t.Errorf("no request id: %v", rec.Header())
	}
}

// memoObserver records what the memo size gauge reports.
type memoObserver struct {
	metric.Observer
	t    *Telemetry
	size int64
}

func (o *memoObserver) ObserveInt64(inst metric.Int64Observable, v int64, _ ...metric.ObserveOption) {
	if inst == metric.Int64Observable(o.t.memoSize) {
		o.size = v
	}
}

func (o *memoObserver) ObserveFloat64(metric.Float64Observable, float64, ...metric.ObserveOption) {}

// TestObserveMemoSizeStops: the gauge sums the registered memos until
// each is stopped.
func TestObserveMemoSizeStops(t *testing.T) {
	t.Parallel()
	tel, err := New(&Config{MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		o := &memoObserver{t: tel}
		if err := tel.observe(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		return o.size
	}
	stop1 := tel.ObserveMemoSize(func() int64 { return 3 })
	stop2 := tel.ObserveMemoSize(func() int64 { return 4 })
	if got := size(); got != 7 {
		t.Fatalf("memo size %d, want 7", got)
	}
	stop1()
	stop1() // twice is harmless
	if got := size(); got != 4 {
		t.Errorf("after one stop: memo size %d, want 4", got)
	}
	stop2()
	if got := size(); got != 0 || len(tel.memoFn) != 0 {
		t.Errorf("after both stops: memo size %d, %d held", got, len(tel.memoFn))
	}
}

// TestRecordSize: a request allocates one record, in the 256-byte size
// class while it is at most 256 bytes; with tracing on, one tracedRecord,
// in the 768-byte class while it is at most 760 bytes (an object over 512
// bytes that holds pointers carries an 8-byte header). Past them, in the
// next class (288, 896), which every request would pay.
func TestRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(record{}); n > 256 {
		t.Errorf("record is %d bytes, over 256", n)
	}
	if n := unsafe.Sizeof(tracedRecord{}); n > 760 {
		t.Errorf("tracedRecord is %d bytes, over 760", n)
	}
}

// TestRouteBelowMiddleware: the documented stack, caller resolution
// between Handler and the muxes (it passes a request copy down, so the
// mux below it is not the one Handler keeps), three levels reported:
// the outer tenant mux by the application, the set's table and rest's
// own mux pattern.
func TestRouteBelowMiddleware(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	resource := restResource
	set := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { // as rest.Router
		MountPattern(r.Context(), "/todos/")
		http.StripPrefix("/todos", resource).ServeHTTP(w, r)
	})
	inner := http.NewServeMux()
	inner.Handle("/v1/", http.StripPrefix("/v1", set))
	outer := http.NewServeMux()
	outer.Handle("/t/{tenant}/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		MountPattern(r.Context(), r.Pattern)
		dropSegments(2, inner).ServeHTTP(w, r)
	}))
	middleware := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		outer.ServeHTTP(w, r.WithContext(r.Context()))
	})
	h := tel.Handler(middleware)
	for _, tenant := range []string{"acme", "globex", "%FF"} {
		if got := routeOf(t, h, &buf, "/t/"+tenant+"/v1/todos/1"); got != "/t/{tenant}/v1/todos/{id}" {
			t.Errorf("tenant %s: route %q", tenant, got)
		}
	}
}

// TestReceivedMountsStayUTF8: a mount reported as received keeps an
// escape that does not decode to UTF-8 (exporters refuse such strings),
// and a mount over 1 KB is "other".
func TestReceivedMountsStayUTF8(t *testing.T) {
	t.Parallel()
	if got := receivedMount("/t/%FF/caf%C3%A9"); got != "/t/%FF/café" {
		t.Errorf("receivedMount = %q", got)
	}
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), "/7", "/{id}", "get", "items")
	}))
	if got := routeOf(t, h, &buf, "/%FF/7"); got != "/%FF/{id}" {
		t.Errorf("route %q", got)
	}
	if got := routeOf(t, h, &buf, "/"+strings.Repeat("a", maxMountLen)+"/7"); got != "other" {
		t.Errorf("a mount over 1 KB: route %q", got)
	}
}

// TestRouteFromDecodedPathStaysUTF8: a mount taken from the decoded path
// (a layer that set only URL.Path) and described by no pattern is
// re-escaped where it is not UTF-8. (The access log's JSON would hide
// the bytes; span names and metric attributes would carry them.)
func TestRouteFromDecodedPathStaysUTF8(t *testing.T) {
	t.Parallel()
	tel, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	var got string
	h := tel.Handler(dropSegments(1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		SetRoute(r.Context(), r.URL.EscapedPath(), "/{id}", "get", "items")
		got = recordFrom(r.Context()).route
	})))
	for _, target := range []string{"/%FF/%41", "/%C3/%41"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
		if !utf8.ValidString(got) || !strings.HasSuffix(got, "/{id}") || len(got) <= len("/{id}") {
			t.Errorf("%s: route %q", target, got)
		}
	}
}

// TestRequestIDNotRewritten: a write into the request's X-Request-Id
// value below the Handler does not change the id it logs.
func TestRequestIDNotRewritten(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tel, err := New(&Config{AccessLog: newTestLogger(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	h := tel.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id = RequestID(r.Context())
		r.Header[RequestIDHeader][0] = "forged"
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if strings.Contains(buf.String(), "forged") || !strings.Contains(buf.String(), id) {
		t.Errorf("logged %s (id %s)", buf.String(), id)
	}
}

// BenchmarkRouteWildcardMount reports the route of a resource below two
// ServeMux levels, an outer one with a tenant wildcard and an inner one
// naming the table, for a different tenant each request; "literal" is
// the same stack with the tenant written into the outer pattern (its
// mount point's route is looked up by the mount itself).
func BenchmarkRouteWildcardMount(b *testing.B) {
	for _, c := range []struct{ name, outer, route string }{
		{"wildcard", "/t/{tenant}/", "/t/{tenant}/todos/{id}"},
		{"literal", "/t/tenant-1/", "/t/tenant-1/todos/{id}"},
	} {
		b.Run(c.name, func(b *testing.B) {
			tel, err := New(nil)
			if err != nil {
				b.Fatal(err)
			}
			var got string
			resource := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				restResource(w, r)
				rec := recordFrom(r.Context())
				rec.mu.Lock()
				got = rec.route
				rec.mu.Unlock()
			})
			inner := http.NewServeMux()
			inner.Handle("/todos/", http.StripPrefix("/todos", resource))
			mux := http.NewServeMux()
			mux.Handle(c.outer, dropSegments(2, inner))
			h := tel.Handler(mux)
			reqs := make([]*http.Request, 64)
			for i := range reqs {
				tenant := i
				if c.name == "literal" {
					tenant = 1
				}
				reqs[i] = httptest.NewRequest("GET", fmt.Sprintf("/t/tenant-%d/todos/%d", tenant, i), nil)
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				h.ServeHTTP(w, reqs[i%len(reqs)])
				i++
			}
			if got != c.route {
				b.Fatalf("route %q, want %q", got, c.route)
			}
		})
	}
}
