package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span and instrument
// tablegate creates.
const ScopeName = "github.com/tablegate/tablegate"

// Attribute keys tablegate sets on spans and metrics. None of them ever
// carries a token, a cookie, a claim value or a row value.
const (
	AttrOperation    = attribute.Key("tablegate.operation")
	AttrTable        = attribute.Key("tablegate.table")
	AttrCallerKind   = attribute.Key("tablegate.caller.kind")
	AttrCallerSource = attribute.Key("tablegate.caller.source")
	AttrCallerReason = attribute.Key("tablegate.caller.reason")
	AttrRequestID    = attribute.Key("tablegate.request_id")
	AttrOutcome      = attribute.Key("tablegate.outcome")
	AttrHook         = attribute.Key("tablegate.hook")
	AttrPermission   = attribute.Key("tablegate.permission")
	AttrDecision     = attribute.Key("tablegate.decision")
	AttrCall         = attribute.Key("tablegate.call")

	attrMethod = attribute.Key("http.request.method")
	attrRoute  = attribute.Key("http.route")
	attrStatus = attribute.Key("http.response.status_code")
)

// Config configures a [Telemetry]. Every field is optional.
type Config struct {
	// TracerProvider creates tablegate's spans; nil records no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider creates tablegate's instruments; nil records no
	// metrics.
	MeterProvider metric.MeterProvider
	// Propagator reads the caller's trace context from incoming requests
	// and writes it on outgoing calls (session refresh, JWKS fetch); nil
	// means W3C traceparent/tracestate only. Baggage is not read by
	// default: it would carry whatever any caller sends on to the auth
	// server; add propagation.Baggage when the callers are trusted.
	Propagator propagation.TextMapPropagator
	// AccessLog receives one line per request served by [Telemetry.Handler]
	// (method, route, status, duration, request id, caller kind, trace
	// id), at level Info, in records without a source position (a
	// handler's AddSource finds none); nil writes none.
	AccessLog *slog.Logger
	// LogSubject adds the caller's subject (the user id) to the access
	// log line. It never reaches spans or metrics.
	LogSubject bool
}

func (c *Config) validate() error {
	if c.LogSubject && c.AccessLog == nil {
		return errors.New("telemetry: Config.LogSubject needs Config.AccessLog")
	}
	return nil
}

// Telemetry holds tablegate's tracer, instruments and access log. Build it
// with [New] and hand it to the packages that report to it
// (authctx.Config.Telemetry, db.Instrument) and wrap the HTTP handler with
// [Telemetry.Handler]. A nil *Telemetry is valid and records nothing at no
// cost: every method returns at once. Safe for concurrent use.
type Telemetry struct {
	tp      trace.TracerProvider
	mp      metric.MeterProvider
	tracer  trace.Tracer
	tracing bool
	prop    propagation.TextMapPropagator
	log     *slog.Logger
	subject bool

	duration        metric.Float64Histogram
	resolutionCount metric.Int64ObservableCounter
	memoHits        metric.Int64ObservableCounter
	memoMisses      metric.Int64ObservableCounter
	jwksFetches     metric.Int64Counter
	refreshCalls    metric.Int64Counter
	refreshShared   metric.Int64Counter
	refreshOutcomes metric.Int64Counter
	approvalsReq    metric.Int64Counter
	approvalsDec    metric.Int64Counter
	eventsDelivered metric.Int64Counter
	memoSize        metric.Int64ObservableGauge

	mu       sync.Mutex
	memoFn   map[int]func() int64 // by registration, see ObserveMemoSize
	memoNext int

	// The hot-path counters (every request resolves a caller, most hit
	// the memo) are atomics read by the metric callback at collection:
	// an increment instead of an SDK measurement per request.
	counting            bool
	nMemoHit, nMemoMiss atomic.Int64

	// serverStart holds the start options of the server span per known
	// method (span kind and method, built once: a sampler sees the method).
	serverStart map[string][]trace.SpanStartOption

	// The attributes of request and resolution spans and metrics, built
	// once per distinct combination (routes are patterns, the rest small
	// enumerations: a handful of entries), so that a request allocates
	// none of them.
	cacheMu     sync.RWMutex
	requests    map[requestKey]*requestAttrs
	resolutions map[resolutionKey]*resolutionAttrs
	routes      map[routeKey]string
	shapes      map[routeKey]string // routes of mounts with wildcards, by mountShape
	pathMounts  map[string]struct{} // mount points reported as received, at most maxPathMounts
}

