package dataapi

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestSelectShapes(t *testing.T) {
	b := setup(t, nil)
	cases := []struct{ query, want string }{
		{"select=id,name&id=eq.1", `[{"id":1,"name":"apple"}]`},
		{"select=key:id,label:name&id=eq.1", `[{"key":1,"label":"apple"}]`},
		{"select=id::text,score::int8&id=eq.2", `[{"id":"2","score":20}]`},
		{"select=id,data->>color,w:data->size->w&id=eq.1", `[{"id":1,"color":"red","w":3}]`},
		{"select=data->size&id=eq.2", `[{"size":{"w": 5}}]`},
		{"select=id,n:data->>n::int&id=eq.3", `[{"id":3,"n":3}]`},
		{"select=id,id&id=eq.4", `[{"id":4,"id":4}]`},
		{"select=%22name%22&id=eq.4", `[{"name":"date"}]`},
		{"select=*&id=eq.4", `[{"id":4,"name":"date","score":40,"tags":[],"data":null,"span":null,"doc":null,"body":null}]`},
	}
	for _, c := range cases {
		r := b.do("GET", "/things?"+c.query, "", "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s: %d %s, want %s", c.query, r.status, r.body, c.want)
		}
	}
}

func TestOrderAndPaging(t *testing.T) {
	b := setup(t, nil)
	check := func(query string, want []int, headers ...string) resp {
		t.Helper()
		r := b.do("GET", "/things?select=id&"+query, "", "", headers...)
		if r.status/100 != 2 {
			t.Fatalf("%s: %d %s", query, r.status, r.body)
		}
		if got := ids(t, r); !slices.Equal(got, want) {
			t.Errorf("%s: got %v want %v", query, got, want)
		}
		return r
	}
	check("order=score.desc", []int{3, 5, 4, 2, 1})           // nulls first with desc, as Postgres
	check("order=score.desc.nullslast", []int{5, 4, 2, 1, 3}) // explicit
	check("order=score.asc.nullsfirst", []int{3, 1, 2, 4, 5})
	check("order=data->>color.asc,id.desc", []int{5, 3, 1, 2, 4})
	check("order=id&limit=2", []int{1, 2})
	check("order=id&limit=2&offset=3", []int{4, 5})
	r := check("order=id", []int{2, 3}, "Range-Unit: items", "Range: 1-2")
	if cr := r.header.Get("Content-Range"); cr != "1-2/*" {
		t.Errorf("Content-Range %q", cr)
	}
	r = check("order=id&limit=2", []int{1, 2}, "Prefer: count=exact")
	if r.status != 206 || r.header.Get("Content-Range") != "0-1/5" || r.header.Get("Preference-Applied") != "count=exact" {
		t.Errorf("count=exact: %d %v", r.status, r.header)
	}
	r = check("order=id", []int{1, 2, 3, 4, 5}, "Prefer: count=exact")
	if r.status != 200 || r.header.Get("Content-Range") != "0-4/5" {
		t.Errorf("full count: %d %q", r.status, r.header.Get("Content-Range"))
	}
	r = check("order=id&id=gt.10", []int{}, "Prefer: count=exact")
	if r.header.Get("Content-Range") != "*/0" {
		t.Errorf("empty Content-Range %q", r.header.Get("Content-Range"))
	}
	r = check("order=id&limit=1", []int{1}, "Prefer: count=planned")
	if r.status != 206 || r.header.Get("Preference-Applied") != "count=planned" {
		t.Errorf("planned: %d %v", r.status, r.header)
	}
	r = check("order=id&limit=1", []int{1}, "Prefer: count=estimated")
	if r.status != 206 || r.header.Get("Content-Range") != "0-0/5" {
		t.Errorf("estimated (exact under max rows): %d %v", r.status, r.header)
	}
	r = b.do("GET", "/things?offset=10", "", "", "Prefer: count=exact")
	if r.status != 416 || r.json(t).(map[string]any)["code"] != "PGRST103" {
		t.Errorf("offset past the end: %d %s", r.status, r.body)
	}
	// HEAD: headers, no body.
	r = b.do("HEAD", "/things", "", "", "Prefer: count=exact")
	if r.status != 200 || r.body != "" || r.header.Get("Content-Range") != "0-4/5" {
		t.Errorf("HEAD: %d %q %v", r.status, r.body, r.header)
	}
}

func TestMaxRows(t *testing.T) {
	b := setup(t, &Config{MaxRows: 2})
	r := b.do("GET", "/things?select=id&order=id", "", "", "Prefer: count=exact")
	if got := ids(t, r); !slices.Equal(got, []int{1, 2}) || r.status != 206 {
		t.Errorf("max rows: %d %v", r.status, got)
	}
	r = b.do("GET", "/things?select=id&order=id&limit=100", "", "")
	if got := ids(t, r); len(got) != 2 {
		t.Errorf("limit above max rows: %v", got)
	}
	r = b.do("GET", "/things?select=id&limit=1", "", "", "Prefer: count=estimated")
	if r.header.Get("Content-Range") == "0-0/5" {
		t.Errorf("estimated above max rows should be the planner's: %v", r.header)
	}
}

func TestSingular(t *testing.T) {
	b := setup(t, nil)
	r := b.do("GET", "/things?select=id,name&id=eq.1", "", "", "Accept: application/vnd.pgrst.object+json")
	if r.status != 200 || r.body != `{"id":1,"name":"apple"}` {
		t.Errorf("one: %d %s", r.status, r.body)
	}
	for _, q := range []string{"id=eq.99", "id=lt.3"} {
		r = b.do("GET", "/things?"+q, "", "", "Accept: application/vnd.pgrst.object+json")
		m, _ := r.json(t).(map[string]any)
		if r.status != 406 || m["code"] != "PGRST116" || m["message"] == "" {
			t.Errorf("%s: %d %s", q, r.status, r.body)
		}
	}
}

