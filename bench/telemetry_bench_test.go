package bench

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
)

// discardSpans is a span exporter that drops what it is given: spans are
// still sampled (always-on), recorded, batched and handed over.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkTelemetryGet measures GET /items/{id} (RLS, memo hit) with
// tracing and metrics on against the same stack with them off, in one
// run, driven by wrk from its own process. "on" has the OpenTelemetry SDK
// with the always-on sampler and a batch span processor feeding a
// discarding exporter, a meter provider with a reader (every instrument
// aggregates), the pgx tracer and pool metrics, X-Request-Id, and no access
// log; "off" is the stack as a user without telemetry builds it. Two
// references run beside them: "otelhttp" is the off stack wrapped in
// OpenTelemetry's own net/http instrumentation (otelhttp.NewHandler) with
// on's providers — one server span and its metrics, no child span, what a
// Go service commonly adds for tracing —, and "sampled" is on with the
// production sampler (parent-based, 10 % of new traces). Rounds alternate
// floor, off, on, otelhttp, sampled (the order rotates). Metrics: req/s of
// each; <name>/off, the ratio of the mean throughputs (on/off: target
// ≥ 0.90), and <name>/off-median, the median of the rounds' ratios (less
// moved by one disturbed round); each server's CPU per request; off/floor
// (compare with BenchmarkHTTP's GET ratio in BENCHMARKS.md).
func BenchmarkTelemetryGet(b *testing.B) {
	st := newTelemetryStacks(b)
	fx := st.fx
	servers := []namedHandler{{"floor", fx.floor}, {"off", fx.tablegate}, {"on", st.on}, {"otelhttp", st.otelhttp}, {"sampled", st.sampled}}
	for b.Loop() {
		rps, cpu := wrkRounds(b, servers, "/items/42", fx.token)
		b.ReportMetric(cpu["off"]/cpu["on"], "cpu-off/on")
		b.ReportMetric(rps["off"]/rps["floor"], "off/floor")
		b.ReportMetric(loadavg(), "load-1m")
	}
}

// BenchmarkTelemetryGetProcessors is BenchmarkTelemetryGet's on/off with
// each way the SDK can hand spans over: "batcher" (on: the batch span
// processor and a discarding exporter), "syncer" (the simple span
// processor and the same exporter) and "memory" (the simple span processor
// and tracetest's in-memory exporter, emptied every 16 384 spans), all
// with the always-on sampler and the same meter provider.
func BenchmarkTelemetryGetProcessors(b *testing.B) {
	st := newTelemetryStacks(b)
	fx := st.fx
	provider := func(opt sdktrace.TracerProviderOption) *sdktrace.TracerProvider {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), opt)
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		return tp
	}
	servers := []namedHandler{{"off", fx.tablegate}, {"batcher", st.on},
		{"syncer", st.build(&telemetry.Config{TracerProvider: provider(sdktrace.WithSyncer(discardSpans{})), MeterProvider: st.mp})},
		{"memory", st.build(&telemetry.Config{TracerProvider: provider(sdktrace.WithSyncer(&boundedMemory{mem: tracetest.NewInMemoryExporter()})), MeterProvider: st.mp})}}
	for b.Loop() {
		wrkRounds(b, servers, "/items/42", fx.token)
		b.ReportMetric(loadavg(), "load-1m")
	}
}

// boundedMemory is tracetest's in-memory exporter, emptied every 16 384
// spans so that a benchmark's memory stays bounded.
type boundedMemory struct {
	mem *tracetest.InMemoryExporter
	n   atomic.Int64
}

func (m *boundedMemory) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := m.mem.ExportSpans(ctx, spans)
	if m.n.Add(int64(len(spans))) >= 1<<14 {
		m.n.Store(0)
		m.mem.Reset()
	}
	return err
}

func (m *boundedMemory) Shutdown(ctx context.Context) error { return m.mem.Shutdown(ctx) }

// namedHandler is one server of a wrk comparison.
type namedHandler struct {
	name string
	h    http.Handler
}

