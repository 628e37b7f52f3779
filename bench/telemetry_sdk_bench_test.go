package bench

import (
	"context"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// BenchmarkSDKSpan measures what the OpenTelemetry SDK alone costs on this
// machine, with nothing of tablegate around it: the tracer provider of
// BenchmarkTelemetryOverhead (always-on sampler, batch span processor,
// discarding exporter), and the same with a synchronous processor.
// "span" is one span started and ended with no attribute; "request" is
// the three spans a GET /{id} records (server, caller resolution, the
// Postgres batch) with the attributes tablegate and otelpgx give them, so
// that it can be set beside BenchmarkTelemetryLayers' on - off. The
// metric/ sub-benchmarks are one measurement each, in the context of a
// sampled span (a trace-based exemplar is offered) unless "bg".
func BenchmarkSDKSpan(b *testing.B) {
	// What a user's GET /items/{id} records (see telemetry.newRequestAttrs).
	server := []attribute.KeyValue{attrKV("http.route", "/items/{id}"), attribute.Int("http.response.status_code", 200),
		attrKV("tablegate.operation", "get"), attrKV("tablegate.table", "items"), attrKV("tablegate.caller.kind", "user"),
		attrKV("tablegate.caller.source", "bearer"), attrKV("tablegate.request_id", "0123456789abcdef01234567")}
	resolve := server[4:6]
	serverStart := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrKV("http.request.method", "GET"))}
	batchStart := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrKV("db.system.name", "postgresql"), attribute.Int("db.operation.batch.size", 2))}
	for _, p := range []struct {
		name string
		opt  sdktrace.TracerProviderOption
	}{{"batcher", sdktrace.WithBatcher(discardSpans{})}, {"syncer", sdktrace.WithSyncer(discardSpans{})}} {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), p.opt)
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tr := tp.Tracer("bench")
		run := func(name string, fn func(ctx context.Context)) { runCPU(b, p.name+"/"+name, fn) }
		run("span", func(ctx context.Context) {
			_, sp := tr.Start(ctx, "span")
			sp.End()
		})
		run("request", func(ctx context.Context) {
			ctx, srv := tr.Start(ctx, "GET", serverStart...)
			rctx, res := tr.Start(ctx, "tablegate.resolve")
			res.SetAttributes(resolve...)
			res.End()
			_, bt := tr.Start(rctx, "batch start", batchStart...)
			bt.End()
			srv.SetName("GET /items/{id}")
			srv.SetAttributes(server...)
			srv.End()
		})
	}

	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(discardSpans{}))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
	m := mp.Meter("bench")
	h, _ := m.Float64Histogram("h", metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10))
	c, _ := m.Int64Counter("c")
	set := attribute.NewSet(attrKV("http.request.method", "GET"), attrKV("http.route", "/items/{id}"), attrKV("tablegate.operation", "get"),
		attribute.Int("http.response.status_code", 200), attrKV("tablegate.caller.kind", "user"))
	rec, add := []metric.RecordOption{metric.WithAttributeSet(set)}, []metric.AddOption{metric.WithAttributeSet(set)}
	sampled, root := tp.Tracer("bench").Start(context.Background(), "root")
	defer root.End()
	var n atomic.Int64
	runCPU(b, "metric/histogram", func(context.Context) { h.Record(sampled, 0.001, rec...) })
	runCPU(b, "metric/histogram-bg", func(ctx context.Context) { h.Record(ctx, 0.001, rec...) })
	runCPU(b, "metric/counter", func(context.Context) { c.Add(sampled, 1, add...) })
	runCPU(b, "metric/counter-no-attrs", func(context.Context) { c.Add(sampled, 1) })
	runCPU(b, "metric/atomic", func(context.Context) { n.Add(1) })
}

// runCPU runs fn in parallel as sub-benchmark name, reporting allocations
// and this process's CPU per call.
func runCPU(b *testing.B, name string, fn func(ctx context.Context)) {
	b.Run(name, func(b *testing.B) {
		b.ReportAllocs()
		before := processCPU()
		defer func() {
			b.ReportMetric(float64((processCPU()-before).Nanoseconds())/1e3/float64(b.N), "cpu-µs/op")
		}()
		b.RunParallel(func(pb *testing.PB) {
			ctx := context.Background()
			for pb.Next() {
				fn(ctx)
			}
		})
	})
}

func attrKV(k, v string) attribute.KeyValue { return attribute.String(k, v) }