func TestReadErrors(t *testing.T) {
	b := setup(t, nil)
	cases := []struct {
		method, path, user string
		status             int
		code               string
	}{
		{"GET", "/nope", "", 404, "PGRST205"},
		{"GET", "/thing", "", 404, "PGRST205"},
		{"GET", "/things?select=nope", "", 400, "42703"},
		{"GET", "/things?order=nope", "", 400, "42703"},
		{"GET", "/things?select=id,rel(id)", "", 400, "PGRST200"},
		{"GET", "/things", "invalid", 401, "PGRST301"},
		{"OPTIONS", "/things", "", 405, "PGRST117"},
		{"GET", "/a/b/c", "", 404, "PGRST125"},
		{"POST", "/things", "", 401, "42501"}, // anon without INSERT: 401, as PostgREST
		{"POST", "/things", alice, 403, "42501"},
	}
	for _, c := range cases {
		body := ""
		if c.method == "POST" {
			body = `{"id":9}`
		}
		r := b.do(c.method, c.path, c.user, body)
		m, _ := r.json(t).(map[string]any)
		if r.status != c.status || m["code"] != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.method, c.path, r.status, r.body, c.status, c.code)
		}
		for _, k := range []string{"code", "message", "details", "hint"} {
			if _, ok := m[k]; !ok {
				t.Errorf("%s %s: no %q in %s", c.method, c.path, k, r.body)
			}
		}
	}
	r := b.do("GET", "/things", "", "", "Accept-Profile: private")
	if r.status != 406 || r.json(t).(map[string]any)["code"] != "PGRST106" {
		t.Errorf("unexposed schema: %d %s", r.status, r.body)
	}
}

// TestPlannedCountWithPathsAndEmbeds: the planner's count runs with the
// parameters of JSON paths and embeds in the select list.
func TestPlannedCountWithPathsAndEmbeds(t *testing.T) {
	b := newBundle(t)
	b.exec(embedSQL)
	b.serve(nil)
	r := b.do("GET", "/books?select=title,a:authors!author_id(name)&limit=1", "", "", "Prefer: count=planned")
	if r.status != 206 && r.status != 200 {
		t.Errorf("planned with an embed: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/things?select=id,data->>color&data->>color=eq.red&limit=1", "", "", "Prefer: count=planned")
	if r.status/100 != 2 || !strings.Contains(r.header.Get("Content-Range"), "/") || strings.HasSuffix(r.header.Get("Content-Range"), "/*") {
		t.Errorf("planned with JSON paths: %d %s %v", r.status, r.body, r.header)
	}
}

func TestCSV(t *testing.T) {
	b := setup(t, nil)
	r := b.do("GET", "/things?select=id,name,score,tags,data->>color&id=in.(3,4)&order=id", "", "", "Accept: text/csv")
	want := "id,name,score,tags,color\n3,Cherry,,\"[\"\"red\"\"]\",red\n4,date,40,[],\n"
	if r.status != 200 || r.body != want || !strings.HasPrefix(r.header.Get("Content-Type"), "text/csv") {
		t.Errorf("csv: %d %q %s", r.status, r.body, r.header.Get("Content-Type"))
	}
	r = b.do("GET", "/things?id=eq.99", "", "", "Accept: text/csv")
	if r.status != 200 || r.body != "" {
		t.Errorf("empty csv: %d %q", r.status, r.body)
	}
}

func TestAggregates(t *testing.T) {
	b := setup(t, nil)
	r := b.do("GET", "/things?select=count()", "", "")
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "PGRST123" {
		t.Errorf("aggregates off: %d %s", r.status, r.body)
	}
	b = setup(t, &Config{Aggregates: true})
	cases := []struct{ query, want string }{
		{"select=count()", `[{"count":5}]`},
		{"select=total:score.sum(),score.max(),score.avg()::int", `[{"total":120,"max":50,"avg":30}]`},
		{"select=data->>color,count()&order=data->>color&data=not.is.null", `[{"color":"green","count":1}, ` + "\n" + ` {"color":"red","count":2}, ` + "\n" + ` {"color":"yellow","count":1}]`},
		{"select=score.min()&id=gt.1", `[{"min":20}]`},
	}
	for _, c := range cases {
		r := b.do("GET", "/things?"+c.query, "", "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s: %d %s, want %s", c.query, r.status, r.body, c.want)
		}
	}
	r = b.do("GET", "/things?select=sum()", "", "")
	if r.status != 400 {
		t.Errorf("sum without a column: %d %s", r.status, r.body)
	}
}

func TestReload(t *testing.T) {
	b := setup(t, nil)
	b.exec(`create table later (id int primary key); alter table later enable row level security;
	        grant select on later to anon; create policy r on later for select using (true); insert into later values (1)`)
	if r := b.do("GET", "/later", "", ""); r.status != 404 {
		t.Fatalf("before reload: %d %s", r.status, r.body)
	}
	if err := b.api.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r := b.do("GET", "/later", "", ""); r.status != 200 || r.body != `[{"id":1}]` {
		t.Fatalf("after reload: %d %s", r.status, r.body)
	}
	b.exec(`create table open_one (id int); grant select on open_one to anon`)
	if err := b.api.Reload(context.Background()); !errors.Is(err, ErrUnprotected) {
		t.Fatalf("reload with an unprotected table: %v", err)
	}
	if r := b.do("GET", "/open_one", "", ""); r.status != 404 {
		t.Errorf("the refused reload kept the old catalogue: %d %s", r.status, r.body)
	}
}