// routeKey is what a resource's route is computed from: its mount point
// (the escaped path before its own), the ServeMux patterns that routed the
// request (outer: the one right below Handler; muxes: those reported),
// and its own pattern.
type routeKey struct {
	mount, outer, pattern string
	muxes                 [maxMuxes]string
}

// maxPathMounts bounds the mount points reported as received (no ServeMux
// pattern describes them): past it a request under another one is
// reported as route "other", so that path segments cannot mint series.
const maxPathMounts = 64

// maxCachedMount is the longest mount point whose route is kept in the
// cache (a client chooses its length).
const maxCachedMount = 256

// route returns the route of a resource (see SetRoute): its mount point
// read through the patterns, followed by its own pattern, built once per
// combination.
func (t *Telemetry) route(k routeKey) string {
	if k.mount == "" {
		if k.pattern == "" {
			return "/"
		}
		return k.pattern
	}
	if len(k.mount) > maxMountLen {
		return "other"
	}
	t.cacheMu.RLock()
	r, ok := t.routes[k]
	t.cacheMu.RUnlock()
	if ok {
		return r
	}
	var chain [maxMuxes + 1]string
	pats := append(append(chain[:0], k.muxes[:]...), k.outer)
	// A mount with wildcards (one per tenant, say) is looked up by its
	// shape, which holds no wildcard value.
	sk := k
	sk.mount = mountShape(k.mount, pats)
	t.cacheMu.RLock()
	r, ok = t.shapes[sk]
	t.cacheMu.RUnlock()
	if ok {
		return r
	}
	m, described := describeMount(k.mount, pats)
	t.cacheMu.Lock()
	defer t.cacheMu.Unlock()
	if !described {
		m = receivedMount(k.mount)
		if !utf8.ValidString(m) { // a mount taken from the decoded path
			m = (&url.URL{Path: m}).EscapedPath()
		}
		if _, seen := t.pathMounts[m]; !seen {
			if len(t.pathMounts) >= maxPathMounts || len(m) > maxCachedMount {
				return "other"
			}
			t.pathMounts[m] = struct{}{}
		}
	}
	r = m + k.pattern
	switch {
	case described && strings.Contains(m, "{"):
		// Not by the mount: that key would hold the wildcards' values,
		// one entry per value.
		if len(t.shapes) < maxCached && len(sk.mount) <= maxCachedMount {
			t.shapes[sk] = r
		}
	case len(t.routes) < maxCached && len(k.mount) <= maxCachedMount:
		t.routes[k] = r
	}
	return r
}

// mountShape returns what describeMount's answer for mount depends on,
// and nothing else of it: its segments in order, each written as the
// literal of pats it equals (compared unescaped, as alignPattern compares
// them) or as "%" when it equals none (a wildcard's value, or text no
// pattern names). Two mounts of one shape are described alike; a shape
// holds no wildcard value. Literals are written with their length, so
// that one holding "/" (from "%2F") cannot pass for two segments.
func mountShape(mount string, pats []string) string {
	var b strings.Builder
	b.Grow(2 * len(mount))
	rest := strings.TrimPrefix(mount, "/")
	for {
		seg, more, found := strings.Cut(rest, "/")
		b.WriteByte('/')
		if lit, ok := patternLiteral(seg, pats); ok {
			b.WriteString(strconv.Itoa(len(lit)))
			b.WriteByte(':')
			b.WriteString(lit)
		} else {
			b.WriteByte('%')
		}
		if !found {
			return b.String()
		}
		rest = more
	}
}

