package events

import (
	"encoding/json"
	"testing"
)

// TestFilterComparesByType: filters compare as the column's type does in
// a list (Postgres), not as float64 or text: integers past 2^53 stay
// exact, times compare as instants across zones, uuids and booleans in
// any spelling, text as text.
func TestFilterComparesByType(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		typ, filter, value string
		want               bool
	}{
		{"int8", "eq.9007199254740993", `9007199254740992`, false},
		{"int8", "eq.9007199254740993", `9007199254740993`, true},
		{"int8", "gt.9007199254740992", `9007199254740993`, true},
		{"int8", "in.(1,9007199254740993)", `9007199254740993`, true},
		{"numeric", "eq.1.10", `1.1`, true},
		{"numeric", "lt.1e2", `99.999`, true},
		{"numeric", "gt.0.1", `0.10000000000000000001`, true},
		{"float8", "gt.1", `"Infinity"`, true},
		{"float8", "eq.NaN", `"NaN"`, true},
		{"timestamptz", "gte.2026-11-24T20:00:00+01:00", `"2026-11-24T19:52:00.123456+00:00"`, true},
		{"timestamptz", "lt.2026-11-24 20:00:00+01", `"2026-11-24T19:52:00+00:00"`, false},
		{"timestamptz", "eq.2026-11-24T19:00:00Z", `"2026-11-24T20:00:00+01:00"`, true},
		{"timestamp", "gt.2026-11-24 19:00", `"2026-11-24T19:30:00"`, true},
		{"date", "eq.2026-11-24", `"2026-11-24"`, true},
		{"date", "lt.2026-11-24", `"2026-11-23"`, true},
		{"uuid", "eq.A0000000-0000-4000-8000-00000000000A", `"a0000000-0000-4000-8000-00000000000a"`, true},
		{"uuid", "eq.{a00000000000400080000000000000ab}", `"a0000000-0000-4000-8000-0000000000ab"`, true},
		{"bool", "eq.t", `true`, true},
		{"bool", "neq.yes", `false`, true},
		{"text", "gt.9", `"10"`, false}, // text order, as Postgres compares text
		{"text", "eq.1.0", `"1"`, false},
		{"int4", "eq.1", `null`, false},
		{"int4", "is.null", `null`, true},
	} {
		f, err := parseFilter("c", c.typ, c.filter)
		if err != nil {
			t.Fatalf("%s %s: %v", c.typ, c.filter, err)
		}
		row := map[string]json.RawMessage{"c": json.RawMessage(c.value)}
		if got := matchAll([]filter{f}, row); got != c.want {
			t.Errorf("%s %s on %s: %v, want %v", c.typ, c.filter, c.value, got, c.want)
		}
		f.not = true
		if got := matchAll([]filter{f}, row); got == c.want {
			t.Errorf("not.%s on %s: %v", c.filter, c.value, got)
		}
	}
	for _, c := range []struct{ typ, filter string }{
		{"int8", "eq.abc"}, {"int8", "gt.1e999999"}, {"numeric", "in.(1,two)"},
		{"timestamptz", "gt.notadate"}, {"date", "eq.24/11/2026"},
		{"uuid", "eq.not-a-uuid"}, {"bool", "eq.maybe"},
	} {
		if _, err := parseFilter("c", c.typ, c.filter); err == nil {
			t.Errorf("%s %s: accepted", c.typ, c.filter)
		}
	}
}
