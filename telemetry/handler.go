package telemetry

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDHeader is the header that carries a request's id in and out.
const RequestIDHeader = "X-Request-Id"

// MaxRequestIDLen bounds an accepted X-Request-Id; a longer one is
// replaced by a generated id.
const MaxRequestIDLen = 64

// record is what one request served by Handler collects from the layers
// below it (caller resolution, the resource that served it). It is also
// the context of the request it passes down: the context it was given
// (with the server span, if any), and itself under recordKey, at the
// cost of one allocation for both.
type record struct {
	context.Context
	t  *Telemetry
	w  statusWriter // the response writer given to the next handler
	id string       // the request id
	// spanAttrs backs the server span's closing attributes (no
	// allocation): the array of the tracedRecord holding the record, with
	// tracing on; nil without.
	spanAttrs *[8]attribute.KeyValue

	mu                      sync.Mutex
	muxes                   [maxMuxes]string // the latest ServeMux patterns reported (SetPattern), newest first
	req                     *http.Request    // the request passed down: a ServeMux right below sets its Pattern
	route, operation, table string
	kind, reason, source    string
	// subject is the user id of a user (with Config.LogSubject), or for
	// an invalid caller, who has none, the code of its cause (one field:
	// the record stays in its size class).
	subject string
}

// tracedRecord is the record of a request served with tracing on, with
// room for its server span's closing attributes: at most route, status,
// operation, table, caller kind, source, reason and the request id.
type tracedRecord struct {
	record
	attrs [8]attribute.KeyValue
}

type recordKey struct{}

// Value returns rec for recordKey, else the value of its parent context.
func (rec *record) Value(key any) any {
	if key == (recordKey{}) {
		return rec
	}
	return rec.Context.Value(key)
}

func recordFrom(ctx context.Context) *record {
	rec, _ := ctx.Value(recordKey{}).(*record)
	return rec
}

func fromContext(ctx context.Context) *Telemetry {
	if rec := recordFrom(ctx); rec != nil {
		return rec.t
	}
	return nil
}

// FromContext returns the Telemetry serving ctx's request (set by
// [Telemetry.Handler]), nil outside one.
func FromContext(ctx context.Context) *Telemetry { return fromContext(ctx) }

// RequestID returns the id of the request served by [Telemetry.Handler]
// (the accepted or generated X-Request-Id), "" outside one.
func RequestID(ctx context.Context) string {
	if rec := recordFrom(ctx); rec != nil {
		return rec.id
	}
	return ""
}

// SetRoute tells the request served by [Telemetry.Handler] which route
// served it: localPath is the escaped path the handler saw (after any
// http.StripPrefix), pattern its route relative to the same mount point
// ("" for the mount itself, "/{id}", "/{id}/complete"), operation and table
// what it does. The route reported is the mount point (the part of the
// original path that was stripped) followed by pattern, e.g.
// "/api/todos/{id}", or "/api/todos" for the collection: it never holds a
// key or a query value. Outside such a request it does nothing.
//
// The mount point is read through the patterns of the ServeMuxes that
// routed the request: one right below [Telemetry.Handler], and the first
// three reported with [MountPattern] or [SetPattern] (rest reports its
// request's r.Pattern, which http.StripPrefix keeps). A wildcard of such a
// pattern is named, never its value, so a resource mounted at
// "/t/{tenant}/todos/" is reported as "/t/{tenant}/todos/{id}" whatever
// the tenant; levels compose (an outer "/t/{tenant}/" and an inner
// "/todos/"), each pattern used once. A mount point no chain of them
// describes is the path as received (unescaped where that gives UTF-8),
// and at most 64 distinct ones of at most 256 bytes are reported as
// routes; past them, and for any mount point over 1 KB, the request's
// route is "other".
func SetRoute(ctx context.Context, localPath, pattern, operation, table string) {
	rec := recordFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	k := routeKey{mount: rec.mount(localPath), muxes: rec.muxes, pattern: pattern, outer: rec.req.Pattern}
	rec.mu.Unlock()
	route := rec.t.route(k)
	rec.mu.Lock()
	rec.route, rec.operation, rec.table = route, operation, table
	rec.mu.Unlock()
}

// mount returns the part of the request's path before localPath (the
// path the reporting handler saw), with no trailing slash: compared
// escaped, else unescaped (a layer that set only URL.Path re-escapes the
// rest its own way); "" when neither is a suffix.
func (rec *record) mount(localPath string) string {
	u := rec.req.URL // shared with the request as received
	if p := u.EscapedPath(); strings.HasSuffix(p, localPath) {
		return strings.TrimSuffix(p[:len(p)-len(localPath)], "/")
	}
	if lp, err := url.PathUnescape(localPath); err == nil && strings.HasSuffix(u.Path, lp) {
		return strings.TrimSuffix(u.Path[:len(u.Path)-len(lp)], "/")
	}
	return ""
}

