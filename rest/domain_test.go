package rest

import (
	"fmt"
	"strings"
	"testing"
)

// TestDomainColumnsActAsTheirBaseType: a column whose type is a domain is
// filtered, keyed and described as the domain's base type (through
// domains over domains and arrays of domains); a filter value outside the
// domain matches nothing.
func TestDomainColumnsActAsTheirBaseType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create domain flag as boolean;
create domain flag2 as flag;
create domain small as int4 check (value < 100);
create domain ident as uuid;
create domain tags as text[];
create domain spot as point;
create domain doc as json;
create table dom (
  id ident primary key, f flag2, n small, ns small[], tg tags, sp spot, dj doc
);
grant select on dom to authenticated;
insert into dom values
  ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', true, 1, '{1,2}', '{x}', '(1,2)', '{"a": 1}'),
  ('b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', false, 2, '{3}', '{}', null, '[1]'),
  ('c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', null, null, null, null, null, null);`)
	res := b.resource("dom", noRLS())
	s := server(t, "dom", res)

	want := map[string]string{"id": "uuid", "f": "bool", "n": "int4", "ns": "_int4", "tg": "_text", "sp": "point", "dj": "json"}
	for _, c := range res.Describe().Columns {
		if want[c.Name] != c.TypeName {
			t.Errorf("column %s: TypeName %q, want %q (its base type)", c.Name, c.TypeName, want[c.Name])
		}
	}

	for q, ids := range map[string]string{
		"f=is.true":     "a0",
		"f=is.false":    "b0",
		"f=is.unknown":  "c0",
		"f=not.is.true": "b0,c0",
		"n=eq.2":        "b0",
		"id=in.(b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11)": "b0",
	} {
		r := do(t, s, "GET", "/api/dom?order=id&"+q, alice, "")
		if r.status != 200 {
			t.Errorf("%s: %s", q, r)
			continue
		}
		var got []string
		for _, part := range strings.Split(r.body, `"id":"`)[1:] {
			got = append(got, part[:2])
		}
		if strings.Join(got, ",") != ids {
			t.Errorf("%s: rows %v, want %s", q, got, ids)
		}
	}

	// Refused as the base type refuses them: 400 naming the rule, not a
	// database error.
	for q, msg := range map[string]string{
		"n=is.true":   "boolean columns only",
		"ns=in.(1)":   "array columns",
		"sp=eq.(1,2)": "supports only is",
		"sp=gt.(1,2)": "supports only is",
		"order=sp":    "",
	} {
		r := do(t, s, "GET", "/api/dom?"+q, alice, "")
		if r.status != 400 || !strings.Contains(r.body, msg) {
			t.Errorf("%s: %s, want 400 with %q", q, r, msg)
		}
	}
	// A filter value outside the domain matches nothing.
	if r := do(t, s, "GET", "/api/dom?n=eq.500", alice, ""); r.status != 200 || !strings.Contains(r.body, `"items":[]`) {
		t.Errorf("n=eq.500 (outside the domain): %s, want no rows", r)
	}
	// The key is read as a uuid.
	if r := do(t, s, "GET", "/api/dom/not-a-uuid", alice, ""); r.status != 400 || !strings.Contains(r.body, "UUID") {
		t.Errorf("GET by a key that is no uuid: %s, want 400 asking for a UUID", r)
	}
	if r := do(t, s, "GET", "/api/dom/a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", alice, ""); r.status != 200 || !strings.Contains(r.body, `"f":true`) {
		t.Errorf("GET by key: %s", r)
	}
}

// TestFieldErrorsAreCapped: a body naming thousands of unknown keys gets a
// problem listing the first maxFieldErrors, and saying how many there were.
func TestFieldErrorsAreCapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", nil))
	var body strings.Builder
	body.WriteString(`{"title":"x"`)
	for i := range 5000 {
		fmt.Fprintf(&body, `,"k%d":0`, i)
	}
	body.WriteString("}")
	r := do(t, s, "POST", "/api/todos", alice, body.String())
	if r.status != 400 || !strings.Contains(r.body, "5000 errors; the first 20 are listed") {
		t.Fatalf("%d %.300s", r.status, r.body)
	}
	if n := strings.Count(r.body, `"is not a column"`); n != 20 || len(r.body) > 4096 {
		t.Errorf("%d field errors in %d bytes", n, len(r.body))
	}
}

