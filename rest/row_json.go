package rest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Rows are rendered to JSON in Go, byte for byte as Postgres's to_json
// renders each value (what row_to_json and json_agg produce), with keys in
// select order and no spaces: {"id":1,"title":"a"}.
//
// The types most tables are made of are read as the driver receives them
// (binary for numbers, booleans, uuids and timestamps) and written by the
// appenders below; every other column is selected as to_json(t.col) and
// its JSON copied as is. Measured on a 50-row page of six columns (two
// uuids, a timestamptz): Postgres spends ~105 µs less per page than with
// json_agg(t.*), which looks up each value's type and output function for
// every row (bench/BENCHMARKS.md, "List rendering").

// Type OIDs of the columns rendered in Go (pg_type.oid, fixed for
// built-in types). A domain has its own OID and takes the to_json path.
const (
	oidBool        = 16
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidBPChar      = 1042
	oidVarchar     = 1043
	oidTimestamptz = 1184
	oidUUID        = 2950
	oidJSONB       = 3802
)

// renderedInGo reports whether appendValue writes columns of type oid
// from their own value; other columns are selected as to_json(…).
func renderedInGo(oid uint32) bool {
	switch oid {
	case oidBool, oidName, oidInt8, oidInt2, oidInt4, oidText, oidJSON, oidBPChar, oidVarchar,
		oidTimestamptz, oidUUID, oidJSONB:
		return true
	}
	return false
}

// outputExpr is the select-list expression of c in a rendered row;
// allJSON selects every column as to_json(…).
func (c *column) outputExpr(allJSON bool) string {
	if renderedInGo(c.typeOID) && !allJSON {
		return "t." + c.ident
	}
	return "to_json(t." + c.ident + ")"
}

// selectList renders the output expressions of cols, comma-separated.
func selectList(cols []*column, allJSON bool) string {
	var b []byte
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c.outputExpr(allJSON)...)
	}
	return string(b)
}

// errUnrenderable: a value appendValue cannot write, which the statement
// did not select as to_json — a binary value of a type it does not know
// (the column's type changed after the resource was built), or a
// timestamptz in text under a DateStyle other than ISO. The repository
// then selects every column as to_json (see tableRepository.retyped).
var errUnrenderable = errors.New("no JSON form for the binary values of this type")

// jsonKey is the object key of a column with its colon: "name":.
func jsonKey(name string) string {
	return string(append(appendJSONString(nil, name), ':'))
}

// appendRow appends the JSON object of one row whose first len(cols)
// fields (descriptions fds, values vals) are the output expressions of cols.
func appendRow(b []byte, cols []*column, fds []pgconn.FieldDescription, vals [][]byte, zone *time.Location) ([]byte, error) {
	if len(vals) < len(cols) || len(fds) < len(cols) {
		return nil, fmt.Errorf("rest: row of %d fields for %d columns", len(vals), len(cols))
	}
	b = append(b, '{')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c.key...)
		var err error
		if b, err = appendValue(b, &fds[i], vals[i], zone); err != nil {
			return nil, fmt.Errorf("rest: column %q: %w", c.Name, err)
		}
	}
	return append(b, '}'), nil
}

// appendValue appends the JSON form of one field value as Postgres's
// to_json renders it: v is in the field's format (binary or text).
func appendValue(b []byte, fd *pgconn.FieldDescription, v []byte, zone *time.Location) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	text := fd.Format == pgx.TextFormatCode
	switch fd.DataTypeOID {
	case oidJSON:
		return append(b, v...), nil
	case oidJSONB:
		if !text { // binary: a version byte (1), then the text form
			if len(v) == 0 || v[0] != 1 {
				return nil, fmt.Errorf("unknown jsonb binary version")
			}
			v = v[1:]
		}
		return append(b, v...), nil
	case oidText, oidVarchar, oidBPChar, oidName: // the same bytes in both formats
		return appendJSONString(b, string(v)), nil
	case oidBool:
		if (text && v[0] == 't') || (!text && v[0] != 0) {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case oidInt2, oidInt4, oidInt8:
		if text {
			return append(b, v...), nil
		}
		switch len(v) {
		case 2:
			return strconv.AppendInt(b, int64(int16(binary.BigEndian.Uint16(v))), 10), nil
		case 4:
			return strconv.AppendInt(b, int64(int32(binary.BigEndian.Uint32(v))), 10), nil
		case 8:
			return strconv.AppendInt(b, int64(binary.BigEndian.Uint64(v)), 10), nil
		}
		return nil, fmt.Errorf("integer of %d bytes", len(v))
	case oidUUID:
		if text {
			return appendJSONString(b, string(v)), nil
		}
		if len(v) != 16 {
			return nil, fmt.Errorf("uuid of %d bytes", len(v))
		}
		return appendUUID(b, v), nil
	case oidTimestamptz:
		if text {
			return appendTimestamptzText(b, v)
		}
		if len(v) != 8 {
			return nil, fmt.Errorf("timestamptz of %d bytes", len(v))
		}
		if zone == nil {
			return nil, fmt.Errorf("%w: the session's TimeZone is unknown to Go", errUnrenderable)
		}
		return appendTimestamptz(b, int64(binary.BigEndian.Uint64(v)), zone), nil
	}
	if text { // a type Postgres renders as its output text, quoted
		return appendJSONString(b, string(v)), nil
	}
	return nil, fmt.Errorf("%w (type oid %d)", errUnrenderable, fd.DataTypeOID)
}

// int8Value decodes a bigint field in either format.
func int8Value(fd *pgconn.FieldDescription, v []byte) (int64, error) {
	if fd.Format == pgx.TextFormatCode {
		return strconv.ParseInt(string(v), 10, 64)
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("bigint of %d bytes", len(v))
	}
	return int64(binary.BigEndian.Uint64(v)), nil
}

