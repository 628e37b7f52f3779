package authctx

import (
	"net/http"
	"time"

	"github.com/tablegate/tablegate/telemetry"
)

// This file reports caller resolution to Config.Telemetry: a span per
// resolution (kind, source, reason — never a token, cookie or claim
// value), resolution counts, memo hits, misses and size, and a client span
// with trace context for each JWKS fetch and refresh call (through the
// HTTP client's transport).

// observedClient returns c (or, for nil, a client with timeout) whose
// transport reports each call to t as call ("jwks" or "refresh"). With a
// nil t it returns c unchanged.
func observedClient(t *telemetry.Telemetry, c *http.Client, call string, timeout time.Duration) *http.Client {
	if t == nil {
		return c
	}
	var cp http.Client
	if c != nil {
		cp = *c
	} else {
		cp.Timeout = timeout
	}
	cp.Transport = t.Transport(call, cp.Transport)
	return &cp
}

// resolveObserved is Resolve inside a "tablegate.resolve" span, counted
// by kind, reason and source.
func (rv *Resolver) resolveObserved(r *http.Request) Result {
	ctx, span := rv.tel.Start(r.Context(), "tablegate.resolve")
	res := rv.resolve(ctx, r)
	subject := ""
	if res.Auth.User != nil {
		subject = res.Auth.User.ID
	}
	// Resolved also sets kind, source and reason on the resolve span
	// (attributes built once per combination).
	rv.tel.Resolved(ctx, string(res.Auth.Kind), string(res.Auth.Reason), string(res.Source), subject)
	if res.Auth.Kind == KindInvalid {
		// Only a refusal pays for its cause (a code, never a value).
		telemetry.SetCallerCause(ctx, string(res.Auth.Cause()))
	}
	span.End()
	return res
}