// maxMuxes is how many reported ServeMux patterns a request keeps (with
// the one right below Handler, four levels; the first reported are kept,
// outer levels report first): three keep the request's record in the
// 256-byte size class (see TestRecordSize).
const maxMuxes = 3

// maxMountLen is the longest mount point reported as a route.
const maxMountLen = 1024

// describeMount returns the route text of mount (a path with no trailing
// slash) as a chain of patterns describes it, each pattern describing the
// segments after the previous one's and used at most once, and true; of
// several chains, the one with the most literal segments. Literals are
// written as the pattern writes them, wildcards by name. It returns false
// when no chain describes all of mount.
func describeMount(mount string, patterns []string) (string, bool) {
	segs := strings.Split(strings.TrimPrefix(mount, "/"), "/")
	var uniq []string
	for _, p := range patterns {
		if p != "" && !slices.Contains(uniq, p) {
			uniq = append(uniq, p)
		}
	}
	var walk func(i int, used uint) (string, int, bool)
	walk = func(i int, used uint) (route string, literals int, ok bool) {
		if i == len(segs) {
			return "", 0, true
		}
		for j, p := range uniq {
			if used&(1<<j) != 0 {
				continue
			}
			r, n, lits, aligned := alignPattern(p, segs[i:])
			if !aligned || n == 0 {
				continue
			}
			if rest, l, full := walk(i+n, used|1<<j); full && (!ok || lits+l > literals) {
				route, literals, ok = r+rest, lits+l, true
			}
		}
		return route, literals, ok
	}
	route, _, ok := walk(0, 0)
	return route, ok
}

// patternPath returns the path of a ServeMux pattern: without its method
// and host; "" when it has none.
func patternPath(p string) string {
	if i := strings.IndexAny(p, " \t"); i >= 0 {
		p = strings.TrimLeft(p[i:], " \t")
	}
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[i:]
	}
	return ""
}

// alignPattern matches the ServeMux pattern p against the start of segs
// and returns the route text of the segments it describes, how many, and
// how many of them are literals. A pattern describes the segments it has
// in common with segs (one that goes on past them describes a mount with
// the resource's own path after it, as "/api/todos/{id}" does
// "/api/todos"); one that ends in a prefix ("/api/") its own segments,
// unless it ends in {$}; one that ends in {name...} all of segs; an exact
// one shorter than segs none. Literals are compared unescaped, as
// ServeMux matches them.
func alignPattern(p string, segs []string) (route string, n, literals int, ok bool) {
	pp := patternPath(p)
	if pp == "" {
		return "", 0, 0, false
	}
	end := strings.HasSuffix(pp, "/{$}")
	pp = strings.TrimSuffix(pp, "{$}")
	prefix := strings.HasSuffix(pp, "/")
	pp = strings.Trim(pp, "/")
	var psegs []string
	if pp != "" {
		psegs = strings.Split(pp, "/")
	}
	rest := ""
	if k := len(psegs); k > 0 && strings.HasPrefix(psegs[k-1], "{") && strings.HasSuffix(psegs[k-1], "...}") {
		rest, psegs = psegs[k-1], psegs[:k-1]
	}
	n = min(len(psegs), len(segs))
	var b strings.Builder
	for i, ps := range psegs[:n] {
		if !strings.HasPrefix(ps, "{") || !strings.HasSuffix(ps, "}") {
			lit, err := url.PathUnescape(ps)
			if err != nil {
				return "", 0, 0, false
			}
			if seg, err := url.PathUnescape(segs[i]); err != nil || seg != lit {
				return "", 0, 0, false
			}
			literals++
		}
		b.WriteString("/" + ps)
	}
	switch {
	case len(psegs) >= len(segs):
		return b.String(), n, literals, true
	case rest != "":
		b.WriteString("/" + rest)
		return b.String(), len(segs), literals, true
	case prefix && !end:
		return b.String(), n, literals, true
	}
	return "", 0, 0, false
}

// receivedMount returns mount with each segment unescaped where that
// gives valid UTF-8 (attribute values and span names must be), so that
// one mount point written with different escapes is one route.
func receivedMount(mount string) string {
	if !strings.Contains(mount, "%") {
		return mount
	}
	segs := strings.Split(mount, "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil && utf8.ValidString(u) {
			segs[i] = u
		}
	}
	return strings.Join(segs, "/")
}

