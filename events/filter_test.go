package events

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestFilterComparesByType: filters compare as the column's type does in
// a list (Postgres), not as float64 or text: integers past 2^53 stay
// exact, times compare as instants across zones, uuids and booleans in
// any spelling, text as text.
func TestFilterComparesByType(t *testing.T) {
	t.Parallel()
	long := "1" + strings.Repeat("0", 300) // float8 1e300 as to_jsonb prints it
	for _, c := range []struct {
		typ, filter, value string
		want               bool
		unknown            bool // SQL's answer is NULL: neither the filter nor not. matches
	}{
		{typ: "int8", filter: "eq.9007199254740993", value: `9007199254740992`, want: false},
		{typ: "int8", filter: "eq.9007199254740993", value: `9007199254740993`, want: true},
		{typ: "int8", filter: "gt.9007199254740992", value: `9007199254740993`, want: true},
		{typ: "int8", filter: "in.(1,9007199254740993)", value: `9007199254740993`, want: true},
		{typ: "numeric", filter: "eq.1.10", value: `1.1`, want: true},
		{typ: "numeric", filter: "lt.1e2", value: `99.999`, want: true},
		{typ: "numeric", filter: "gt.0.1", value: `0.10000000000000000001`, want: true},
		{typ: "numeric", filter: "gt.5", value: long + ".5", want: true},
		{typ: "float8", filter: "gt.1", value: `"Infinity"`, want: true},
		{typ: "float8", filter: "eq.NaN", value: `"NaN"`, want: true},
		{typ: "float8", filter: "gt.5", value: long, want: true},
		{typ: "float8", filter: "eq.0.10000000000000001", value: `0.1`, want: true},
		{typ: "float4", filter: "eq.0.100000001", value: `0.1`, want: true},
		{typ: "timestamptz", filter: "gte.2026-11-24T20:00:00+01:00", value: `"2026-11-24T19:52:00.123456+00:00"`, want: true},
		{typ: "timestamptz", filter: "lt.2026-11-24 20:00:00+01", value: `"2026-11-24T19:52:00+00:00"`, want: false},
		{typ: "timestamptz", filter: "eq.2026-11-24T19:00:00Z", value: `"2026-11-24T20:00:00+01:00"`, want: true},
		{typ: "timestamptz", filter: "eq.2026-11-24T20:30:00+0130", value: `"2026-11-24T19:00:00+00:00"`, want: true},
		{typ: "timestamptz", filter: "neq.2024-01-01T00:00:00Z", value: `"infinity"`, want: true},
		{typ: "timestamptz", filter: "lt.infinity", value: `"2024-01-01T00:00:00+00:00"`, want: true},
		{typ: "timestamp", filter: "gt.2026-11-24 19:00", value: `"2026-11-24T19:30:00"`, want: true},
		{typ: "date", filter: "eq.2026-11-24", value: `"2026-11-24"`, want: true},
		{typ: "date", filter: "eq.2026-11-24T12:00", value: `"2026-11-24"`, want: true},
		{typ: "date", filter: "lt.2026-11-24", value: `"2026-11-23"`, want: true},
		{typ: "uuid", filter: "eq.A0000000-0000-4000-8000-00000000000A", value: `"a0000000-0000-4000-8000-00000000000a"`, want: true},
		{typ: "uuid", filter: "eq.{a00000000000400080000000000000ab}", value: `"a0000000-0000-4000-8000-0000000000ab"`, want: true},
		{typ: "bool", filter: "eq.t", value: `true`, want: true},
		{typ: "bool", filter: "neq.yes", value: `false`, want: true},
		{typ: "text", filter: "gt.9", value: `"10"`, want: false}, // text order, as Postgres compares text
		{typ: "text", filter: "eq.1.0", value: `"1"`, want: false},
		{typ: "my_int_domain", filter: "gt.9", value: `10`, want: true}, // a type it does not know: numbers as numbers
		{typ: "my_enum", filter: "eq.open", value: `"open"`, want: true},
		{typ: "my_enum", filter: "in.(open,closed)", value: `"closed"`, want: true},
		{typ: "bpchar", filter: "eq.ab", value: `"ab   "`, want: true},
		{typ: "citext", filter: "eq.ABC", value: `"abc"`, want: true},
		{typ: "numeric", filter: "eq.Infinity", value: "1" + strings.Repeat("0", 400), want: false},
		{typ: "numeric", filter: "lt.Infinity", value: "1" + strings.Repeat("0", 400), want: true},
		{typ: "numeric", filter: "gt.-Infinity", value: `-5`, want: true},
		{typ: "numeric", filter: "lt.NaN", value: `5`, want: true},
		{typ: "oid", filter: "eq.-1", value: `4294967295`, want: true},
		{typ: "timestamptz", filter: "eq.2026-11-24T23:59:32.3132434Z", value: `"2026-11-24T23:59:32.313243+00:00"`, want: true}, // Postgres keeps microseconds
		{typ: "timestamptz", filter: "lt.2026-11-24T23:59:32.3132434Z", value: `"2026-11-24T23:59:32.313243+00:00"`, want: false},
		{typ: "timestamptz", filter: "eq.2026-11-24T23:59:32.3132435Z", value: `"2026-11-24T23:59:32.313244+00:00"`, want: true}, // half to even
		{typ: "timestamptz", filter: "eq.2026-11-24T23:59:32.3132445Z", value: `"2026-11-24T23:59:32.313244+00:00"`, want: true},
		{typ: "timestamptz", filter: "eq.2026-11-24T23:59:32.5170185Z", value: `"2026-11-24T23:59:32.517019+00:00"`, want: true}, // rint of a float64, as Postgres
		{typ: "timestamptz", filter: "eq.2026-11-24T23:59:32.0314885Z", value: `"2026-11-24T23:59:32.031489+00:00"`, want: true},
		{typ: "timestamp", filter: "eq.2026-11-24T23:59:32.12345650001", value: `"2026-11-24T23:59:32.123457"`, want: true},
		{typ: "bool", filter: "is.UNKNOWN", value: `null`, want: true},
		{typ: "bool", filter: "is.True", value: `true`, want: true},
		{typ: "text", filter: `in.("qq1,qq2",x)`, value: `"qq1,qq2"`, want: true}, // quoted as a list reads it
		{typ: "text", filter: `in.("qq1,qq2",x)`, value: `"qq1"`, want: false},
		{typ: "int4", filter: "eq.1", value: `null`, unknown: true},
		{typ: "int4", filter: "is.null", value: `null`, want: true},
	} {
		f, err := parseFilter("c", c.typ, c.filter)
		if err != nil {
			t.Fatalf("%s %s: %v", c.typ, c.filter, err)
		}
		row := map[string]json.RawMessage{"c": json.RawMessage(c.value)}
		if got := matchAll([]filter{f}, row); got != (c.want && !c.unknown) {
			t.Errorf("%s %s on %.40s: %v, want %v", c.typ, c.filter, c.value, got, c.want)
		}
		f.not = true
		if got := matchAll([]filter{f}, row); got != (!c.want && !c.unknown) {
			t.Errorf("not.%s on %.40s: %v", c.filter, c.value, got)
		}
	}
	for _, c := range []struct{ typ, filter string }{
		{"int8", "eq.abc"}, {"int8", "gt.1e999999"}, {"numeric", "in.(1,two)"},
		{"int8", "eq.0x1p9999999"}, {"numeric", "eq.0x1p9999999"}, {"float8", "eq.0x1p99"},
		{"int8", "eq.1/2"}, {"int8", "eq.0b101"}, {"int8", "eq.1.5"}, {"int8", "eq.1e2"}, {"int8", "eq.NaN"},
		{"numeric", "eq.1e401"}, {"float8", "eq.1e400"}, {"float4", "eq.1e39"},
		{"timestamptz", "gt.notadate"}, {"date", "eq.24/11/2026"},
		{"text", "is.true"}, {"int8", "is.false"}, {"uuid", "is.unknown"}, {"bool", "is.maybe"},
		{"uuid", "eq.not-a-uuid"}, {"bool", "eq.maybe"},
	} {
		if _, err := parseFilter("c", c.typ, c.filter); err == nil {
			t.Errorf("%s %s: accepted", c.typ, c.filter)
		}
	}
}

