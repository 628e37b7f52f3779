package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
)

type serverLike = *httptest.Server

type pageResp struct {
	Items      []map[string]any `json:"items"`
	NextCursor *string          `json:"next_cursor"`
	Count      *int64           `json:"count"`
}

func getPage(t testing.TB, s serverLike, path, who string) pageResp {
	t.Helper()
	r := do(t, s, "GET", path, who, "")
	if r.status != 200 {
		t.Fatalf("GET %s: %s", path, r)
	}
	var p pageResp
	dec := json.NewDecoder(strings.NewReader(r.body))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("page %s: %v", r.body, err)
	}
	return p
}

func ids(p pageResp) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, fmt.Sprint(it["id"]))
	}
	return out
}

func TestListFiltersOrderLimitCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// 1..20: grp = id % 3, score NULL for multiples of 5, name item-NN;
	// group 13 rows hidden by RLS.
	b.exec(`insert into items (id, grp, score, name)
	        select i, i % 3, case when i % 5 = 0 then null else i * 10 end, format('item-%s', lpad(i::text, 2, '0'))
	        from generate_series(1, 20) i`)
	b.exec(`insert into items (id, grp, score, name) values (21, 13, 1, 'hidden')`)
	s := server(t, "items", b.resource("items", &Config{MaxLimit: 100}))
	cases := []struct {
		q    string
		want string // ids, comma separated
	}{
		{"", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20"},
		{"grp=eq.0", "3,6,9,12,15,18"},
		{"grp=neq.0&id=lte.7", "1,2,4,5,7"},
		{"id=gt.17", "18,19,20"},
		{"id=gte.19", "19,20"},
		{"id=lt.3", "1,2"},
		{"id=in.(2,4,21)", "2,4"},
		{"id=not.in.(1,2,3)&id=lt.6", "4,5"},
		{"score=is.null", "5,10,15,20"},
		{"score=not.is.null&id=lt.5", "1,2,3,4"},
		{"name=like.item-1*", "10,11,12,13,14,15,16,17,18,19"},
		{"name=ilike.ITEM-0*&id=gt.7", "8,9"},
		{"name=not.like.item-1*&id=gt.8", "9,20"},
		{"order=id.desc&limit=3", "20,19,18"},
		{"order=score.desc&limit=6", "20,15,10,5,19,18"},       // NULLs first for desc; the key breaks ties in the same direction
		{"order=score.desc.nullslast&limit=3", "19,18,17"},     //
		{"order=score.asc.nullsfirst&limit=5", "5,10,15,20,1"}, //
		{"order=grp.desc,id.asc&limit=4", "2,5,8,11"},          // ties broken by id
		{"order=grp,score.desc&grp=eq.1", "10,19,16,13,7,4,1"}, // 10 has NULL score
		{"id=eq.21", ""},                                       // hidden by RLS
		{"name=eq.it's&id=lt.3", ""},                           // quotes are values
	}
	for _, c := range cases {
		t.Run(c.q, func(t *testing.T) {
			p := getPage(t, s, "/api/items?"+c.q, alice)
			if got := strings.Join(ids(p), ","); got != c.want {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}

	// count=exact counts every row matching the filters, not the page.
	p := getPage(t, s, "/api/items?grp=eq.1&limit=2&count=exact", alice)
	if p.Count == nil || *p.Count != 7 || len(p.Items) != 2 || p.NextCursor == nil {
		t.Errorf("count: %+v", p)
	}
	p = getPage(t, s, "/api/items?limit=2", alice)
	if p.Count != nil {
		t.Errorf("count without count=exact: %v", *p.Count)
	}
	// Exactly limit rows left: no next cursor.
	p = getPage(t, s, "/api/items?id=gt.18&limit=2", alice)
	if p.NextCursor != nil || len(p.Items) != 2 {
		t.Errorf("last page: %+v", p)
	}
	// Errors name the parameter.
	for q, param := range map[string]string{
		"nope=eq.1": "nope", "id=foo.1": "id", "order=nope": "order", "limit=101": "limit", "cursor=x.y": "cursor",
	} {
		m := isProblem(t, do(t, s, "GET", "/api/items?"+q, alice, ""), 400, "bad_request")
		if !strings.Contains(fmt.Sprint(m["detail"]), `"`+param+`"`) {
			t.Errorf("%s: detail %v", q, m["detail"])
		}
	}
	// A bad value for the column type is a 400, not a 500.
	isProblem(t, do(t, s, "GET", "/api/items?id=eq.abc", alice, ""), 400, "bad_request")
}

// TestCursorWalk walks 10 000 rows in pages under several orders, with
// rows inserted mid-walk, and checks every original row comes exactly once.
func TestCursorWalk(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name)
	        select i, i % 7, case when i % 11 = 0 then null else (i * 7919) % 1000 end, md5(i::text)
	        from generate_series(1, 10000) i`)
	b.exec(`insert into items (id, grp, score, name) select i, 13, 1, 'hidden' from generate_series(20001, 20100) i`)
	s := server(t, "items", b.resource("items", &Config{}))
	orders := []string{"", "id.desc", "score.desc", "score.asc.nullsfirst", "grp,score.desc.nullslast", "name", "grp.desc,name.asc"}
	for oi, order := range orders {
		t.Run("order="+order, func(t *testing.T) {
			seen := map[string]int{}
			q := url.Values{"limit": {"333"}}
			if order != "" {
				q.Set("order", order)
			}
			pages := 0
			for {
				p := getPage(t, s, "/api/items?"+q.Encode(), alice)
				pages++
				for _, id := range ids(p) {
					seen[id]++
				}
				if pages == 3 {
					// Inserts while walking must not duplicate or skip original rows.
					b.exec(fmt.Sprintf(`insert into items (id, grp, score, name) values (%d, 1, 500, 'new'), (%d, 6, null, '0')`, 30000+oi*2, 30001+oi*2))
				}
				if p.NextCursor == nil {
					break
				}
				q.Set("cursor", *p.NextCursor)
				if pages > 100 {
					t.Fatal("cursor does not advance")
				}
			}
			for i := 1; i <= 10000; i++ {
				if n := seen[fmt.Sprint(i)]; n != 1 {
					t.Fatalf("row %d seen %d times (pages %d)", i, n, pages)
				}
			}
			for id, n := range seen {
				if n != 1 {
					t.Fatalf("row %s seen %d times", id, n)
				}
				if id > "20000" && id < "20101" && len(id) == 5 {
					t.Fatalf("hidden row %s listed", id)
				}
			}
		})
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), "select count(*) from items").Scan(&n); err != nil || n < 10100 {
		t.Fatal(n, err)
	}
	_ = sort.Strings
}

// TestHostileInputsAreInert sends SQL injection attempts in every place a
// client controls: column names, operators, values, order and cursor.
func TestHostileInputsAreInert(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name) select i, 1, i, 'n' || i from generate_series(1, 5) i`)
	res := b.resource("items", &Config{Operations: []Operation{OpList, OpGet}})
	s := server(t, "items", res)
	ts := server(t, "todos", b.resource("todos", nil))
	hostile := []struct {
		path   string
		status int
	}{
		{`/api/items?` + url.QueryEscape(`name";drop table items;--`) + `=eq.1`, 400},
		{`/api/items?` + url.QueryEscape(`id) or (1=1`) + `=eq.1`, 400},
		{`/api/items?name=` + url.QueryEscape(`eq;drop table items.1`), 400},
		{`/api/items?name=` + url.QueryEscape(`eq) or 1=1 --.x`), 400},
		{`/api/items?id=` + url.QueryEscape(`eq.1 or 1=1`), 400}, // not an integer: 400 from Postgres's input
		{`/api/items?name=` + url.QueryEscape(`eq.' or '1'='1`), 200},
		{`/api/items?name=` + url.QueryEscape(`eq.x'); drop table items; --`), 200},
		{`/api/items?name=` + url.QueryEscape(`in.(a,b') or true or ('c)`), 200},
		{`/api/items?name=` + url.QueryEscape(`like.%' or 1=1 --`), 200},
		{`/api/items?name=` + url.QueryEscape(`is.null; drop table items`), 400},
		{`/api/items?order=` + url.QueryEscape(`id;drop table items`), 400},
		{`/api/items?order=` + url.QueryEscape(`(select 1)`), 400},
		{`/api/items?order=` + url.QueryEscape(`id.desc,pg_sleep(1)`), 400},
		{`/api/items?order=` + url.QueryEscape(`id.desc;--`), 400},
		{`/api/items?limit=` + url.QueryEscape(`1;drop table items`), 400},
		{`/api/items?cursor=` + url.QueryEscape(`WyIxIG9yIDE9MSJd.AAAAAAAAAAAAAAAAAAAAAA`), 400},
		{`/api/items?cursor=` + url.QueryEscape(`'; drop table items; --`), 400},
		{`/api/items/` + url.PathEscape(`1 or 1=1`), 400},
		{`/api/items/` + url.PathEscape(`1;drop table items`), 400},
		{`/api/todos/` + url.PathEscape(`'; drop table todos; --`), 400},
		{`/api/todos?title=` + url.QueryEscape(`eq.'); delete from todos; --`), 200},
	}
	for _, h := range hostile {
		t.Run(h.path, func(t *testing.T) {
			srv := s
			if strings.HasPrefix(h.path, "/api/todos") {
				srv = ts
			}
			r := do(t, srv, "GET", h.path, alice, "")
			if r.status != h.status {
				t.Fatalf("status %d, want %d: %s", r.status, h.status, r.body)
			}
			if h.status == 200 && !strings.HasPrefix(r.body, `{"items":[]`) {
				t.Fatalf("hostile value matched rows: %s", r.body)
			}
			if h.status != 200 {
				isProblem(t, r, h.status, "")
			}
		})
	}
	// Hostile body keys and values.
	r := do(t, ts, "POST", "/api/todos", alice, `{"title\"); drop table todos; --":"x"}`)
	isProblem(t, r, 400, "bad_request")
	r = do(t, ts, "POST", "/api/todos", alice, `{"title":"'); drop table todos; --"}`)
	if r.status != 201 || !strings.Contains(r.body, `drop table todos`) {
		t.Fatalf("value stored verbatim: %s", r)
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), "select (select count(*) from items) + (select count(*) from todos)").Scan(&n); err != nil || n != 6 {
		t.Fatalf("tables changed: %d %v", n, err)
	}
}