// SetPattern records a route pattern of a ServeMux-style handler (such as
// r.Pattern, with or without its method) for the request served by
// [Telemetry.Handler], unless a more precise route was set already. The
// catch-all "/" names no route and is ignored (the root alone is "/{$}").
// The Handler does this itself for a ServeMux directly below it.
func SetPattern(ctx context.Context, pattern string) {
	if rec := recordFrom(ctx); rec != nil {
		rec.setPattern(pattern)
	}
}

// MountPattern records pattern, the ServeMux-style pattern of a router
// that routed the request below [Telemetry.Handler] (such as r.Pattern),
// for [SetRoute] to read the mount point through; unlike [SetPattern] it
// names no route of its own. A rest resource reports its request's
// r.Pattern this way.
func MountPattern(ctx context.Context, pattern string) {
	if rec := recordFrom(ctx); rec != nil && pattern != "" {
		rec.mu.Lock()
		rec.addMux(pattern)
		rec.mu.Unlock()
	}
}

// addMux keeps pattern among the request's reported patterns: the first
// maxMuxes distinct ones (rec.mu held).
func (rec *record) addMux(pattern string) {
	for i, p := range rec.muxes {
		switch p {
		case pattern:
			return
		case "":
			rec.muxes[i] = pattern
			return
		}
	}
}

// setPattern is SetPattern on the request's record. The latest patterns
// reported are also those SetRoute reads the mount point through.
func (rec *record) setPattern(pattern string) {
	if pattern == "" {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.addMux(pattern)
	if p := patternPath(pattern); p == "/" || p == "" {
		return // a catch-all: the request stays "other" unless a route is set
	}
	if i := strings.IndexAny(pattern, " \t"); i >= 0 { // the method
		pattern = strings.TrimLeft(pattern[i:], " \t")
	}
	if rec.route == "" {
		rec.route = pattern
	}
}

// StartSpan starts a child span of ctx with the tracer of the request
// served by [Telemetry.Handler]; outside one, or with tracing off, it
// returns ctx and a no-op span. End the span.
func StartSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	t := fromContext(ctx)
	if t == nil || !t.tracing {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// EndSpan ends span, marking it failed with err's type (never its
// message, which may quote input) when err is not nil.
func EndSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// knownMethod returns m when it is a standard HTTP method, else "_OTHER"
// (as OpenTelemetry's HTTP conventions say): a client must not be able
// to mint new metric series or span names.
func knownMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "_OTHER"
}

// ValidRequestID reports whether s is an X-Request-Id tablegate accepts:
// 1..MaxRequestIDLen characters from [A-Za-z0-9._:+/=-]. Handler replaces
// any other with a generated id; rest, used without Handler, ignores it.
func ValidRequestID(s string) bool {
	if s == "" || len(s) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// NewRequestID returns a random 24-hex-digit request id. It is unique, not
// secret: the bits come from math/rand/v2 (the runtime's ChaCha8 generator,
// seeded from the operating system), which costs no system call.
func NewRequestID() string {
	var b [12]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(b[8:], rand.Uint32())
	return hex.EncodeToString(b[:])
}

// Handler wraps next as tablegate's outermost layer: it accepts the
// request's X-Request-Id (1–64 characters of [A-Za-z0-9._:+/=-]) or
// generates one, passes it down in the request header and echoes it on the
// response; it continues the caller's trace (traceparent) in a server span
// named by method and route; it records the request duration by method,
// route, operation, status and caller kind; and it writes the access log
// line. The span and metrics carry the route pattern, never the path, the
// query, a header value or a body.
//
// Mount the caller resolution middleware (authctx) and the resources below
// it: they report the caller kind and route to it. A nil Telemetry returns
// next unchanged.
func (t *Telemetry) Handler(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		method := knownMethod(r.Method)
		var rec *record
		if t.tracing {
			tr := &tracedRecord{}
			rec = &tr.record
			rec.spanAttrs = &tr.attrs
		} else {
			rec = &record{}
		}
		rec.t = t
		rec.w.ResponseWriter = w
		id := r.Header.Get(RequestIDHeader)
		if !ValidRequestID(id) || len(r.Header[RequestIDHeader]) > 1 {
			id = NewRequestID()
			if r.Header == nil { // a request built by hand; servers always set one
				r.Header = make(http.Header, 1)
			}
			r.Header[RequestIDHeader] = []string{id} // its own: a write into it does not change the id logged
		}
		rec.id = id
		// The request's header holds exactly [id] now: the response shares
		// that slice (Header.Add appends to a full slice, so never into it).
		w.Header()[RequestIDHeader] = r.Header[RequestIDHeader]
		ctx := r.Context()
		if t.tracing {
			ctx = t.prop.Extract(ctx, headerCarrier(r.Header))
			ctx, _ = t.tracer.Start(ctx, method, t.serverStart[method]...)
		} else if t.log != nil {
			// No span of its own: the access log names the caller's trace
			// (traceparent), and calls made below carry it on.
			ctx = t.prop.Extract(ctx, headerCarrier(r.Header))
		}
		rec.Context = ctx
		sw := &rec.w
		inner := r.WithContext(rec)
		rec.req = inner
		defer func() {
			p := recover()
			if p != nil && sw.status == 0 {
				sw.status = http.StatusInternalServerError
			}
			// A ServeMux right below records the pattern it matched on
			// the request it was given: the route of handlers that do
			// not report one (a health check, an event stream).
			rec.setPattern(inner.Pattern)
			t.finish(rec, method, sw.code(), time.Since(start))
			if p != nil {
				panic(p)
			}
		}()
		next.ServeHTTP(sw, inner)
	})
}