// wrkRounds serves each handler and drives GET path with token at them
// with wrk from its own process: a 1 s warm-up round, then six rounds of
// 2 s, the servers' order rotating from round to round. For each server it
// reports <name>-req/s (the mean of the rounds) and <name>-cpu-µs/req
// (this process's CPU per request: the servers, not wrk or Postgres), and
// for each server but "floor" and "off", <name>/off (the ratio of the
// mean throughputs) and <name>/off-median (the median of the rounds'
// ratios, less moved by one disturbed round). It returns the req/s and
// CPU seconds per request of each.
func wrkRounds(b *testing.B, servers []namedHandler, path, token string) (rps, cpu map[string]float64) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Fatal("this benchmark needs wrk on PATH: apt-get install wrk")
	}
	urls := map[string]string{}
	for _, s := range servers {
		srv := httptest.NewServer(s.h)
		defer srv.Close()
		urls[s.name] = srv.URL
	}
	rps, cpu = map[string]float64{}, map[string]float64{}
	const rounds = 6
	ratios := map[string][]float64{}
	for round := range rounds + 1 {
		got := map[string]float64{}
		for i := range servers {
			s := servers[(i+round)%len(servers)]
			d := 2 * time.Second
			if round == 0 {
				d = time.Second // warm-up, not counted
			}
			before := processCPU()
			v := runWrk(b, wrk, urls[s.name]+path, token, d)
			got[s.name] = v
			if round > 0 {
				rps[s.name] += v / rounds
				cpu[s.name] += (processCPU() - before).Seconds() / (v * d.Seconds()) / rounds
			}
		}
		if round > 0 {
			for _, s := range servers {
				if s.name != "floor" && s.name != "off" {
					ratios[s.name] = append(ratios[s.name], got[s.name]/got["off"])
				}
			}
		}
	}
	for name, r := range ratios {
		b.ReportMetric(median(r), name+"/off-median")
		b.ReportMetric(rps[name]/rps["off"], name+"/off")
	}
	for _, s := range servers {
		b.ReportMetric(rps[s.name], s.name+"-req/s")
		b.ReportMetric(cpu[s.name]*1e6, s.name+"-cpu-µs/req")
	}
	return rps, cpu
}

// BenchmarkTelemetryOverhead serves GET /items/{id} in-process (no
// sockets) with telemetry off, on (tracing and metrics), on with the
// access log (slog JSON to io.Discard), on with the 10 % sampler, and off
// inside otelhttp's handler (the stacks of BenchmarkTelemetryGet), to show
// the CPU and allocations each adds per request (the database round trip
// is in all). Run it with -count to interleave them.
func BenchmarkTelemetryOverhead(b *testing.B) {
	st := newTelemetryStacks(b)
	fx := st.fx
	for _, s := range []struct {
		name string
		h    http.Handler
	}{{"off", fx.tablegate}, {"on", st.on}, {"on+log", st.onLog}, {"sampled", st.sampled}, {"otelhttp", st.otelhttp}} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(8)
			before := processCPU()
			defer func() {
				// CPU of this process per request (the handler and the
				// SDK's background work, not Postgres): steadier than
				// ns/op on a loaded machine.
				b.ReportMetric(float64((processCPU()-before).Microseconds())/float64(b.N), "cpu-µs/op")
			}()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest("GET", "/items/42", nil)
					req.Header.Set("Authorization", "Bearer "+fx.token)
					rec := httptest.NewRecorder()
					s.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Errorf("status %d: %s", rec.Code, rec.Body)
						return
					}
				}
			})
		})
	}
}

