package telemetry

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// transport is [Telemetry.Transport]'s round tripper.
type transport struct {
	t    *Telemetry
	call string
	base http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t := tr.t
	ctx := req.Context()
	var span trace.Span
	if t.tracing {
		ctx, span = t.tracer.Start(ctx, "tablegate "+tr.call, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(AttrCall.String(tr.call), attrMethod.String(req.Method),
				attribute.String("server.address", req.URL.Hostname())))
	}
	// RoundTrippers must not modify the request: clone before injecting.
	req = req.Clone(ctx)
	t.prop.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := tr.base.RoundTrip(req)
	outcome := "ok"
	switch {
	case err != nil:
		outcome = "error"
	case tr.call == "refresh" && resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests:
		outcome = "rejected"
	case resp.StatusCode >= 300:
		outcome = "error"
	}
	if span != nil {
		if resp != nil {
			span.SetAttributes(attrStatus.Int(resp.StatusCode))
		}
		span.SetAttributes(AttrOutcome.String(outcome))
		if outcome == "error" {
			span.SetStatus(codes.Error, "")
		}
		span.End()
	}
	var c metric.Int64Counter
	switch tr.call {
	case "jwks":
		c = t.jwksFetches
	case "refresh":
		c = t.refreshCalls
	}
	if c != nil {
		c.Add(ctx, 1, metric.WithAttributes(AttrOutcome.String(outcome)))
	}
	return resp, err
}
