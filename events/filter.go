package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablegate/tablegate/internal/inlist"
)

// Limits of a stream's query.
const (
	// MaxFilters caps the column filters of one stream.
	MaxFilters = 16
	// MaxFilterValue caps the bytes of one filter's query value: the
	// operator, a not. prefix and every value of an in.(...) together.
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
	col    string
	kind   valueKind
	labels map[string]int // an enum's labels, in their declared order
	op     string         // eq neq gt gte lt lte in is
	not    bool
	vals   []string
	norm   []any // vals normalized for kind (not for text)
}

// valueKind is how a column's values compare.
type valueKind int

const (
	kindOther     valueKind = iota // unknown types, domains: numbers if both sides are, else text
	kindText                       // text, varchar, char, name: text
	kindBpchar                     // char(n): text without trailing spaces
	kindCitext                     // citext: text of either case
	kindInt                        // int2, int4, int8, oid: exact integers
	kindNumeric                    // numeric: exact decimals
	kindFloat4                     // float4: as float32
	kindFloat8                     // float8: as float64
	kindTime                       // timestamptz: an instant (no zone: UTC)
	kindLocalTime                  // timestamp: a wall-clock time
	kindDate                       // date: a day (a time in a filter is dropped)
	kindUUID
	kindBool
	kindEnum // by the labels' declared order
)

// colType is what a stream knows of a column's type: pg_type.typname (a
// domain's base type's), and an enum's labels in their declared order.
type colType struct {
	name   string
	labels []string
}

// kindOf is the valueKind of a column of type typname (pg_type.typname).
func kindOf(typname string) valueKind {
	switch typname {
	case "text", "varchar", "char", "name":
		return kindText
	case "bpchar":
		return kindBpchar
	case "citext":
		return kindCitext
	case "int2", "int4", "int8", "oid":
		return kindInt
	case "numeric":
		return kindNumeric
	case "float4":
		return kindFloat4
	case "float8":
		return kindFloat8
	case "timestamptz":
		return kindTime
	case "timestamp":
		return kindLocalTime
	case "date":
		return kindDate
	case "uuid":
		return kindUUID
	case "bool":
		return kindBool
	}
	return kindOther
}

// kindNames names the kinds in refusals.
var kindNames = map[valueKind]string{kindInt: "integer", kindNumeric: "number", kindFloat4: "number",
	kindFloat8: "number", kindTime: "timestamp", kindLocalTime: "timestamp", kindDate: "date",
	kindUUID: "uuid", kindBool: "boolean", kindEnum: "label of the column's enum"}

// parseFilter parses "op.value" (optionally "not.op.value") for column col
// of type typname; a value the column's type cannot hold is refused, as a
// list refuses it.
func parseFilter(col, typname, v string) (filter, error) {
	return parseTyped(col, colType{name: typname}, v)
}

