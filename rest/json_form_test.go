package rest

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

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
  e mood, ea mood[], hs hstore, hsa hstore[], o oid, m2 int4[][], j json, jb jsonb,
  ts timestamp, m money, f8 float8, n numeric, ia int4[]
);
grant select, insert on jf to authenticated;
insert into jf values
 (1, row('Main St', 12, '{a,b}'), row('x', 1, null), row('y', 2, '{}'), array[row('z', 3, null)::addr, null],
  'meh', '{ok,NULL}', 'a=>1, b=>NULL', array['x=>1'::hstore], 1234, '{{1,2},{3,NULL}}', '{"a": [1]}', '"s"',
  '2024-05-01 10:00', 1.5, 2.25, 12.500, '{1,NULL}'),
 (2, null, row(null, null, null), null, null, null, null, null, null, null, null, null, 'null',
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
	res := b.resource("jf", noRLS())
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
	row["id"], row["hs"], row["hsa"] = 3, "a=>1", []string{"x=>1"}
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
	tvs := server(t, "tv", b.resource("tv", noRLS()))
	for _, c := range []struct {
		s          *httptest.Server
		path, body string
		want       int
	}{
		{s, "/api/jf", `{"id":10,"hs":{"a":"1"}}`, 400},
		{s, "/api/jf", `{"id":11,"hs":5}`, 400},
		{s, "/api/jf", `{"id":12,"hs":["a"]}`, 400},
		{s, "/api/jf", `{"id":13,"hs":null,"cpn":{"no":1}}`, 201},
		{s, "/api/jf", `{"id":14,"hsa":[{"a":"1"}],"cpn":{"no":1}}`, 400},
		{s, "/api/jf", `{"id":15,"hsa":["a=>1",null],"cpn":{"no":1}}`, 201},
		{tvs, "/api/tv", `{"id":1,"v":"a:1x"}`, 400},
		{tvs, "/api/tv", `{"id":2,"v":"a:1 b:2"}`, 201},
		{tvs, "/api/tv", `{"id":3,"v":"` + strings.Repeat("w", 3000) + `"}`, 400},
	} {
		if r := do(t, c.s, "POST", c.path, alice, c.body); r.status != c.want || (c.want == 400 && strings.Contains(r.body, "syntax")) {
			t.Errorf("POST %s %s: %s, want %d", c.path, c.body, r, c.want)
		}
	}

	// A syntax error inside a trigger is the server's, not the caller's.
	b.exec(`create function tv_trg() returns trigger language plpgsql as $$ begin execute 'selec 1'; return new; end $$;
create trigger tv_trg before insert on tv for each row execute function tv_trg();`)
	if r := do(t, tvs, "POST", "/api/tv", alice, `{"id":4,"v":"a"}`); r.status != 500 {
		t.Errorf("a trigger's syntax error: %s, want 500", r)
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

// TestLargeCompositesDescribedInBounds: a composite whose fields nest
// composites described every leaf, 4^k of them for k levels of four
// fields: nine levels took 30 s and 4.8 GB to build. A column's schema is
// now bounded, and a type first reached deep inside another column is still
// described in full for a column of its own, whatever the column order.
func TestLargeCompositesDescribedInBounds(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var ddl strings.Builder
	ddl.WriteString("create type b0 as (v int4);\n")
	for k := 1; k <= 9; k++ {
		fmt.Fprintf(&ddl, "create type b%d as (f0 b%d, f1 b%d, f2 b%d, f3 b%d);\n", k, k-1, k-1, k-1, k-1)
	}
	ddl.WriteString("create type ch0 as (v int4);\n")
	for k := 1; k <= 20; k++ {
		fmt.Fprintf(&ddl, "create type ch%d as (f ch%d);\n", k, k-1)
	}
	ddl.WriteString("create table big (id int8 primary key, a b9, c ch20, d ch4);\ngrant select on big to authenticated;")
	b.exec(ddl.String())
	start := time.Now()
	res := b.resource("big", noRLS())
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("building the resource took %v", d)
	}
	raw, _ := json.Marshal(res.Describe().Row)
	if len(raw) > 200_000 {
		t.Errorf("row schema of %d bytes", len(raw))
	}
	p := res.Describe().Row.Properties
	if a := p["a"]; !strings.Contains(strings.Join(a.Types, ","), "object") {
		t.Errorf("a huge composite is described as %+v, want an object", a)
	}
	// ch4, reached 16 levels inside c, described in full for d.
	s := p["d"]
	for i := 0; i < 4; i++ {
		if s = s.Properties["f"]; s == nil {
			t.Fatalf("d is cut short at level %d", i)
		}
	}
	if s.Properties["v"] == nil {
		t.Errorf("d's innermost field is not described: %+v", s)
	}
	if r := do(t, server(t, "big", res), "GET", "/api/big?order=a", alice, ""); r.status != 400 {
		t.Errorf("order by a huge composite: %s", r)
	}
}

// TestListValueErrorsAre400: a filter value Postgres cannot take for its
// column (a date past its range, a number past its type's) is the caller's
// mistake: 400, not the 422 a body's value gets.
func TestListValueErrorsAre400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table lv (id int8 primary key, d date, n int2, s text); grant select on lv to authenticated;
insert into lv values (1, '2024-01-01', 1, 'a')`)
	s := server(t, "lv", b.resource("lv", noRLS()))
	for _, q := range []string{"d=gt.5874898-01-01", "n=gt.99999"} {
		k, v, _ := strings.Cut(q, "=")
		if r := do(t, s, "GET", "/api/lv?"+k+"="+url.QueryEscape(v), alice, ""); r.status != 400 {
			t.Errorf("%s: %s, want 400", q, r)
		}
	}
}