// patternLiteral returns the unescaped value of seg, a segment of a
// mount, when it equals a literal segment of one of pats (compared
// unescaped); false when it equals none or is not validly escaped.
func patternLiteral(seg string, pats []string) (string, bool) {
	v := seg
	if strings.Contains(seg, "%") {
		u, err := url.PathUnescape(seg)
		if err != nil {
			return "", false
		}
		v = u
	}
	for _, p := range pats {
		pp := strings.Trim(strings.TrimSuffix(patternPath(p), "{$}"), "/")
		for pp != "" {
			var ps string
			ps, pp, _ = strings.Cut(pp, "/")
			if strings.HasPrefix(ps, "{") && strings.HasSuffix(ps, "}") {
				continue // a wildcard
			}
			lit := ps
			if strings.Contains(ps, "%") {
				u, err := url.PathUnescape(ps)
				if err != nil {
					continue
				}
				lit = u
			}
			if lit == v {
				return v, true
			}
		}
	}
	return "", false
}

// cached returns m[k] under mu, building it with mk (and keeping it while m
// holds fewer than maxCached entries) on a miss.
func cached[K comparable, V any](mu *sync.RWMutex, m map[K]V, k K, mk func(K) V) V {
	mu.RLock()
	v, ok := m[k]
	mu.RUnlock()
	if ok {
		return v
	}
	v = mk(k)
	mu.Lock()
	if len(m) < maxCached {
		m[k] = v
	}
	mu.Unlock()
	return v
}

// maxCached bounds each attribute cache: past it (an application that
// mints routes per request), attributes are built per request instead.
const maxCached = 4096

type resolutionKey struct{ kind, reason, source string }

// resolutionAttrs are the attributes of one resolution outcome: on the
// resolve span and on the resolutions counter, with its count.
type resolutionAttrs struct {
	span []attribute.KeyValue
	set  attribute.Set
	n    atomic.Int64 // resolutions with these attributes, reported at collection
}

type requestKey struct {
	method, route, op, table, kind, source, reason string
	status                                         int
}

// requestAttrs are the attributes of one kind of request: on the server
// span (all but the request id) and on the duration histogram.
type requestAttrs struct {
	name   string // the server span's name: method and route
	span   []attribute.KeyValue
	record []metric.RecordOption // passed as record... so that no call allocates
}

// otherValue replaces the attribute values of a resolution once
// maxCached distinct outcomes have been seen (only a custom resolver
// minting reasons gets there): the count still moves, under bounded
// attributes.
const otherValue = "_OTHER"

// resolutionAttrsFor returns the attributes and counter of a resolution,
// kept for the life of t (the counter reports them).
func (t *Telemetry) resolutionAttrsFor(k resolutionKey) *resolutionAttrs {
	t.cacheMu.RLock()
	a := t.resolutions[k]
	t.cacheMu.RUnlock()
	if a != nil {
		return a
	}
	t.cacheMu.Lock()
	defer t.cacheMu.Unlock()
	if a = t.resolutions[k]; a != nil {
		return a
	}
	if len(t.resolutions) >= maxCached {
		k = resolutionKey{otherValue, otherValue, otherValue}
		if a = t.resolutions[k]; a != nil {
			return a
		}
	}
	kv := []attribute.KeyValue{AttrCallerKind.String(k.kind), AttrCallerSource.String(k.source), AttrCallerReason.String(k.reason)}
	a = &resolutionAttrs{span: spanAttrs(kv), set: attribute.NewSet(kv...)}
	t.resolutions[k] = a
	return a
}

// spanAttrs returns kv without its empty-valued strings (a user's empty
// caller reason): on a span an absent attribute says the same, and every
// attribute costs the SDK time when the span starts and ends — past
// eight, a larger map to deduplicate them at End.
func spanAttrs(kv []attribute.KeyValue) []attribute.KeyValue {
	out := kv[:0:0]
	for _, a := range kv {
		if a.Value.Type() == attribute.STRING && a.Value.AsString() == "" {
			continue
		}
		out = append(out, a)
	}
	return out[:len(out):len(out)]
}