// parseTyped is parseFilter for a column of type t.
func parseTyped(col string, t colType, v string) (filter, error) {
	f := filter{col: col, kind: kindOf(t.name)}
	if t.labels != nil {
		f.kind, f.labels = kindEnum, make(map[string]int, len(t.labels))
		for i, l := range t.labels {
			f.labels[l] = i
		}
	}
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
		val = strings.ToLower(val)
		switch val {
		case "null", "true", "false", "unknown":
			f.vals = []string{val}
		default:
			return f, fmt.Errorf("filter %s: is takes null, true, false or unknown", col)
		}
		if val != "null" && f.kind != kindBool {
			return f, fmt.Errorf("filter %s: is.true, is.false and is.unknown apply to boolean columns only; use is.null", col)
		}
	case "in":
		vals, ok := inlist.Parse(val)
		if !ok {
			return f, fmt.Errorf(`filter %s: in takes a list in parentheses: in.(a,b,"c,d")`, col)
		}
		if len(vals) > MaxInValues {
			return f, fmt.Errorf("filter %s: more than %d values", col, MaxInValues)
		}
		f.vals = vals
	default:
		return f, fmt.Errorf("filter %s: unknown operator %q (eq, neq, gt, gte, lt, lte, in, is)", col, op)
	}
	if f.op != "is" {
		for i, x := range f.vals {
			if strings.IndexByte(x, 0) >= 0 || !utf8.ValidString(x) {
				return f, fmt.Errorf("filter %s: a value holds a NUL byte or invalid UTF-8, which no column can hold", col)
			}
			y := f.asPostgresReads(x)
			f.vals[i] = y
			n, ok := f.normalize(y)
			if !ok {
				return f, fmt.Errorf("filter %s: %q is not a %s", col, truncate(x), kindNames[f.kind])
			}
			if f.kind == kindTime || f.kind == kindLocalTime || f.kind == kindDate {
				// Postgres checks the zone offset (a timestamp or date
				// then drops it): minutes below 60, at most ±15:59.
				z, ok := parseTime(y, false)
				if ok && (!inRange("timestamptz", z) || badOffsetMinutes(y)) {
					return f, fmt.Errorf("filter %s: %q is out of range for type %s", col, truncate(x), t.name)
				}
			}
			if fl, ok := n.(float64); ok && fl == 0 && (f.kind == kindFloat4 || f.kind == kindFloat8) {
				if r, ok := decimal(y); ok && r.Sign() != 0 {
					// Too small for the type: Postgres refuses it rather
					// than reading 0.
					return f, fmt.Errorf("filter %s: %q is out of range for type %s", col, truncate(x), t.name)
				}
			}
			if !inRange(t.name, n) {
				return f, fmt.Errorf("filter %s: %q is out of range for type %s", col, truncate(x), t.name)
			}
			if r, ok := n.(*big.Rat); ok && t.name == "oid" && r.Sign() < 0 {
				n = new(big.Rat).Add(r, oidWrap) // Postgres reads oid -1 as 4294967295
			}
			if tm, ok := n.(time.Time); ok && (f.kind == kindTime || f.kind == kindLocalTime) && !isInfinite(tm) {
				n = roundMicro(tm, y)
			}
			f.norm = append(f.norm, n)
		}
	}
	return f, nil
}

// asPostgresReads spells a filter value the way this package's parsers
// read what Postgres's input functions take too: numbers and times
// without the ASCII whitespace around them, times with an upper-case T
// and Z. A time with a comma before its fraction, which Go reads and
// Postgres refuses, is left to fail.
func (f filter) asPostgresReads(x string) string {
	switch f.kind {
	case kindInt, kindNumeric, kindFloat4, kindFloat8:
		return strings.Trim(x, asciiSpace)
	case kindTime, kindLocalTime, kindDate:
		x = strings.ToUpper(strings.Trim(x, asciiSpace))
		if strings.Contains(x, ",") {
			return "" // refused by normalize
		}
		return x
	}
	return x
}

// asciiSpace is the whitespace Postgres's input functions skip (isspace).
const asciiSpace = " \t\n\v\f\r"

// roundMicro sets the fraction of a second of t, parsed from raw, to the
// microseconds Postgres reads from raw: rint(fraction * 1e6) computed in
// float64 from all the digits written (Go kept nine).
func roundMicro(t time.Time, raw string) time.Time {
	i := strings.IndexByte(raw, '.')
	if i < 0 {
		return t
	}
	j := i + 1
	for j < len(raw) && raw[j] >= '0' && raw[j] <= '9' {
		j++
	}
	f, err := strconv.ParseFloat("0."+raw[i+1:j], 64)
	if j == i+1 || err != nil {
		return t
	}
	us := math.RoundToEven(f * 1e6)
	return t.Add(-time.Duration(t.Nanosecond())).Add(time.Duration(us) * time.Microsecond)
}

// intRanges are the ranges of Postgres's integer types.
var intRanges = map[string][2]*big.Rat{
	"int2": {big.NewRat(math.MinInt16, 1), big.NewRat(math.MaxInt16, 1)},
	"int4": {big.NewRat(math.MinInt32, 1), big.NewRat(math.MaxInt32, 1)},
	"int8": {big.NewRat(math.MinInt64, 1), big.NewRat(math.MaxInt64, 1)},
	"oid":  {big.NewRat(math.MinInt32, 1), big.NewRat(math.MaxUint32, 1)},
}

