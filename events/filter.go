package events

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Limits of a stream's query.
const (
	// MaxFilters caps the column filters of one stream.
	MaxFilters = 16
	// MaxFilterValue caps the bytes of one filter's value.
	MaxFilterValue = 256
	// MaxInValues caps the values of one in.(...) filter.
	MaxInValues = 64
)

// filter is one list-style column filter, evaluated on a table event's
// row (the resource's selected columns as the event recorded them).
type filter struct {
	col  string
	op   string // eq neq gt gte lt lte in is
	not  bool
	vals []string
}

// parseFilter parses "op.value" (optionally "not.op.value") for column col.
func parseFilter(col, v string) (filter, error) {
	f := filter{col: col}
	if len(v) > MaxFilterValue {
		return f, fmt.Errorf("filter %s: value longer than %d bytes", col, MaxFilterValue)
	}
	if rest, ok := strings.CutPrefix(v, "not."); ok {
		f.not, v = true, rest
	}
	op, val, ok := strings.Cut(v, ".")
	if !ok {
		return f, fmt.Errorf("filter %s: expected op.value", col)
	}
	f.op = op
	switch op {
	case "eq", "neq", "gt", "gte", "lt", "lte":
		f.vals = []string{val}
	case "is":
		switch val {
		case "null", "true", "false":
			f.vals = []string{val}
		default:
			return f, fmt.Errorf("filter %s: is takes null, true or false", col)
		}
	case "in":
		inner, ok := strings.CutPrefix(val, "(")
		if ok {
			inner, ok = strings.CutSuffix(inner, ")")
		}
		if !ok {
			return f, fmt.Errorf("filter %s: in takes (a,b,...)", col)
		}
		if inner != "" {
			f.vals = strings.Split(inner, ",")
		}
		if len(f.vals) > MaxInValues {
			return f, fmt.Errorf("filter %s: more than %d values", col, MaxInValues)
		}
		for i, x := range f.vals {
			f.vals[i] = strings.Trim(x, `"`)
		}
	default:
		return f, fmt.Errorf("filter %s: unknown operator %q (eq, neq, gt, gte, lt, lte, in, is)", col, op)
	}
	return f, nil
}

func matchAll(fs []filter, row map[string]json.RawMessage) bool {
	for _, f := range fs {
		if f.match(row[f.col]) != !f.not {
			return false
		}
	}
	return true
}

// match evaluates the filter on a JSON value (nil or null: SQL NULL, which
// only is.null matches).
func (f filter) match(raw json.RawMessage) bool {
	var v any
	if len(raw) > 0 {
		if json.Unmarshal(raw, &v) != nil {
			return false
		}
	}
	if f.op == "is" {
		switch f.vals[0] {
		case "null":
			return v == nil
		case "true":
			return v == true
		default:
			return v == false
		}
	}
	if v == nil {
		return false
	}
	text := textOf(v)
	switch f.op {
	case "eq":
		return compare(text, f.vals[0]) == 0
	case "neq":
		return compare(text, f.vals[0]) != 0
	case "gt":
		return compare(text, f.vals[0]) > 0
	case "gte":
		return compare(text, f.vals[0]) >= 0
	case "lt":
		return compare(text, f.vals[0]) < 0
	case "lte":
		return compare(text, f.vals[0]) <= 0
	case "in":
		return slices.ContainsFunc(f.vals, func(x string) bool { return compare(text, x) == 0 })
	}
	return false
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// compare compares numerically when both sides are numbers, else as text.
func compare(a, b string) int {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 == nil && err2 == nil {
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	}
	return strings.Compare(a, b)
}
