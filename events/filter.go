package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
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
// row (the resource's selected columns as the event recorded them),
// comparing values as the column's type does: numbers exactly, times as
// instants, uuids and booleans in any of their spellings, other types as
// text.
type filter struct {
	col  string
	kind valueKind
	op   string // eq neq gt gte lt lte in is
	not  bool
	vals []string
	norm []any // vals normalized for kind (not for text)
}

// valueKind is how a column's values compare.
type valueKind int

const (
	kindText      valueKind = iota
	kindNumber              // int2, int4, int8, numeric, float4, float8, oid
	kindTime                // timestamptz: an instant (no zone: UTC)
	kindLocalTime           // timestamp, date: a wall-clock time
	kindUUID
	kindBool
)

// kindOf is the valueKind of a column of type typname (pg_type.typname).
func kindOf(typname string) valueKind {
	switch typname {
	case "int2", "int4", "int8", "numeric", "float4", "float8", "oid":
		return kindNumber
	case "timestamptz":
		return kindTime
	case "timestamp", "date":
		return kindLocalTime
	case "uuid":
		return kindUUID
	case "bool":
		return kindBool
	}
	return kindText
}

// kindNames names the kinds in refusals.
var kindNames = map[valueKind]string{kindNumber: "number", kindTime: "timestamp", kindLocalTime: "timestamp",
	kindUUID: "uuid", kindBool: "boolean"}

// parseFilter parses "op.value" (optionally "not.op.value") for column col
// of type typname; a value the column's type cannot hold is refused, as a
// list refuses it.
func parseFilter(col, typname, v string) (filter, error) {
	f := filter{col: col, kind: kindOf(typname)}
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
	if f.op != "is" && f.kind != kindText {
		for _, x := range f.vals {
			n, ok := normalize(f.kind, x)
			if !ok {
				return f, fmt.Errorf("filter %s: %q is not a %s", col, truncate(x), kindNames[f.kind])
			}
			f.norm = append(f.norm, n)
		}
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
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
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
	var row any = text
	if f.kind != kindText {
		var ok bool
		if row, ok = normalize(f.kind, text); !ok {
			return false // a row value its column's type would not print
		}
	}
	cmp := func(i int) int {
		if f.kind == kindText {
			return strings.Compare(text, f.vals[i])
		}
		return compare(f.kind, row, f.norm[i])
	}
	if f.op == "in" {
		for i := range f.vals {
			if cmp(i) == 0 {
				return true
			}
		}
		return false
	}
	c := cmp(0)
	switch f.op {
	case "eq":
		return c == 0
	case "neq":
		return c != 0
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	case "lt":
		return c < 0
	case "lte":
		return c <= 0
	}
	return false
}

func textOf(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// compare compares x and y, values of kind as normalize returns them.
func compare(kind valueKind, x, y any) int {
	switch kind {
	case kindNumber:
		xr, xok := x.(*big.Rat)
		yr, yok := y.(*big.Rat)
		if xok && yok {
			return xr.Cmp(yr)
		}
		return cmpFloat(toFloat(x), toFloat(y)) // NaN and ±Infinity, as Postgres orders them
	case kindTime, kindLocalTime:
		return x.(time.Time).Compare(y.(time.Time))
	}
	return strings.Compare(x.(string), y.(string)) // uuid, bool: canonical text
}

// normalize parses s as a value of kind: a *big.Rat or float64 for
// numbers, a time.Time for times, the canonical text of a uuid or boolean.
func normalize(kind valueKind, s string) (any, bool) {
	switch kind {
	case kindNumber:
		if len(s) <= 64 && smallExponent(s) {
			if r, ok := new(big.Rat).SetString(s); ok {
				return r, true
			}
		}
		switch strings.ToLower(s) {
		case "nan":
			return math.NaN(), true
		case "infinity", "+infinity", "inf", "+inf":
			return math.Inf(1), true
		case "-infinity", "-inf":
			return math.Inf(-1), true
		}
		return nil, false
	case kindTime, kindLocalTime:
		return parseTime(s, kind == kindLocalTime)
	case kindUUID:
		u := strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}"))
		u = strings.ReplaceAll(u, "-", "")
		if len(u) != 32 || strings.Trim(u, "0123456789abcdef") != "" {
			return nil, false
		}
		return u, true
	case kindBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "t", "true", "y", "yes", "on", "1":
			return "true", true
		case "f", "false", "n", "no", "off", "0":
			return "false", true
		}
		return nil, false
	}
	return s, true
}

// smallExponent reports whether the exponent of a number's text, if it
// has one, is within ±400 (past float8's range), so that big.Rat does not
// build a huge power of ten.
func smallExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	e, err := strconv.Atoi(s[i+1:])
	return err == nil && e >= -400 && e <= 400
}

// timeLayouts are the spellings of a time a filter or a row may use: what
// Postgres prints in JSON, RFC 3339, and its own text output.
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// parseTime parses s in one of timeLayouts; a time without a zone is UTC.
// With local (timestamp without time zone, date) the zone is dropped and
// the wall clock kept, as Postgres does.
func parseTime(s string, local bool) (any, bool) {
	for _, l := range timeLayouts {
		t, err := time.Parse(l, s)
		if err != nil {
			continue
		}
		if local {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		}
		return t, true
	}
	return nil, false
}

func toFloat(v any) float64 {
	if r, ok := v.(*big.Rat); ok {
		f, _ := r.Float64()
		return f
	}
	return v.(float64)
}

// cmpFloat orders floats as Postgres does: NaN above every other value
// and equal to itself.
func cmpFloat(x, y float64) int {
	switch {
	case math.IsNaN(x) && math.IsNaN(y):
		return 0
	case math.IsNaN(x):
		return 1
	case math.IsNaN(y):
		return -1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}