// oidWrap is what Postgres adds to a negative oid it reads.
var oidWrap = big.NewRat(1<<32, 1)

// badOffsetMinutes reports whether s ends in a zone offset whose minutes
// are 60 or more (+00:60, +0075), which Go reads as hours and Postgres
// refuses.
func badOffsetMinutes(s string) bool {
	n := len(s)
	var mm string
	switch {
	case n >= 6 && (s[n-6] == '+' || s[n-6] == '-') && s[n-3] == ':':
		mm = s[n-2:]
	case n >= 5 && (s[n-5] == '+' || s[n-5] == '-'):
		mm = s[n-2:]
	default:
		return false
	}
	return mm[0] >= '6' && mm[0] <= '9' && mm[1] >= '0' && mm[1] <= '9'
}

// maxZoneOffset is the largest time zone displacement Postgres accepts
// (±15:59:59).
const maxZoneOffset = 15*3600 + 59*60 + 59

// inRange reports whether a filter value, normalized, is one a column of
// type typname can hold, as Postgres would read it: integers within
// their type's range, times after year 0 with a zone offset within
// ±15:59:59. A list refuses the others (the cast fails), and so does a
// stream.
func inRange(typname string, v any) bool {
	switch v := v.(type) {
	case *big.Rat:
		if r, ok := intRanges[typname]; ok {
			return v.Cmp(r[0]) >= 0 && v.Cmp(r[1]) <= 0
		}
	case time.Time:
		if isInfinite(v) {
			return true
		}
		_, off := v.Zone()
		return v.Year() != 0 && off >= -maxZoneOffset && off <= maxZoneOffset
	}
	return true
}

func matchAll(fs []filter, row map[string]json.RawMessage) bool {
	for _, f := range fs {
		m, known := f.match(row[f.col])
		// As in SQL: NOT of an unknown comparison (a NULL, or a value that
		// cannot be compared) is unknown, and unknown rows do not match.
		if !known || m == f.not {
			return false
		}
	}
	return true
}

// match evaluates the filter on a JSON value (nil or null: SQL NULL, which
// only is.null matches); known is false where SQL's answer would be NULL.
func (f filter) match(raw json.RawMessage) (m, known bool) {
	var v any
	if len(raw) > 0 {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return false, false
		}
	}
	if f.op == "is" {
		switch f.vals[0] {
		case "null", "unknown":
			return v == nil, true
		case "true":
			return v == true, true
		default:
			return v == false, true
		}
	}
	if v == nil {
		return false, false
	}
	row, ok := f.normalize(textOf(v)) // once per filter: the values were at parse
	if !ok {
		return false, false // a value this comparison cannot read
	}
	cmp := func(i int) int { return compare(f.kind, row, f.norm[i]) }
	if f.op == "in" {
		for i := range f.vals {
			if cmp(i) == 0 {
				return true, true
			}
		}
		return false, true
	}
	c := cmp(0)
	switch f.op {
	case "eq":
		return c == 0, true
	case "neq":
		return c != 0, true
	case "gt":
		return c > 0, true
	case "gte":
		return c >= 0, true
	case "lt":
		return c < 0, true
	case "lte":
		return c <= 0, true
	}
	return false, false
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

// localize reads the filter's timestamptz values that name no zone in
// loc, the database session's TimeZone, as Postgres reads them in a list.
func (f *filter) localize(loc *time.Location) {
	if f.kind != kindTime || f.op == "is" {
		return
	}
	for i, v := range f.vals {
		if t, ok := parseTimeIn(v, false, loc); ok {
			if !isInfinite(t) {
				t = roundMicro(t, v)
			}
			f.norm[i] = t
		}
	}
}

// zoneless reports whether a timestamptz filter names a time without a
// zone, which Postgres reads in the session's TimeZone.
func (f *filter) zoneless() bool {
	if f.kind != kindTime || f.op == "is" {
		return false
	}
	plusOne := time.FixedZone("", 3600)
	for _, v := range f.vals {
		a, _ := parseTimeIn(v, false, time.UTC)
		b, _ := parseTimeIn(v, false, plusOne)
		if !a.Equal(b) {
			return true
		}
	}
	return false
}

