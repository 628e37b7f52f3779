package rest

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// jsonFormFixture holds a column of each type whose JSON form is not a
// plain string or number, with ordinary, NULL and awkward values.
const jsonFormFixture = `
create extension if not exists hstore;
create type addr as (street text, no int4, tags text[]);
create domain checked_addr as addr check ((value).no is null or (value).no > 0);
create type mood as enum ('ok', 'meh');
create table jf (
  id int8 primary key, cp addr, cpn addr not null, dcp checked_addr, cpa addr[],
  e mood, ea mood[], hs hstore, o oid, m2 int4[][], j json, jb jsonb,
  ts timestamp, m money, f8 float8, n numeric, ia int4[]
);
grant select, insert on jf to authenticated;
insert into jf values
 (1, row('Main St', 12, '{a,b}'), row('x', 1, null), row('y', 2, '{}'), array[row('z', 3, null)::addr, null],
  'meh', '{ok,NULL}', 'a=>1, b=>NULL', 1234, '{{1,2},{3,NULL}}', '{"a": [1]}', '"s"',
  '2024-05-01 10:00', 1.5, 2.25, 12.500, '{1,NULL}'),
 (2, null, row(null, null, null), null, null, null, null, null, null, null, null, 'null',
  null, null, null, null, null);`

// TestRowsMatchTheirSchema: every row the resource serves validates
// against the row schema it describes (the OpenAPI row and MCP output
// schemas are built from it): composites are objects of their fields,
// enums name their labels, oid is a string (to_json writes one), an
// int[][] column holds arrays of arrays, hstore is whatever its cast to
// json writes. They were all described as strings or integers, so a Go
// client generated from the document failed to decode whole rows.
func TestRowsMatchTheirSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(jsonFormFixture)
	res := b.resource("jf", nil)
	d := res.Describe()
	rs, err := d.Row.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := server(t, "jf", res)
	for _, id := range []string{"1", "2"} {
		r := do(t, s, "GET", "/api/jf/"+id, alice, "")
		if r.status != 200 {
			t.Fatalf("GET %s: %s", id, r)
		}
		var row map[string]any
		if err := json.Unmarshal([]byte(r.body), &row); err != nil {
			t.Fatal(err)
		}
		if err := rs.Validate(row); err != nil {
			t.Errorf("row %s does not match its schema: %v\n%s", id, err, r.body)
		}
	}

	prop := func(name string) *jsonschema.Schema { return d.Row.Properties[name] }
	if p := prop("cp"); !strings.Contains(strings.Join(p.Types, ","), "object") || p.Properties["no"] == nil ||
		p.Properties["tags"] == nil || len(p.Required) != 3 {
		t.Errorf("composite: %+v", p)
	}
	if p := prop("cpn"); p.Type != "object" {
		t.Errorf("NOT NULL composite: %+v", p)
	}
	if p := prop("e"); len(p.Enum) != 3 || p.Enum[0] != "ok" || p.Enum[2] != nil {
		t.Errorf("nullable enum: %+v", p.Enum)
	}
	if p := prop("o"); !strings.Contains(strings.Join(p.Types, ","), "string") {
		t.Errorf("oid: %+v", p)
	}
	if p := prop("m2"); p.Items == nil || p.Items.Type != "array" {
		t.Errorf("int4[][]: %+v", p.Items)
	}
	if p := prop("hs"); p.Type != "" || len(p.Types) != 0 {
		t.Errorf("hstore in rows: %+v, want any JSON value", p)
	}
	in, _ := d.Operation(OpCreate)
	if p := in.Input.Properties["hs"]; !strings.Contains(strings.Join(p.Types, ","), "string") {
		t.Errorf("hstore in bodies: %+v, want its text form", p)
	}
	// An empty schema marshals as the boolean true, which MCP clients
	// refuse as a property schema.
	raw, _ := json.Marshal(d.Row)
	var props struct{ Properties map[string]json.RawMessage }
	_ = json.Unmarshal(raw, &props)
	for name, p := range props.Properties {
		if !strings.HasPrefix(string(p), "{") {
			t.Errorf("property %s is described as %s, not an object", name, p)
		}
	}

	// A row as the resource serves it goes back in (hstore aside: its
	// text form goes in).
	r := do(t, s, "GET", "/api/jf/1", alice, "")
	var row map[string]any
	_ = json.Unmarshal([]byte(r.body), &row)
	row["id"], row["hs"] = 3, "a=>1"
	body, _ := json.Marshal(row)
	if r := do(t, s, "POST", "/api/jf", alice, string(body)); r.status != 201 {
		t.Errorf("a served row posted back: %s", r)
	}

	for _, c := range d.Columns {
		want := map[string]bool{"cp": false, "cpn": false, "dcp": false, "cpa": false, "hs": false, "e": true, "ea": true, "id": true}
		if w, ok := want[c.Name]; ok && c.Sortable != w {
			t.Errorf("column %s Sortable %v, want %v", c.Name, c.Sortable, w)
		}
	}

	// hstore takes its text form only: an object (as rows carry it) was
	// handed to its parser and answered 500. A bad tsvector text is the
	// caller's mistake too (Postgres reports it as a syntax error).
	b.exec(`create table tv (id int8 primary key, v tsvector); grant select, insert on tv to authenticated`)
	tvs := server(t, "tv", b.resource("tv", nil))
	for _, c := range []struct {
		s          *httptest.Server
		path, body string
		want       int
	}{
		{s, "/api/jf", `{"id":10,"hs":{"a":"1"}}`, 400},
		{s, "/api/jf", `{"id":11,"hs":5}`, 400},
		{s, "/api/jf", `{"id":12,"hs":["a"]}`, 400},
		{s, "/api/jf", `{"id":13,"hs":null,"cpn":{"no":1}}`, 201},
		{tvs, "/api/tv", `{"id":1,"v":"a:1x"}`, 400},
		{tvs, "/api/tv", `{"id":2,"v":"a:1 b:2"}`, 201},
	} {
		if r := do(t, c.s, "POST", c.path, alice, c.body); r.status != c.want || (c.want == 400 && strings.Contains(r.body, "syntax")) {
			t.Errorf("POST %s %s: %s, want %d", c.path, c.body, r, c.want)
		}
	}

	// Composites are filtered, never ordered; hstore's btree class is
	// spelled #<#, so it takes no comparison either.
	for q, want := range map[string]int{
		`cp=eq.("Main St",12,"{a,b}")`: 200, "order=cp": 400, "order=cpa.desc": 400,
		"hs=gt.a=>1": 400, "order=hs": 400, "hs=is.null": 200,
	} {
		k, v, _ := strings.Cut(q, "=")
		if r := do(t, s, "GET", "/api/jf?"+k+"="+url.QueryEscape(v), alice, ""); r.status != want {
			t.Errorf("%s: %s, want %d", q, r, want)
		}
	}
}