// headerCarrier reads trace context from a request header like
// propagation.HeaderCarrier, without allocating to canonicalize the
// W3C keys (the propagators ask for them in lower case).
type headerCarrier http.Header

func (h headerCarrier) Get(key string) string {
	var v []string
	switch key {
	case "traceparent":
		v = h["Traceparent"]
	case "tracestate":
		v = h["Tracestate"]
	case "baggage":
		v = h["Baggage"]
	default:
		return http.Header(h).Get(key)
	}
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

func (h headerCarrier) Set(key, value string) { http.Header(h).Set(key, value) }

func (h headerCarrier) Keys() []string { return propagation.HeaderCarrier(h).Keys() }

// finish ends the server span, records the duration and writes the
// access log line.
func (t *Telemetry) finish(rec *record, method string, status int, d time.Duration) {
	var ctx context.Context = rec
	rec.mu.Lock()
	route, op, table, kind, source, reason, subject := rec.route, rec.operation, rec.table, rec.kind, rec.source, rec.reason, rec.subject
	rec.mu.Unlock()
	if route == "" {
		route = "other"
	}
	var ra *requestAttrs
	if t.tracing || t.duration != nil {
		ra = t.requestAttrsFor(requestKey{method: method, route: route, op: op, table: table, kind: kind, source: source, reason: reason, status: status})
	}
	// The server span, or without tracing the caller's trace (or a span
	// of a layer above): what the line and an exemplar name.
	sp := trace.SpanFromContext(rec.Context)
	sc := sp.SpanContext()
	if t.tracing {
		sp.SetName(ra.name)
		a := append(append(rec.spanAttrs[:0], ra.span...), AttrRequestID.String(rec.id))
		sp.SetAttributes(a...)
		if status >= 500 {
			sp.SetStatus(codes.Error, "")
		}
		sp.End()
	}
	if t.duration != nil {
		// The context only names the span an exemplar links to: without
		// one, an empty context spares the SDK's exemplar filter a walk
		// up the request's context.
		mctx := context.Background()
		if sc.IsValid() {
			mctx = ctx
		}
		t.duration.Record(mctx, d.Seconds(), ra.record...)
	}
	if t.log != nil {
		line := AccessLine{Time: time.Now(), Method: method, Route: route, Status: status, DurationMS: float64(d.Microseconds()) / 1000,
			RequestID: rec.id, CallerKind: kind, Operation: op, Table: table, Subject: subject}
		if kind == "invalid" {
			line.Subject = ""
			if subject != "" { // the cause, see record.subject
				line.CallerReason, line.CallerCause = reason, subject
			}
		}
		if sc.IsValid() {
			line.TraceID = sc.TraceID().String()
		}
		t.writeLine(ctx, &line)
	}
}

// writeLine writes l to the access log: to an [AccessLineHandler] as it
// is, to any other handler as a record, as Logger.LogAttrs does but
// without the caller's program counter (runtime.Callers, about a third
// of a line's cost): the line has no source worth naming.
func (t *Telemetry) writeLine(ctx context.Context, l *AccessLine) {
	h := t.log.Handler()
	if lh, ok := h.(AccessLineHandler); ok {
		_ = lh.HandleAccessLine(*l)
		return
	}
	if lctx := context.WithoutCancel(ctx); h.Enabled(lctx, slog.LevelInfo) {
		var buf [10]slog.Attr
		r := slog.NewRecord(l.Time, slog.LevelInfo, "request", 0)
		r.AddAttrs(l.AppendAttrs(buf[:0])...)
		_ = h.Handle(lctx, r)
	}
}

// statusWriter remembers the status code; it keeps Flush, Hijack and
// ResponseController working.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher (server-sent events).
func (w *statusWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack implements http.Hijacker.
func (w *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if h, ok := w.ResponseWriter.(http.Hijacker); ok {
		return h.Hijack()
	}
	return nil, nil, errors.New("telemetry: the response writer cannot hijack")
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