// TestTypesNamedLikeBuiltIns: a type of the user's named json, uuid or
// int4 is not taken for the built-in: filters on it answer as its own
// type does (an enum here), never 500.
func TestTypesNamedLikeBuiltIns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create type public.json as enum ('a', 'b');
create type public.uuid as enum ('x', 'y');
create table lk (id public.uuid primary key, j public.json, js public.json[]);
grant select on lk to authenticated;
insert into lk values ('x', 'a', '{a}'), ('y', 'b', '{b,a}');`)
	res := b.resource("lk", noRLS())
	s := server(t, "lk", res)
	for _, c := range res.Describe().Columns {
		if !strings.HasPrefix(strings.TrimPrefix(c.TypeName, "_"), "public.") {
			t.Errorf("column %s: TypeName %q, want it schema-qualified", c.Name, c.TypeName)
		}
	}
	for q, want := range map[string]string{
		"j=eq.a": `"id":"x"`, "order=j.desc&limit=1": `"id":"y"`, "j=is.null": `"items":[]`, "j=like.a*": `"id":"x"`, "js=eq.%7Bb,a%7D": `"id":"y"`,
	} {
		if r := do(t, s, "GET", "/api/lk?"+q, alice, ""); r.status != 200 || !strings.Contains(r.body, want) {
			t.Errorf("%s: %s, want %s", q, r, want)
		}
	}
	if r := do(t, s, "GET", "/api/lk/x", alice, ""); r.status != 200 {
		t.Errorf("GET by an enum key x: %s (read as a uuid?)", r)
	}
}

// TestDomainOverEnum: a domain over an enum, for which Postgres has no
// operators, is filtered, ordered, paged and keyed as its enum; an array
// of it answers 400 to comparisons instead of 500.
func TestDomainOverEnum(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create type mood as enum ('sad', 'ok', 'happy');
create domain dmood as mood;
create table dk (k dmood primary key, d dmood, ds dmood[]);
grant select, insert, update, delete on dk to authenticated;
insert into dk values ('sad', 'ok', '{ok}'), ('ok', 'happy', '{sad,ok}'), ('happy', 'sad', '{}');`)
	s := server(t, "dk", b.resource("dk", noRLS()))
	for q, want := range map[string]string{
		"d=eq.ok":              `"k":"sad"`,
		"d=gt.ok&order=d":      `"k":"ok"`,
		"d=in.(ok,sad)":        `"k":"happy"`,
		"order=d.desc&limit=1": `"k":"ok"`,
	} {
		if r := do(t, s, "GET", "/api/dk?"+q, alice, ""); r.status != 200 || !strings.Contains(r.body, want) {
			t.Errorf("%s: %s, want %s", q, r, want)
		}
	}
	// Paging by the domain column.
	r := do(t, s, "GET", "/api/dk?order=d&limit=1", alice, "")
	cur := decode(t, r.body)["next_cursor"]
	if c, ok := cur.(string); !ok || c == "" {
		t.Fatalf("no cursor: %s", r)
	} else if r := do(t, s, "GET", "/api/dk?order=d&limit=1&cursor="+c, alice, ""); r.status != 200 || !strings.Contains(r.body, `"d":"ok"`) {
		t.Errorf("second page: %s", r)
	}
	// The domain as the key.
	if r := do(t, s, "GET", "/api/dk/ok", alice, ""); r.status != 200 || !strings.Contains(r.body, `"d":"happy"`) {
		t.Errorf("GET by key: %s", r)
	}
	if r := do(t, s, "PATCH", "/api/dk/ok", alice, `{"d":"sad"}`); r.status != 200 {
		t.Errorf("PATCH by key: %s", r)
	}
	if r := do(t, s, "DELETE", "/api/dk/happy", alice, ""); r.status != 204 {
		t.Errorf("DELETE by key: %s", r)
	}
	if r := do(t, s, "GET", "/api/dk/nope", alice, ""); r.status >= 500 {
		t.Errorf("GET by a key outside the enum: %s", r)
	}
	for _, q := range []string{"ds=eq.%7Bok%7D", "order=ds"} {
		if r := do(t, s, "GET", "/api/dk?"+q, alice, ""); r.status != 400 {
			t.Errorf("%s: %s, want 400", q, r)
		}
	}
}
