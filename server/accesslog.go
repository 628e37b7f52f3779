package server

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tablegate/tablegate/telemetry"
)

// jsonLineHandler writes records as slog.NewJSONHandler(w, nil) does, byte
// for byte, formatting the access log's records (string, integer, float
// and bool attributes at the top level) itself: without the JSON
// handler's per-record state and lock, and without encoding/json for the
// float (duration_ms) — about half of what a log line cost. Records it
// does not format itself (other kinds, groups, values that resolve
// lazily, a handler derived with WithAttrs or WithGroup) go to the JSON
// handler. w must take each Write as one whole line from any goroutine
// (lineWriter does).
type jsonLineHandler struct {
	w    io.Writer
	json slog.Handler
}

func newJSONLineHandler(w io.Writer) *jsonLineHandler {
	return &jsonLineHandler{w: w, json: slog.NewJSONHandler(w, nil)}
}

// Enabled reports Info and above, as the JSON handler without options.
func (h *jsonLineHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.json.Enabled(ctx, l)
}

// WithAttrs returns the JSON handler's.
func (h *jsonLineHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.json.WithAttrs(as) }

// WithGroup returns the JSON handler's.
func (h *jsonLineHandler) WithGroup(name string) slog.Handler { return h.json.WithGroup(name) }

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// Handle writes r as one line.
func (h *jsonLineHandler) Handle(ctx context.Context, r slog.Record) error {
	simple := true
	r.Attrs(func(a slog.Attr) bool {
		switch a.Value.Kind() {
		case slog.KindString, slog.KindInt64, slog.KindUint64, slog.KindBool:
		case slog.KindFloat64:
			f := a.Value.Float64()
			simple = !math.IsNaN(f) && !math.IsInf(f, 0)
		default:
			simple = false
		}
		return simple
	})
	if !simple || (!r.Time.IsZero() && (r.Time.Year() < 0 || r.Time.Year() > 9999)) {
		return h.json.Handle(ctx, r)
	}
	return h.write(r.Time, r.Level, r.Message, func(b []byte) []byte {
		r.Attrs(func(a slog.Attr) bool {
			b = appendAttr(b, a)
			return true
		})
		return b
	})
}

// HandleAccessLine writes l as Handle writes its record: the fields of
// l.AppendAttrs, in its order, their keys written as they are.
func (h *jsonLineHandler) HandleAccessLine(l telemetry.AccessLine) error {
	if y := l.Time.Year(); math.IsNaN(l.DurationMS) || math.IsInf(l.DurationMS, 0) || (!l.Time.IsZero() && (y < 0 || y > 9999)) {
		var buf [10]slog.Attr
		r := slog.NewRecord(l.Time, slog.LevelInfo, "request", 0)
		r.AddAttrs(l.AppendAttrs(buf[:0])...)
		return h.json.Handle(context.Background(), r)
	}
	return h.write(l.Time, slog.LevelInfo, "request", func(b []byte) []byte {
		b = appendJSONString(append(b, `,"method":`...), l.Method)
		b = appendJSONString(append(b, `,"route":`...), l.Route)
		b = strconv.AppendInt(append(b, `,"status":`...), int64(l.Status), 10)
		b = appendJSONFloat(append(b, `,"duration_ms":`...), l.DurationMS)
		b = appendJSONString(append(b, `,"request_id":`...), l.RequestID)
		b = appendJSONString(append(b, `,"caller_kind":`...), l.CallerKind)
		if l.CallerCause != "" {
			b = appendJSONString(append(b, `,"caller_reason":`...), l.CallerReason)
			b = appendJSONString(append(b, `,"caller_cause":`...), l.CallerCause)
		}
		if l.Operation != "" {
			b = appendJSONString(append(b, `,"operation":`...), l.Operation)
			b = appendJSONString(append(b, `,"table":`...), l.Table)
		}
		if l.TraceID != "" {
			b = appendJSONString(append(b, `,"trace_id":`...), l.TraceID)
		}
		if l.Subject != "" {
			b = appendJSONString(append(b, `,"subject":`...), l.Subject)
		}
		return b
	})
}

// write writes one line: time, level and message, then what attrs
// appends.
func (h *jsonLineHandler) write(t time.Time, level slog.Level, msg string, attrs func([]byte) []byte) error {
	bp := lineBufs.Get().(*[]byte)
	b := append((*bp)[:0], '{')
	if !t.IsZero() {
		b = append(b, `"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":`...)
	b = appendJSONString(b, level.String())
	b = append(b, `,"msg":`...)
	b = appendJSONString(b, msg)
	b = attrs(b)
	b = append(b, "}\n"...)
	_, err := h.w.Write(b)
	if cap(b) <= 16<<10 {
		*bp = b
		lineBufs.Put(bp)
	}
	return err
}

// appendAttr appends a, an attribute of a kind Handle formats itself, as
// a field of the line (an empty attribute writes nothing).
func appendAttr(b []byte, a slog.Attr) []byte {
	if a.Key == "" && a.Value.Equal(slog.Value{}) {
		return b
	}
	b = append(b, ',')
	b = appendJSONString(b, a.Key)
	b = append(b, ':')
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		b = appendJSONString(b, v.String())
	case slog.KindInt64:
		b = strconv.AppendInt(b, v.Int64(), 10)
	case slog.KindUint64:
		b = strconv.AppendUint(b, v.Uint64(), 10)
	case slog.KindBool:
		b = strconv.AppendBool(b, v.Bool())
	case slog.KindFloat64:
		b = appendJSONFloat(b, v.Float64())
	}
	return b
}

// appendJSONFloat renders f as encoding/json does (finite f only).
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString quotes s as slog's JSON handler does: control
// characters, quote and backslash escaped, invalid UTF-8 as \ufffd,
// U+2028 and U+2029 escaped, everything else (HTML characters included)
// as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
