package server

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/telemetry"
)

// The access log's handler writes what slog's JSON handler writes, byte
// for byte, for the records it formats itself and for those it hands on.
func TestJSONLineHandlerMatchesSlogJSON(t *testing.T) {
	t.Parallel()
	strs := []string{"", "GET", "/api/todos/{id}", `quote " and \ backslash`, "tab\tnew\nline\rcr", "\x00\x01\x1f\x7f",
		"<script>&amp;</script>", "ünïcödé ✓ 日本", "\u2028\u2029", "bad \xff\xfe utf8", "emoji 🙂", strings.Repeat("long ", 200)}
	floats := []float64{0, 1, -1, 0.5, 1.234, 12.345, 1e-7, 1.5e-9, 1e21, 123456789.125, 1e20, -3e-8, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.NaN(), math.Inf(1)}
	times := []time.Time{{}, time.Date(2026, 12, 6, 7, 8, 9, 123456789, time.UTC), time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600)),
		time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.UTC), time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func() slog.Attr {
		k := strs[rng.IntN(len(strs))]
		switch rng.IntN(8) {
		case 0:
			return slog.String(k, strs[rng.IntN(len(strs))])
		case 1:
			return slog.Int(k, rng.IntN(1000)-500)
		case 2:
			return slog.Uint64(k, rng.Uint64())
		case 3:
			return slog.Bool(k, rng.IntN(2) == 0)
		case 4:
			return slog.Float64(k, floats[rng.IntN(len(floats))])
		case 5:
			return slog.Duration(k, time.Duration(rng.IntN(1e9)))
		case 6:
			return slog.Group(k, slog.String("a", "b"))
		}
		return slog.Attr{}
	}
	for i := range 3000 {
		r := slog.NewRecord(times[rng.IntN(len(times))], []slog.Level{slog.LevelInfo, slog.LevelWarn, slog.LevelError, slog.LevelInfo + 2}[rng.IntN(4)],
			strs[rng.IntN(len(strs))], 0)
		for range rng.IntN(12) {
			r.AddAttrs(pick())
		}
		var want, got bytes.Buffer
		if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if err := newJSONLineHandler(&got).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("record %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
	}
	// Through a logger, as the access log writes, and derived handlers.
	var want, got bytes.Buffer
	for _, l := range []*slog.Logger{slog.New(slog.NewJSONHandler(&want, nil)), slog.New(newJSONLineHandler(&got))} {
		l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "GET"), slog.Float64("duration_ms", 0.731))
		l.Debug("not written")
		l.With("k", "v").WithGroup("g").Info("derived", "n", 1)
	}
	// The times differ (time.Now): compare without them.
	strip := func(s string) string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			if i := strings.Index(line, `"level"`); i > 0 {
				line = line[i:]
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	if strip(got.String()) != strip(want.String()) || strings.Count(got.String(), "\n") != 2 {
		t.Fatalf("through a logger:\n got %s\nwant %s", got.String(), want.String())
	}
}

// An access line handed to the handler as it is writes what the JSON
// handler writes for the record telemetry builds from it.
func TestJSONLineHandlerAccessLine(t *testing.T) {
	t.Parallel()
	strs := []string{"", "GET", "/api/todos/{id}", `quote " and \ backslash`, "tab\tnew\nline", "bad \xff utf8", "\u2028"}
	floats := []float64{0, 0.731, 1.5e-9, 1e21, math.NaN(), math.Inf(-1)}
	times := []time.Time{{}, time.Date(2026, 12, 6, 7, 8, 9, 123456789, time.UTC), time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC)}
	rng := rand.New(rand.NewPCG(3, 4))
	s := func() string { return strs[rng.IntN(len(strs))] }
	for i := range 2000 {
		l := telemetry.AccessLine{Time: times[rng.IntN(len(times))], Method: s(), Route: s(), Status: rng.IntN(600), DurationMS: floats[rng.IntN(len(floats))],
			RequestID: s(), CallerKind: s(), TraceID: s(), Subject: s()}
		if rng.IntN(2) == 0 {
			l.CallerReason, l.CallerCause = s(), s()
		}
		if rng.IntN(2) == 0 {
			l.Operation, l.Table = s(), s()
		}
		r := slog.NewRecord(l.Time, slog.LevelInfo, "request", 0)
		r.AddAttrs(l.AppendAttrs(nil)...)
		var want, got bytes.Buffer
		if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if err := newJSONLineHandler(&got).HandleAccessLine(l); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Fatalf("line %d:\n got %s\nwant %s", i, got.String(), want.String())
		}
	}
}

func BenchmarkAccessLogLine(b *testing.B) {
	for name, h := range map[string]slog.Handler{"slog-json": slog.NewJSONHandler(discardLines{}, nil), "line": newJSONLineHandler(discardLines{})} {
		l := slog.New(h)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("method", "GET"), slog.String("route", "GET /api/todos/{id}"),
					slog.Int("status", 200), slog.Float64("duration_ms", 0.731), slog.String("request_id", "0123456789abcdef0123456789abcdef"),
					slog.String("caller_kind", "user"), slog.String("operation", "get"), slog.String("table", "todos"))
			}
		})
	}
}

// BenchmarkAccessLine: the access log's line as telemetry hands it to the
// line handler, without a slog.Record.
func BenchmarkAccessLine(b *testing.B) {
	h := newJSONLineHandler(discardLines{})
	b.ReportAllocs()
	for b.Loop() {
		_ = h.HandleAccessLine(telemetry.AccessLine{Time: time.Now(), Method: "GET", Route: "/api/todos/{id}", Status: 200, DurationMS: 0.731,
			RequestID: "0123456789abcdef01234567", CallerKind: "user", Operation: "get", Table: "todos"})
	}
}

type discardLines struct{}

func (discardLines) Write(p []byte) (int, error) { return len(p), nil }