// normalize is normalize for the filter's column: an enum's label as its
// position.
func (f *filter) normalize(s string) (any, bool) {
	if f.kind == kindEnum {
		i, ok := f.labels[s]
		return i, ok
	}
	return normalize(f.kind, s)
}

// compare compares x and y, values of kind as normalize returns them.
func compare(kind valueKind, x, y any) int {
	switch kind {
	case kindInt, kindNumeric:
		xr, xok := x.(*big.Rat)
		yr, yok := y.(*big.Rat)
		switch {
		case xok && yok:
			return xr.Cmp(yr)
		case xok: // finite against NaN or an infinity
			return cmpFloat(0, y.(float64))
		case yok:
			return cmpFloat(x.(float64), 0)
		}
		return cmpFloat(x.(float64), y.(float64)) // NaN and ±Infinity, as Postgres orders them
	case kindOther:
		xo, yo := x.(other), y.(other)
		if xo.num != nil && yo.num != nil {
			return xo.num.Cmp(yo.num)
		}
		return strings.Compare(xo.text, yo.text)
	case kindFloat4, kindFloat8:
		return cmpFloat(x.(float64), y.(float64))
	case kindTime, kindLocalTime, kindDate:
		return x.(time.Time).Compare(y.(time.Time))
	case kindEnum:
		return x.(int) - y.(int)
	}
	return strings.Compare(x.(string), y.(string)) // uuid, bool: canonical text
}

// other is a value of a type the filter does not know (a domain, an
// enum, …), compared as a number when both sides read as decimals, else as
// text.
type other struct {
	text string
	num  *big.Rat
}

// maxDecimal bounds the text of a decimal read exactly: Postgres prints a
// float8 in full (1e300 is 301 digits); longer numeric row values are
// compared through float64.
const maxDecimal = 1024

// decimal reads s in Postgres's decimal syntax, [+-]digits[.digits] with
// an optional e[+-]digits exponent within ±400, exactly: no hex, binary
// exponents, fractions or spaces, which big.Rat would also read.
func decimal(s string) (*big.Rat, bool) {
	if len(s) == 0 || len(s) > maxDecimal {
		return nil, false
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, n = i+1, n+1
		}
		return n
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return nil, false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		exp := s[i+1:]
		j := 0
		if j < len(exp) && (exp[j] == '+' || exp[j] == '-') {
			j++
		}
		if j == len(exp) || len(exp)-j > 3 || strings.Trim(exp[j:], "0123456789") != "" {
			return nil, false
		}
		if e, _ := strconv.Atoi(exp); e < -400 || e > 400 {
			return nil, false
		}
		i = len(s)
	}
	if i != len(s) {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// special reads Postgres's spellings of NaN and the infinities.
func special(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case "nan":
		return math.NaN(), true
	case "infinity", "+infinity", "inf", "+inf":
		return math.Inf(1), true
	case "-infinity", "-inf":
		return math.Inf(-1), true
	}
	return 0, false
}

// normalize parses s as a value of kind: a *big.Rat (a float64 for NaN and
// the infinities) for integers and numerics, a float64 for floats, a
// time.Time for times, the canonical text of a uuid or boolean.
func normalize(kind valueKind, s string) (any, bool) {
	switch kind {
	case kindInt:
		if r, ok := decimal(s); ok && !strings.ContainsAny(s, ".eE") {
			return r, true
		}
		return nil, false
	case kindNumeric:
		if r, ok := decimal(s); ok {
			return r, true
		}
		if f, ok := special(s); ok {
			return f, true
		}
		if len(s) > maxDecimal { // a very long numeric row value
			if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
				return f, true
			}
		}
		return nil, false
	case kindFloat4, kindFloat8:
		if f, ok := special(s); ok {
			return f, true
		}
		if _, ok := decimal(s); !ok && len(s) <= maxDecimal {
			return nil, false
		}
		bits := 64
		if kind == kindFloat4 {
			bits = 32 // both sides as float4, as Postgres compares them
		}
		f, err := strconv.ParseFloat(s, bits)
		if err != nil && (!errors.Is(err, strconv.ErrRange) || math.IsInf(f, 0)) {
			return nil, false // out of the type's range, as Postgres says
		}
		return f, true
	case kindTime, kindLocalTime, kindDate:
		t, ok := parseTime(s, kind != kindTime)
		if ok && kind == kindDate && !isInfinite(t) {
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		}
		return t, ok
	case kindUUID:
		u, ok := uuidHex(s)
		return u, ok
	case kindBool:
		return boolText(s)
	case kindBpchar:
		return strings.TrimRight(s, " "), true
	case kindCitext:
		return strings.ToLower(s), true
	case kindOther:
		o := other{text: s}
		if r, ok := decimal(s); ok {
			o.num = r
		}
		return o, true
	}
	return s, true
}