// TestFilterTimeZone: a timestamptz filter value without a zone is read in
// the database session's TimeZone, as a list reads it.
func TestFilterTimeZone(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin") // time/tzdata: found on any machine
	if err != nil {
		t.Fatal(err)
	}
	row := map[string]json.RawMessage{"c": json.RawMessage(`"2024-01-01T12:00:00+01:00"`)}
	for _, c := range []struct {
		filter string
		want   bool
	}{{"eq.2024-01-01T12:00", true}, {"eq.2024-01-01T12:00Z", false}, {"eq.2024-01-01T11:00:00+00:00", true}} {
		f, err := parseFilter("c", "timestamptz", c.filter)
		if err != nil {
			t.Fatal(err)
		}
		if !f.zoneless() != strings.ContainsAny(c.filter[len("eq.2024-01-01T12:00"):], "Z+") {
			t.Errorf("%s: zoneless %v", c.filter, f.zoneless())
		}
		f.localize(berlin)
		if got := matchAll([]filter{f}, row); got != c.want {
			t.Errorf("%s in Europe/Berlin: %v", c.filter, got)
		}
	}
	// Read in another zone, a time keeps Postgres's microseconds too.
	f, err := parseFilter("c", "timestamptz", "eq.2024-01-01T11:00:00.0000015Z")
	if err != nil {
		t.Fatal(err)
	}
	f.localize(berlin)
	if !matchAll([]filter{f}, map[string]json.RawMessage{"c": json.RawMessage(`"2024-01-01T12:00:00.000002+01:00"`)}) {
		t.Error("microseconds lost when localized")
	}
}