// BenchmarkTelemetryLayers isolates what telemetry itself costs a GET
// /{id}: the stack of BenchmarkTelemetryOverhead (telemetry.Handler →
// authctx → resource) with the resource replaced by what a GET asks of
// telemetry below authctx — the route report (telemetry.SetRoute, as
// rest does) and the span of one Postgres round trip from the pgx tracer
// db.Instrument installs, called as pgx calls it, without a connection —
// and a fixed JSON body. No database and no socket, so on - off is
// telemetry's CPU per request with little of the machine's noise; set it
// beside BenchmarkSDKSpan/batcher/request (the SDK's share) and
// BenchmarkTelemetryOverhead's off (the request it is added to).
// Beside the layers: "sampled" is on with the parent-based 10 % sampler
// (what a request pays when most are not sampled), and "otelhttp" the
// off stack inside OpenTelemetry's net/http handler with on's providers
// (one server span and its metrics, the usual tracing of a Go service).
func BenchmarkTelemetryLayers(b *testing.B) {
	pool := setupItems(b)
	fx := newHTTPFixture(b, pool)
	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	tel, err := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	pgxTracer := func(tel *telemetry.Telemetry) pgx.BatchTracer {
		cfg := pool.Config()
		db.Instrument(cfg, tel)
		tr, _ := cfg.ConnConfig.Tracer.(pgx.BatchTracer)
		return tr
	}
	traces, err := telemetry.New(&telemetry.Config{TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	tp10 := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))),
		sdktrace.WithBatcher(discardSpans{}))
	b.Cleanup(func() { _ = tp10.Shutdown(ctx) })
	sampled, err := telemetry.New(&telemetry.Config{TracerProvider: tp10, MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	metrics, err := telemetry.New(&telemetry.Config{MeterProvider: mp})
	if err != nil {
		b.Fatal(err)
	}
	bare, err := telemetry.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"id":42,"owner_id":"00000000-0000-0000-0000-000000000001","title":"item 42","done":false}`)
	batch := &pgx.Batch{}
	batch.Queue("select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)")
	batch.Queue("select * from items where id = $1")
	stack := func(tel *telemetry.Telemetry, tr pgx.BatchTracer) http.Handler {
		rv, err := authctx.New(ctx, &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: fx.jwks}, Telemetry: tel})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rv.Close)
		item := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := r.Context()
			if telemetry.FromContext(ctx) != nil {
				telemetry.SetRoute(ctx, r.URL.EscapedPath(), "/{id}", "get", benchTable)
			}
			if tr != nil {
				bctx := tr.TraceBatchStart(ctx, nil, pgx.TraceBatchStartData{Batch: batch})
				tr.TraceBatchEnd(bctx, nil, pgx.TraceBatchEndData{})
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
		})
		return tel.Handler(rv.Middleware(http.StripPrefix("/"+benchTable, item)))
	}
	for _, s := range []struct {
		name string
		h    http.Handler
	}{{"off", stack(nil, nil)}, {"on", stack(tel, pgxTracer(tel))},
		{"traces", stack(traces, pgxTracer(traces))}, {"metrics", stack(metrics, nil)}, {"handler", stack(bare, nil)},
		{"sampled", stack(sampled, pgxTracer(sampled))},
		{"otelhttp", otelhttp.NewHandler(stack(nil, nil), "GET /items/{id}", otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp))}} {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			before := processCPU()
			defer func() {
				b.ReportMetric(float64((processCPU()-before).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
			}()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := httptest.NewRequest("GET", "/items/42", nil)
					req.Header.Set("Authorization", "Bearer "+fx.token)
					rec := httptest.NewRecorder()
					s.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						b.Errorf("status %d: %s", rec.Code, rec.Body)
						return
					}
				}
			})
		})
	}
}

// telemetryStacks is the HTTP fixture (its tablegate handler is the
// stack with telemetry off) and the same stack with telemetry.
type telemetryStacks struct {
	fx *httpFixture
	// on has tracing (always-on sampler, batch processor, discarding
	// exporter) and metrics (a manual reader: every instrument aggregates).
	on http.Handler
	// onLog is on with the access log (slog JSON to io.Discard).
	onLog http.Handler
	// sampled is on with the production sampler docs/observability.md
	// suggests: parent-based, 10 % of the traces the caller did not start.
	sampled http.Handler
	// otelhttp is the off stack inside otelhttp.NewHandler with on's
	// tracer and meter providers.
	otelhttp http.Handler
	// build returns the fixture's stack with the telemetry of cfg (the
	// handler, the resolver, and a pool of its own with the pgx tracer and
	// pool metrics).
	build func(cfg *telemetry.Config) http.Handler
	// mp is the meter provider of on (a manual reader).
	mp *sdkmetric.MeterProvider
}

func newTelemetryStacks(b *testing.B) *telemetryStacks {
	pool := setupItems(b)
	fx := newHTTPFixture(b, pool)

	ctx := context.Background()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
	tp10 := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1))),
		sdktrace.WithBatcher(discardSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(ctx); _ = tp10.Shutdown(ctx); _ = mp.Shutdown(ctx) })
	// stack is the fixture's stack with cfg's telemetry: the handler, the
	// resolver and the pool (the pgx tracer, pool metrics).
	stack := func(cfg *telemetry.Config) http.Handler {
		tel, err := telemetry.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		pcfg := pool.Config()
		db.Instrument(pcfg, tel)
		tpool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(tpool.Close)
		if err := db.RecordPoolStats(tpool, tel); err != nil {
			b.Fatal(err)
		}
		res, err := rest.NewResource(ctx, db.New(tpool, nil), benchTable, &rest.Config{CursorKey: []byte("bench cursor key, 32 bytes long!")})
		if err != nil {
			b.Fatal(err)
		}
		rv, err := authctx.New(ctx, &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: fx.jwks}, Telemetry: tel})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(rv.Close)
		return tel.Handler(rv.Middleware(http.StripPrefix("/"+benchTable, res)))
	}
	return &telemetryStacks{
		fx:      fx,
		build:   stack,
		mp:      mp,
		on:      stack(&telemetry.Config{TracerProvider: tp, MeterProvider: mp}),
		onLog:   stack(&telemetry.Config{TracerProvider: tp, MeterProvider: mp, AccessLog: slog.New(slog.NewJSONHandler(io.Discard, nil))}),
		sampled: stack(&telemetry.Config{TracerProvider: tp10, MeterProvider: mp}),
		otelhttp: otelhttp.NewHandler(fx.tablegate, "GET /items/{id}",
			otelhttp.WithTracerProvider(tp), otelhttp.WithMeterProvider(mp)),
	}
}
