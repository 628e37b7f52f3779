package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tablegate/tablegate/server"
)

// observability is the OpenTelemetry SDK wiring of serve and demo: the
// providers configured from the standard OTEL_* variables and the
// Prometheus registry behind the admin listener's /metrics, which the
// server records to.
type observability struct {
	tracerProvider trace.TracerProvider // nil: no spans
	meterProvider  metric.MeterProvider // nil: no metrics
	metrics        http.Handler         // nil: /metrics answers 404
	shutdown       []func(context.Context) error
	summary        []string
}

// exportersOf reads an OTEL_*_EXPORTER list ("otlp,prometheus"); empty
// gives def.
func exportersOf(getenv func(string) string, key string, def []string) []string {
	v := strings.TrimSpace(getenv(key))
	if v == "" {
		return def
	}
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(strings.ToLower(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// otlpProtocol checks that the OTLP protocol for signal is http/protobuf,
// the only one this build ships.
func otlpProtocol(getenv func(string) string, signal string) error {
	p := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"))
	if p == "" {
		p = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	if p != "" && p != "http/protobuf" {
		return usagef("OTEL_EXPORTER_OTLP_PROTOCOL=%s is not supported: tablegate exports OTLP over http/protobuf", p)
	}
	return nil
}

// otlpHeaders checks OTEL_EXPORTER_OTLP_HEADERS and its per-signal
// variable as the OTLP exporter parses them (key=value pairs separated by
// commas, the value URL-encoded), so that a malformed one is refused
// here, naming the variable and the entry but not its value: the
// exporter would log the entry, credential included, and drop it.
func otlpHeaders(getenv func(string) string, signal string) error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_" + signal + "_HEADERS"} {
		v := getenv(name)
		if strings.TrimSpace(v) == "" {
			continue
		}
		for i, pair := range strings.Split(v, ",") {
			if strings.TrimSpace(pair) == "" {
				continue
			}
			k, val, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			_, err := url.PathUnescape(val)
			if !ok || !validHeaderKey(k) || err != nil {
				return usagef("%s: entry %d is not key=value with a URL-encoded value (the value is not shown)", name, i+1)
			}
		}
	}
	return nil
}

// validHeaderKey reports an HTTP header name (an RFC 9110 token).
func validHeaderKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// setupObservability builds the SDK from the environment:
//
//   - OTEL_SDK_DISABLED=true: no spans, no metrics (the access log and
//     X-Request-Id stay).
//   - Traces: OTEL_TRACES_EXPORTER otlp or none; the default is otlp when
//     OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is
//     set, else none. OTLP goes over HTTP (http/protobuf); endpoint,
//     headers, timeout and compression come from the standard variables,
//     the sampler from OTEL_TRACES_SAMPLER (default parent-based always-on).
//   - Metrics: always kept for /metrics (Prometheus text format on the
//     admin listener); OTEL_METRICS_EXPORTER otlp (the default when an OTLP
//     endpoint is set) also pushes them over OTLP/HTTP.
//   - Resource: service.name tablegate unless OTEL_SERVICE_NAME or
//     OTEL_RESOURCE_ATTRIBUTES say otherwise.
func setupObservability(ctx context.Context, getenv func(string) string) (_ *observability, err error) {
	obs := &observability{}
	defer func() {
		if err != nil {
			obs.close() // what was started before the error
		}
	}()
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		obs.summary = append(obs.summary, "OpenTelemetry off (OTEL_SDK_DISABLED)")
		return obs, nil
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "tablegate")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	endpointSet := func(signal string) bool {
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+signal+"_ENDPOINT") != ""
	}
	defTraces, defMetrics := []string{"none"}, []string{"prometheus"}
	if endpointSet("TRACES") {
		defTraces = []string{"otlp"}
	}
	if endpointSet("METRICS") {
		defMetrics = []string{"otlp"}
	}
	ok := func(list []string, allowed ...string) error {
		for _, s := range list {
			if !slices.Contains(allowed, s) {
				return usagef("exporter %q is not supported (want one of %s)", s, strings.Join(allowed, ", "))
			}
		}
		return nil
	}

	traces := exportersOf(getenv, "OTEL_TRACES_EXPORTER", defTraces)
	if err := ok(traces, "otlp", "none"); err != nil {
		return nil, err
	}
	if slices.Contains(traces, "otlp") {
		if err := otlpProtocol(getenv, "TRACES"); err != nil {
			return nil, err
		}
		if err := otlpHeaders(getenv, "TRACES"); err != nil {
			return nil, err
		}
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		obs.tracerProvider = tp
		obs.shutdown = append(obs.shutdown, tp.Shutdown)
		obs.summary = append(obs.summary, "traces → OTLP/HTTP")
	}

	metrics := exportersOf(getenv, "OTEL_METRICS_EXPORTER", defMetrics)
	if err := ok(metrics, "otlp", "prometheus", "none"); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	pexp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("prometheus exporter: %w", err)
	}
	mopts := []sdkmetric.Option{sdkmetric.WithResource(res), sdkmetric.WithReader(pexp)}
	if slices.Contains(metrics, "otlp") {
		if err := otlpProtocol(getenv, "METRICS"); err != nil {
			return nil, err
		}
		if err := otlpHeaders(getenv, "METRICS"); err != nil {
			return nil, err
		}
		mexp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, fmt.Errorf("OTLP metric exporter: %w", err)
		}
		mopts = append(mopts, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp)))
		obs.summary = append(obs.summary, "metrics → OTLP/HTTP")
	}
	mp := sdkmetric.NewMeterProvider(mopts...)
	obs.shutdown = append(obs.shutdown, mp.Shutdown)
	obs.meterProvider = mp
	obs.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return obs, nil
}

// telemetryFlushTimeout bounds flushing and stopping the exporters at
// exit: a collector that hangs must not hold the process past its
// shutdown limit for the exporters' own timeouts and retries (a minute
// or more per signal).
const telemetryFlushTimeout = 5 * time.Second

// close flushes and stops the exporters, together within
// telemetryFlushTimeout; what is not exported by then is dropped.
func (o *observability) close() {
	ctx, cancel := context.WithTimeout(context.Background(), telemetryFlushTimeout)
	defer cancel()
	for _, fn := range o.shutdown {
		_ = fn(ctx)
	}
}

// apply hands the providers and the /metrics handler to the server.
func (o *observability) apply(cfg *server.Config) {
	cfg.TracerProvider, cfg.MeterProvider, cfg.Metrics = o.tracerProvider, o.meterProvider, o.metrics
}