// TestColumnTypesFollowDomainsAndEnums: filters on a domain compare as its
// base type (a domain over text holding digits stays text; over int8, a
// number), and on an enum by the labels' declared order.
func TestColumnTypesFollowDomainsAndEnums(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `create domain zip as text;
create domain qty as int8 check (value >= 0);
create type stage as enum ('todo', 'doing', 'done');
create table typed (id int primary key, z zip, q qty, s stage, note text)`); err != nil {
		t.Fatal(err)
	}
	types, err := columnTypes(ctx, pool, `public.typed`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"id": "int4", "z": "text", "q": "int8", "s": "public.stage", "note": "text"}
	for col, name := range want {
		if types[col].name != name {
			t.Errorf("%s: %q, want %q", col, types[col].name, name)
		}
	}
	if got := strings.Join(types["s"].labels, ","); got != "todo,doing,done" {
		t.Errorf("enum labels %q", got)
	}
	for _, c := range []struct {
		col, filter, value string
		want               bool
	}{
		{"z", "eq.01234", `"1234"`, false}, // text: no numeric equality
		{"q", "gt.9", `10`, true},
		{"s", "gt.todo", `"doing"`, true}, // declared order, not text order
		{"s", "lt.doing", `"done"`, false},
		{"s", "in.(todo,done)", `"done"`, true},
	} {
		f, err := parseTyped(c.col, types[c.col], c.filter)
		if err != nil {
			t.Fatalf("%s %s: %v", c.col, c.filter, err)
		}
		if got := matchAll([]filter{f}, map[string]json.RawMessage{c.col: json.RawMessage(c.value)}); got != c.want {
			t.Errorf("%s=%s on %s: %v", c.col, c.filter, c.value, got)
		}
	}
	if _, err := parseTyped("s", types["s"], "eq.nope"); err == nil {
		t.Error("a label the enum does not have was accepted")
	}
}