// requestAttrsFor returns the cached attributes of a request.
func (t *Telemetry) requestAttrsFor(k requestKey) *requestAttrs {
	return cached(&t.cacheMu, t.requests, k, newRequestAttrs)
}

func newRequestAttrs(k requestKey) *requestAttrs {
	kv := []attribute.KeyValue{attrRoute.String(k.route), attrStatus.Int(k.status)}
	if k.op != "" {
		kv = append(kv, AttrOperation.String(k.op), AttrTable.String(k.table))
	}
	if k.kind != "" {
		kv = append(kv, AttrCallerKind.String(k.kind), AttrCallerSource.String(k.source), AttrCallerReason.String(k.reason))
	}
	return &requestAttrs{
		name: k.method + " " + k.route,
		span: spanAttrs(kv),
		record: []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attrMethod.String(k.method), attrRoute.String(k.route),
			AttrOperation.String(k.op), attrStatus.Int(k.status), AttrCallerKind.String(k.kind)))},
	}
}

// New builds a Telemetry from cfg (nil: the default, which records
// nothing but still echoes X-Request-Id). It returns an error when an
// instrument cannot be created.
func New(cfg *Config) (*Telemetry, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Telemetry{tp: cfg.TracerProvider, mp: cfg.MeterProvider, prop: cfg.Propagator, log: cfg.AccessLog, subject: cfg.LogSubject,
		requests: map[requestKey]*requestAttrs{}, resolutions: map[resolutionKey]*resolutionAttrs{}, routes: map[routeKey]string{}, shapes: map[routeKey]string{}, pathMounts: map[string]struct{}{}}
	if t.prop == nil {
		t.prop = propagation.TraceContext{}
	}
	if t.tp != nil {
		t.tracer = t.tp.Tracer(ScopeName)
		t.tracing = true
		t.serverStart = map[string][]trace.SpanStartOption{}
		for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace, "_OTHER"} {
			t.serverStart[m] = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrMethod.String(m))}
		}
	}
	if t.mp != nil {
		if err := t.instruments(t.mp.Meter(ScopeName)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// instruments creates every instrument; see docs/observability.md for
// the list with units and attributes.
func (t *Telemetry) instruments(m metric.Meter) error {
	var errs []error
	add := func(err error) { errs = append(errs, err) }
	var err error
	t.duration, err = m.Float64Histogram("http.server.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of HTTP requests served by tablegate, by route, operation, status and caller kind."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	add(err)
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		add(err)
		return c
	}
	observed := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		add(err)
		return c
	}
	t.resolutionCount = observed("tablegate.auth.resolutions", "{resolution}", "Callers resolved, by caller kind, reason and credential source.")
	t.memoHits = observed("tablegate.auth.memo.hits", "{hit}", "Tokens answered from the verified-token memo.")
	t.memoMisses = observed("tablegate.auth.memo.misses", "{miss}", "Tokens verified because the memo did not hold them.")
	t.jwksFetches = counter("tablegate.auth.jwks.fetches", "{fetch}", "JWKS fetches, by outcome (ok or error).")
	t.refreshCalls = counter("tablegate.auth.refresh.calls", "{call}", "Session refresh calls sent to the auth server, by outcome (ok, rejected or error).")
	t.refreshShared = counter("tablegate.auth.refresh.shared_waits", "{wait}", "Refreshes answered by a call already in flight or a recent result for the same session.")
	t.refreshOutcomes = counter("tablegate.auth.refresh.outcomes", "{refresh}", "Session refresh outcomes seen by requests (success, rejected, failed).")
	t.approvalsReq = counter("tablegate.approvals.requested", "{approval}", "Approvals requested, by permission.")
	t.approvalsDec = counter("tablegate.approvals.decided", "{approval}", "Approvals decided, by decision.")
	t.eventsDelivered = counter("tablegate.events.delivered", "{event}", "Events delivered to subscribers.")
	t.memoSize, err = m.Int64ObservableGauge("tablegate.auth.memo.size", metric.WithUnit("{token}"),
		metric.WithDescription("Verified tokens held in the memo."))
	add(err)
	if err := errors.Join(errs...); err != nil {
		return errors.New("telemetry: instruments: " + err.Error())
	}
	if _, err := m.RegisterCallback(t.observe, t.memoSize, t.memoHits, t.memoMisses, t.resolutionCount); err != nil {
		return errors.New("telemetry: instruments: " + err.Error())
	}
	t.counting = true
	return nil
}

// observe reports the observable instruments: memo size, hits and misses,
// and the resolutions by outcome.
func (t *Telemetry) observe(_ context.Context, o metric.Observer) error {
	t.mu.Lock()
	fns := make([]func() int64, 0, len(t.memoFn))
	for _, fn := range t.memoFn {
		fns = append(fns, fn)
	}
	t.mu.Unlock()
	var n int64
	for _, fn := range fns {
		n += fn()
	}
	o.ObserveInt64(t.memoSize, n)
	o.ObserveInt64(t.memoHits, t.nMemoHit.Load())
	o.ObserveInt64(t.memoMisses, t.nMemoMiss.Load())
	t.cacheMu.RLock()
	defer t.cacheMu.RUnlock()
	for _, a := range t.resolutions {
		if c := a.n.Load(); c > 0 {
			o.ObserveInt64(t.resolutionCount, c, metric.WithAttributeSet(a.set))
		}
	}
	return nil
}

// TracerProvider returns the configured tracer provider, nil when tracing
// is off (for instrumentation libraries such as the pgx tracer).
func (t *Telemetry) TracerProvider() trace.TracerProvider {
	if t == nil {
		return nil
	}
	return t.tp
}

// MeterProvider returns the configured meter provider, nil when metrics
// are off.
func (t *Telemetry) MeterProvider() metric.MeterProvider {
	if t == nil {
		return nil
	}
	return t.mp
}

// Propagator returns the propagator (never nil for a non-nil Telemetry).
func (t *Telemetry) Propagator() propagation.TextMapPropagator {
	if t == nil {
		return nil
	}
	return t.prop
}

// Tracing reports whether spans are recorded.
func (t *Telemetry) Tracing() bool { return t != nil && t.tracing }

// Start starts a span named name as a child of ctx's span. With tracing
// off it returns ctx and a no-op span. End the span.
func (t *Telemetry) Start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if t == nil || !t.tracing {
		return ctx, trace.SpanFromContext(context.Background())
	}
	if len(attrs) == 0 {
		return t.tracer.Start(ctx, name)
	}
	return t.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// ObserveMemoSize adds fn to the memo size gauge: the gauge reports the
// sum over every registered memo. Call the returned stop when the memo is
// discarded (authctx.Resolver.Close does): the gauge stops counting it and
// t no longer holds it.
func (t *Telemetry) ObserveMemoSize(fn func() int64) (stop func()) {
	if t == nil || t.memoSize == nil {
		return func() {}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.memoFn == nil {
		t.memoFn = map[int]func() int64{}
	}
	id := t.memoNext
	t.memoNext++
	t.memoFn[id] = fn
	return func() {
		t.mu.Lock()
		delete(t.memoFn, id)
		t.mu.Unlock()
	}
}

// MemoHit counts a token answered from the verified-token memo.
func (t *Telemetry) MemoHit(context.Context) {
	if t != nil && t.counting {
		t.nMemoHit.Add(1)
	}
}

// MemoMiss counts a token that had to be verified.
func (t *Telemetry) MemoMiss(context.Context) {
	if t != nil && t.counting {
		t.nMemoMiss.Add(1)
	}
}

// RefreshShared counts a refresh answered by a call already in flight (or
// a recent result) for the same session.
func (t *Telemetry) RefreshShared(ctx context.Context) {
	if t != nil && t.refreshShared != nil {
		t.refreshShared.Add(ctx, 1)
	}
}

// RefreshOutcome counts the outcome of a refresh seen by a request
// (success, rejected or failed) and notes it on ctx's span.
func (t *Telemetry) RefreshOutcome(ctx context.Context, outcome string) {
	if t == nil {
		return
	}
	if t.refreshOutcomes != nil {
		t.refreshOutcomes.Add(ctx, 1, metric.WithAttributes(AttrOutcome.String(outcome)))
	}
	if t.tracing {
		trace.SpanFromContext(ctx).SetAttributes(attribute.String("tablegate.refresh.outcome", outcome))
	}
}

// Resolved counts one caller resolution by kind, reason and source, sets
// them on ctx's span (the resolution span: call it before ending that
// span), and records them (and, for the access log only, subject) on the
// request being served by [Telemetry.Handler].
func (t *Telemetry) Resolved(ctx context.Context, kind, reason, source, subject string) {
	if t == nil {
		return
	}
	if t.counting || t.tracing {
		a := t.resolutionAttrsFor(resolutionKey{kind, reason, source})
		if t.counting {
			a.n.Add(1)
		}
		if t.tracing {
			if sp := trace.SpanFromContext(ctx); sp.IsRecording() {
				sp.SetAttributes(a.span...)
			}
		}
	}
	if rec := recordFrom(ctx); rec != nil {
		rec.mu.Lock()
		rec.kind, rec.reason, rec.source = kind, reason, source
		if t.subject {
			rec.subject = subject
		}
		rec.mu.Unlock()
	}
}

// SetCallerCause records, for the access log of the request being served
// by [Telemetry.Handler], the stable code of the cause for which its
// credential was refused (TOKEN_EXPIRED, TOKEN_ISSUER_MISMATCH, …),
// written as caller_cause beside caller_reason. cause must be a code,
// never a value taken from the credential. Call it after
// [Telemetry.Resolved] reported the caller as "invalid"; for any other
// caller, and outside such a request, it does nothing.
func SetCallerCause(ctx context.Context, cause string) {
	if rec := recordFrom(ctx); rec != nil {
		rec.mu.Lock()
		if rec.kind == "invalid" {
			rec.subject = cause // an invalid caller has no subject
		}
		rec.mu.Unlock()
	}
}

// Transport wraps base (nil: http.DefaultTransport) so that every request
// it sends gets a client span (named "tablegate <call>"), carries the
// trace context of its request context (traceparent), and is counted:
// call "jwks" counts JWKS fetches, "refresh" counts refresh calls, by
// outcome. The span names the method, host and status only — never the
// URL's query, the body or a header value.
func (t *Telemetry) Transport(call string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	if t == nil {
		return base
	}
	return &transport{t: t, call: call, base: base}
}

// ApprovalRequested counts an approval request for permission.
func ApprovalRequested(ctx context.Context, permission string) {
	if t := fromContext(ctx); t != nil && t.approvalsReq != nil {
		t.approvalsReq.Add(ctx, 1, metric.WithAttributes(AttrPermission.String(permission)))
	}
}

// ApprovalDecided counts an approval decision ("approved", "rejected",
// ...).
func ApprovalDecided(ctx context.Context, decision string) {
	if t := fromContext(ctx); t != nil && t.approvalsDec != nil {
		t.approvalsDec.Add(ctx, 1, metric.WithAttributes(AttrDecision.String(decision)))
	}
}

// EventsDelivered counts n events delivered to a subscriber. It is the
// hook the events package calls; it records nothing outside a request
// served by [Telemetry.Handler] unless t is given.
func (t *Telemetry) EventsDelivered(ctx context.Context, n int) {
	if t == nil {
		t = fromContext(ctx)
	}
	if t != nil && t.eventsDelivered != nil {
		t.eventsDelivered.Add(ctx, int64(n))
	}
}
