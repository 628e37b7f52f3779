package events

import (
	"encoding/json"
	"testing"
)

// FuzzFilter: any query value either parses into a bounded filter or is
// refused, and evaluating a parsed filter on any JSON value never panics.
func FuzzFilter(f *testing.F) {
	for _, s := range []string{"eq.1", "not.in.(a,b)", "is.null", "gt.2026-01-01", "in.()", "in.(\"a,b\")", "like.x", "eq.", "not.", "in.(1"} {
		f.Add(s, []byte(`{"c":1}`))
	}
	f.Fuzz(func(t *testing.T, v string, row []byte) {
		flt, err := parseFilter("c", v)
		if err != nil {
			return
		}
		if len(flt.vals) > MaxInValues || len(v) > MaxFilterValue {
			t.Fatalf("unbounded filter from %q", v)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(row, &m) != nil {
			return
		}
		_ = matchAll([]filter{flt}, m)
	})
}