// TestFilterRefusesWhatTheColumnCannotHold: a filter value Postgres would
// not cast to the column's type (an integer past its type's range, a NUL
// byte or invalid UTF-8, year 0, a zone offset past ±15:59) is refused, as
// a list refuses it (the cast fails there). Before, streams took them. The
// edges Postgres takes are taken. Each case is checked against Postgres.
func TestFilterRefusesWhatTheColumnCannotHold(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	ctx := context.Background()
	for _, c := range []struct {
		typ, value string
		ok         bool
	}{
		{"int8", "99999999999999999999999999", false},
		{"int8", "-9223372036854775809", false},
		{"int8", "-9223372036854775808", true},
		{"int8", "9223372036854775807", true},
		{"int4", "2147483648", false},
		{"int4", "-2147483648", true},
		{"int2", "32768", false},
		{"int2", "-32768", true},
		{"oid", "-1", true}, // Postgres reads it as 4294967295
		{"oid", "-2147483649", false},
		{"oid", "4294967295", true},
		{"text", "a\x00b", false},
		{"text", "\xff\xfe", false},
		{"text", "é ok", true},
		{"timestamptz", "0000-01-01T00:00:00Z", false},
		{"timestamptz", "0001-01-01T00:00:00Z", true},
		{"timestamptz", "2026-11-24T20:00:00+23:59", false},
		{"timestamptz", "2026-11-24T20:00:00-16:00", false},
		{"timestamptz", "2026-11-24T20:00:00+15:59", true},
		{"date", "0000-01-01", false},
		{"timestamp", "0000-01-01T00:00:00", false},
		{"timestamp", "2026-11-24T20:00:00+23:59", false},
		{"date", "2026-11-24T20:00:00+23:59", false},
		{"date", "2026-11-24T20:00:00+15:59", true},
		{"timestamptz", "2026-11-24T20:00:00+00:60", false},
		{"timestamptz", "2026-11-24T20:00:00+0060", false},
		{"timestamptz", "2026-11-24T20:00:00+0059", true},
		{"uuid", "{a0000000-0000-4000-8000-00000000000a", false},
		{"uuid", "a0000000-0000-4000-8000-00000000000a}", false},
		{"uuid", "a0-000000-0000-4000-8000-00000000000a", false},
		{"uuid", "a000-0000-0000-4000-8000-0000-0000-000a", true},
		{"uuid", "{A00000000000400080000000000000AB}", true},
		{"uuid", "a0000000-0000-4000-8000-00000000000a-", false},
		{"bool", "\u00a0true", false},
		{"bool", "\u3000yes", false},
		{"bool", " \tTr\n", true},
		{"bool", "ye", true},
		{"bool", "of", true},
		{"bool", "o", false},
		{"bool", "truex", false},
		{"float8", "1e-400", false},
		{"float8", "2e-324", false},
		{"float8", "5e-324", true},
		{"float4", "1e-46", false},
		{"float4", "0.0", true},
		{"int8", " 1\t", true},
		{"numeric", "\n1.5 ", true},
		{"float8", " 1e3 ", true},
		{"timestamptz", " 2026-11-24t23:55:19z ", true},
		{"timestamptz", "2026-11-24T23:55:19,5Z", false},
		{"timestamptz", "+infinity", false},
		{"date", "+infinity", false},
		{"timestamptz", "infinity", true},
	} {
		_, err := parseFilter("c", c.typ, "eq."+c.value)
		if (err == nil) != c.ok {
			t.Errorf("%s %q: accepted %v, want %v (%v)", c.typ, c.value, err == nil, c.ok, err)
		}
		// Postgres agrees (the text case with a NUL cannot even be sent).
		if strings.IndexByte(c.value, 0) < 0 {
			var s string
			pgErr := pool.QueryRow(ctx, "select ($1::text)::"+c.typ+"::text", c.value).Scan(&s)
			if (pgErr == nil) != c.ok {
				t.Errorf("Postgres casts %s %q: %v, want ok %v", c.typ, c.value, pgErr, c.ok)
			}
		}
	}
}