// TestFilterTypes: json compares as jsonb, arrays take eq with a literal,
// types without a sort order answer 400 instead of a database error.
func TestFilterTypes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table shapes (id int primary key, doc json, pt point, tags text[]);
	        grant select on shapes to authenticated;
	        insert into shapes values (1, '{"a": 1}', '(1,2)', '{a,b}'), (2, '{"a": 2}', '(3,4)', '{c}'), (3, null, null, null)`)
	s := server(t, "shapes", b.resource("shapes", noRLS()))
	ok := map[string]string{
		`doc=eq.{"a":1}`:     "1",
		`doc=neq.{"a":1}`:    "2",
		`doc=is.null`:        "3",
		`doc=like.*2*`:       "2",
		`order=doc.desc`:     "3,2,1",
		`tags=eq.{a,b}`:      "1",
		`tags=is.null`:       "3",
		`pt=is.null`:         "3",
		`pt=like.(1*`:        "1",
		`order=tags&limit=1`: "1",
	}
	for q, want := range ok {
		p := getPage(t, s, "/api/shapes?"+strings.ReplaceAll(q, `"`, "%22"), alice)
		if got := strings.Join(ids(p), ","); got != want {
			t.Errorf("%s: got %s, want %s", q, got, want)
		}
	}
	for _, q := range []string{`pt=eq.(1,2)`, `order=pt`, `tags=in.(a)`, `pt=gt.(0,0)`, `doc=eq.notjson`} {
		isProblem(t, do(t, s, "GET", "/api/shapes?"+q, alice, ""), 400, "bad_request")
	}
	// A cursor over a json order column.
	p := getPage(t, s, "/api/shapes?order=doc&limit=1", alice)
	p = getPage(t, s, "/api/shapes?order=doc&limit=1&cursor="+*p.NextCursor, alice)
	if got := strings.Join(ids(p), ","); got != "2" {
		t.Errorf("json cursor: %s", got)
	}
}
