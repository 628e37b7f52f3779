package telemetry

import (
	"log/slog"
	"time"
)

// AccessLine is one line of the access log written by
// [Telemetry.Handler]: the record "request" at level Info, with the
// attributes [AccessLine.AppendAttrs] lists.
type AccessLine struct {
	Time       time.Time
	Method     string
	Route      string
	Status     int
	DurationMS float64
	RequestID  string
	CallerKind string
	// CallerReason and CallerCause are set together, for an invalid
	// caller whose cause is known.
	CallerReason, CallerCause string
	// Operation and Table are set together, by the resource that served
	// the request.
	Operation, Table string
	TraceID          string // the trace the request belongs to, if any
	Subject          string // with Config.LogSubject, a user's id
}

// AppendAttrs appends the line's attributes to dst in the order they are
// written: method, route, status, duration_ms, request_id, caller_kind,
// then caller_reason and caller_cause, operation and table, trace_id and
// subject when set. At most ten.
func (l *AccessLine) AppendAttrs(dst []slog.Attr) []slog.Attr {
	dst = append(dst, slog.String("method", l.Method), slog.String("route", l.Route), slog.Int("status", l.Status),
		slog.Float64("duration_ms", l.DurationMS), slog.String("request_id", l.RequestID),
		slog.String("caller_kind", l.CallerKind))
	if l.CallerCause != "" {
		dst = append(dst, slog.String("caller_reason", l.CallerReason), slog.String("caller_cause", l.CallerCause))
	}
	if l.Operation != "" {
		dst = append(dst, slog.String("operation", l.Operation), slog.String("table", l.Table))
	}
	if l.TraceID != "" {
		dst = append(dst, slog.String("trace_id", l.TraceID))
	}
	if l.Subject != "" {
		dst = append(dst, slog.String("subject", l.Subject))
	}
	return dst
}

// AccessLineHandler is a [slog.Handler] that writes an access log line
// itself: when the handler of Config.AccessLog is one, [Telemetry.Handler]
// passes it each line, instead of a [slog.Record] built from the line
// (message "request", level Info, time l.Time, the attributes of
// l.AppendAttrs), without asking Enabled. HandleAccessLine must write
// what Handle writes for that record, when the handler is enabled at
// level Info.
type AccessLineHandler interface {
	slog.Handler
	HandleAccessLine(l AccessLine) error
}