// appendJSONString appends s quoted as Postgres's escape_json does: the
// two-letter escapes for \b \f \n \r \t " \, \u00xx for other control
// characters, every other byte as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendUUID appends the 16 bytes of a uuid as a quoted string.
func appendUUID(b []byte, u []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&0xf])
	}
	return append(b, '"')
}

// pgEpoch is 2000-01-01 00:00:00 UTC in Unix seconds: a binary
// timestamptz counts microseconds from it.
const pgEpoch = 946684800

// appendTimestamptz appends a binary timestamptz (µs since 2000-01-01
// UTC) as to_json does in a session whose TimeZone is zone:
// "2024-05-01T10:00:00.5+00:00" (fraction without trailing zeros, the
// offset with seconds only when it has any, " BC" after the offset for
// years before 1), "infinity" and "-infinity" for the infinite values.
func appendTimestamptz(b []byte, us int64, zone *time.Location) []byte {
	switch us {
	case 1<<63 - 1:
		return append(b, `"infinity"`...)
	case -1 << 63:
		return append(b, `"-infinity"`...)
	}
	sec, frac := us/1e6, us%1e6
	if frac < 0 {
		sec, frac = sec-1, frac+1e6
	}
	t := time.Unix(pgEpoch+sec, 0).In(zone)
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	_, offset := t.Zone()
	bc := year <= 0
	if bc {
		year = 1 - year
	}
	b = append(b, '"')
	b = appendPadded(b, year, 4)
	b = append(b, '-')
	b = appendPadded(b, int(month), 2)
	b = append(b, '-')
	b = appendPadded(b, day, 2)
	b = append(b, 'T')
	b = appendPadded(b, hour, 2)
	b = append(b, ':')
	b = appendPadded(b, minute, 2)
	b = append(b, ':')
	b = appendPadded(b, second, 2)
	if frac != 0 {
		digits := 6
		for frac%10 == 0 {
			frac /= 10
			digits--
		}
		b = append(b, '.')
		b = appendPadded(b, int(frac), digits)
	}
	if offset < 0 {
		b = append(b, '-')
		offset = -offset
	} else {
		b = append(b, '+')
	}
	b = appendPadded(b, offset/3600, 2)
	b = append(b, ':')
	b = appendPadded(b, offset/60%60, 2)
	if offset%60 != 0 {
		b = append(b, ':')
		b = appendPadded(b, offset%60, 2)
	}
	if bc {
		b = append(b, " BC"...)
	}
	return append(b, '"')
}

// appendTimestamptzText converts the text form of a timestamptz in the ISO
// DateStyle ("2024-05-01 10:00:00.5+00", what a text-format result
// carries) to to_json's form ("2024-05-01T10:00:00.5+00:00").
func appendTimestamptzText(b []byte, v []byte) ([]byte, error) {
	s := string(v)
	if s == "infinity" || s == "-infinity" {
		return appendJSONString(b, s), nil
	}
	bc := len(s) > 3 && s[len(s)-3:] == " BC"
	if bc {
		s = s[:len(s)-3]
	}
	sp := -1
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			sp = i
			break
		}
	}
	sign := -1
	for i := len(s) - 1; i > sp && sp >= 0; i-- {
		if s[i] == '+' || s[i] == '-' {
			sign = i
			break
		}
	}
	if sp < 3 || sign < 0 || s[sp-3] != '-' {
		return nil, fmt.Errorf("%w: timestamptz %q is not in the ISO DateStyle", errUnrenderable, s)
	}
	b = append(b, '"')
	b = append(b, s[:sp]...)
	b = append(b, 'T')
	b = append(b, s[sp+1:]...)
	if len(s)-sign == 3 { // "+HH": to_json writes the minutes too
		b = append(b, ":00"...)
	}
	if bc {
		b = append(b, " BC"...)
	}
	return append(b, '"'), nil
}

// appendPadded appends n (≥ 0) in decimal, zero-padded to width digits.
func appendPadded(b []byte, n, width int) []byte {
	var buf [20]byte
	i := len(buf)
	for n >= 10 || width > 1 {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	i--
	buf[i] = byte('0' + n)
	return append(b, buf[i:]...)
}

// zoneEntry is a session TimeZone setting and its zone (nil: unknown to
// Go).
type zoneEntry struct {
	name string
	loc  *time.Location
}

// zones caches the time zones of session TimeZone settings; lastZone is
// the one found last, which every request of a server whose connections
// share a setting finds again with a string comparison.
var (
	zones    sync.Map // string → *zoneEntry
	lastZone atomic.Pointer[zoneEntry]
)

// sessionZone returns the TimeZone of the connection rows were read on
// (reported by the server at connect and whenever it changes), the zone
// timestamptz values are rendered in; UTC for a Querier without a
// connection. It returns nil for a name Go's time zone database does not
// know (a POSIX-style "<+03>-03", or any name in a binary without time
// zone data: import time/tzdata): appendValue then refuses the value and
// the repository renders through to_json, in Postgres's own offset.
func sessionZone(rows pgx.Rows) *time.Location {
	conn := rows.Conn()
	if conn == nil {
		return time.UTC
	}
	name := conn.PgConn().ParameterStatus("TimeZone")
	if e := lastZone.Load(); e != nil && e.name == name {
		return e.loc
	}
	if v, ok := zones.Load(name); ok {
		e := v.(*zoneEntry)
		lastZone.Store(e)
		return e.loc
	}
	loc, err := time.LoadLocation(name)
	switch {
	case name == "":
		loc = time.UTC
	case err != nil:
		loc = nil
	}
	e := &zoneEntry{name: name, loc: loc}
	zones.Store(name, e)
	lastZone.Store(e)
	return loc
}
