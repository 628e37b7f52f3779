// Package telemetry is tablegate's OpenTelemetry instrumentation: a server
// span per request with child spans for caller resolution, JWKS fetches,
// session refresh calls, hooks, the authorizer and (through the pgx tracer
// that [db.Instrument] installs) every Postgres round trip; request,
// resolution, memo, JWKS, refresh and approval metrics; W3C trace context
// in and out; an access log line per request; and X-Request-Id.
//
// It depends only on the OpenTelemetry API. Build a [Telemetry] with the
// tracer and meter providers of your SDK (nil providers record nothing; a
// nil *Telemetry costs nothing), pass it to authctx.Config.Telemetry and
// db.Instrument, and wrap the whole handler with [Telemetry.Handler]:
//
//	tel, _ := telemetry.New(&telemetry.Config{TracerProvider: tp, MeterProvider: mp})
//	callers, _ := authctx.New(ctx, &authctx.Config{..., Telemetry: tel})
//	http.ListenAndServe(addr, tel.Handler(callers.Middleware(mux)))
//
// The SDK, exporters and the Prometheus endpoint are the application's
// choice; the tablegate command wires them from the standard OTEL_*
// environment variables (see docs/observability.md).
//
// No span, metric attribute or log line holds a token, a cookie, a claim
// value, a row value, a path key or a query value: routes are reported as
// patterns ("/api/todos/{id}").
//
// [db.Instrument]: https://pkg.go.dev/github.com/tablegate/tablegate/db#Instrument
package telemetry