// uuidHex reads a uuid as Postgres's uuid input does — 32 hex digits of
// either case, a hyphen allowed after any group of four (not at the end),
// optionally between braces — and returns its 32 lower-case digits.
func uuidHex(s string) (string, bool) {
	braces := strings.HasPrefix(s, "{")
	if braces {
		if !strings.HasSuffix(s, "}") {
			return "", false
		}
		s = s[1 : len(s)-1]
	}
	var b strings.Builder
	for i := 0; i < 16; i++ {
		if len(s) < 2 || !isHex(s[0]) || !isHex(s[1]) {
			return "", false
		}
		b.WriteString(strings.ToLower(s[:2]))
		s = s[2:]
		if len(s) > 0 && s[0] == '-' && i%2 == 1 && i < 15 {
			s = s[1:]
		}
	}
	if s != "" {
		return "", false
	}
	return b.String(), true
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// boolText reads a boolean as Postgres's boolean input does: ASCII
// whitespace around it, any case, a prefix of true, false, yes or no, on,
// of/off, 1 or 0.
func boolText(s string) (any, bool) {
	s = strings.ToLower(strings.Trim(s, " \t\n\v\f\r"))
	if s == "" {
		return nil, false
	}
	prefix := func(word string) bool { return len(s) <= len(word) && word[:len(s)] == s }
	switch s[0] {
	case 't':
		if prefix("true") {
			return "true", true
		}
	case 'y':
		if prefix("yes") {
			return "true", true
		}
	case 'f':
		if prefix("false") {
			return "false", true
		}
	case 'n':
		if prefix("no") {
			return "false", true
		}
	case 'o':
		switch s {
		case "on":
			return "true", true
		case "of", "off":
			return "false", true
		}
	case '1':
		if s == "1" {
			return "true", true
		}
	case '0':
		if s == "0" {
			return "false", true
		}
	}
	return nil, false
}

// The times Postgres spells infinity and -infinity.
var (
	posInfinity = time.Unix(1<<62, 0).UTC()
	negInfinity = time.Unix(-(1 << 62), 0).UTC()
)

func isInfinite(t time.Time) bool { return t.Equal(posInfinity) || t.Equal(negInfinity) }

// timeLayouts are the spellings of a time a filter or a row may use: what
// Postgres prints in JSON, RFC 3339, and its own text output.
var timeLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z0700",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04Z07:00",
	"2006-01-02 15:04Z07:00",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// parseTime parses s in one of timeLayouts; a time without a zone is UTC.
// With local (timestamp without time zone, date) the zone is dropped and
// the wall clock kept, as Postgres does.
func parseTime(s string, local bool) (time.Time, bool) { return parseTimeIn(s, local, time.UTC) }

// parseTimeIn is parseTime reading a time without a zone in loc.
func parseTimeIn(s string, local bool, loc *time.Location) (time.Time, bool) {
	switch strings.ToLower(s) {
	case "infinity":
		return posInfinity, true
	case "-infinity":
		return negInfinity, true
	}
	for _, l := range timeLayouts {
		t, err := time.ParseInLocation(l, s, loc)
		if err != nil {
			continue
		}
		if local {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
		}
		return t, true
	}
	return time.Time{}, false
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
