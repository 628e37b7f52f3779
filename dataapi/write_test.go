package dataapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

func (b *bundle) count(sql string) int {
	b.t.Helper()
	var n int
	if err := b.pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		b.t.Fatal(err)
	}
	return n
}

func TestInsert(t *testing.T) {
	b := setup(t, nil)
	// Default return=minimal: 201 without a body.
	r := b.do("POST", "/todos", alice, `{"title":"a","slug":"a"}`)
	if r.status != 201 || r.body != "" {
		t.Fatalf("minimal: %d %q", r.status, r.body)
	}
	// representation with select, bulk in one statement.
	r = b.do("POST", "/todos?select=title,done", alice, `[{"title":"b","slug":"b","done":false},{"title":"c","slug":"c","done":true}]`,
		"Prefer: return=representation", "Prefer: count=exact")
	if r.status != 201 || r.body != `[{"title":"b","done":false}, `+"\n"+` {"title":"c","done":true}]` {
		t.Fatalf("bulk: %d %q", r.status, r.body)
	}
	if pa := r.header.Get("Preference-Applied"); !strings.Contains(pa, "return=representation") || !strings.Contains(pa, "count=exact") {
		t.Errorf("Preference-Applied %q", pa)
	}
	if cr := r.header.Get("Content-Range"); cr != "0-1/2" {
		t.Errorf("Content-Range %q", cr)
	}
	// columns=: missing keys are null, unless missing=default.
	r = b.do("POST", "/todos?columns=title,slug,priority&select=slug,priority", alice, `[{"title":"d","slug":"d"}]`, "Prefer: return=representation")
	if r.status != 201 || r.body != `[{"slug":"d","priority":null}]` {
		t.Errorf("columns: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos?columns=title,slug,priority&select=slug,priority", alice, `[{"title":"e","slug":"e"},{"title":"f","slug":"f","priority":1}]`,
		"Prefer: return=representation,missing=default")
	if r.status != 201 || !strings.Contains(r.body, `{"slug":"e","priority":3}`) || !strings.Contains(r.body, `{"slug":"f","priority":1}`) ||
		!strings.Contains(r.header.Get("Preference-Applied"), "missing=default") {
		t.Errorf("missing=default: %d %s %v", r.status, r.body, r.header)
	}
	// headers-only: Location names the key.
	r = b.do("POST", "/todos", alice, `{"title":"g","slug":"g"}`, "Prefer: return=headers-only")
	if r.status != 201 || r.body != "" || !strings.HasPrefix(r.header.Get("Location"), "/todos?id=eq.") {
		t.Errorf("headers-only: %d %q %v", r.status, r.body, r.header)
	}
	// Singular answer.
	r = b.do("POST", "/todos?select=slug", alice, `{"title":"h","slug":"h"}`, "Prefer: return=representation", "Accept: application/vnd.pgrst.object+json")
	if r.status != 201 || r.body != `{"slug":"h"}` {
		t.Errorf("singular insert: %d %s", r.status, r.body)
	}
	// A singular answer of two rows rolls back.
	r = b.do("POST", "/todos", alice, `[{"title":"i","slug":"i"},{"title":"j","slug":"j"}]`, "Prefer: return=representation", "Accept: application/vnd.pgrst.object+json")
	if r.status != 406 || b.count("select count(*) from todos where slug in ('i','j')") != 0 {
		t.Errorf("singular of two: %d %s", r.status, r.body)
	}
	// tx=rollback answers but keeps nothing.
	r = b.do("POST", "/todos?select=slug", alice, `{"title":"k","slug":"k"}`, "Prefer: return=representation,tx=rollback")
	if r.status != 201 || r.body != `[{"slug":"k"}]` || b.count("select count(*) from todos where slug = 'k'") != 0 {
		t.Errorf("tx=rollback: %d %s", r.status, r.body)
	}
	// Unique violation: 409 with Postgres's code and message.
	r = b.do("POST", "/todos", alice, `{"title":"dup","slug":"a"}`)
	if m := r.json(t).(map[string]any); r.status != 409 || m["code"] != "23505" || !strings.Contains(m["message"].(string), "duplicate key") {
		t.Errorf("unique: %d %s", r.status, r.body)
	}
	// Unknown column: PGRST204; not an object: PGRST102; not JSON: 415.
	r = b.do("POST", "/todos", alice, `{"nope":1}`)
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "PGRST204" {
		t.Errorf("unknown column: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos", alice, `[1,2]`)
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "PGRST102" {
		t.Errorf("array of numbers: %d %s", r.status, r.body)
	}
	// RLS: a row for someone else is refused.
	r = b.do("POST", "/todos", alice, `{"title":"x","owner_id":"`+bob+`"}`)
	if r.status != 403 || r.json(t).(map[string]any)["code"] != "42501" {
		t.Errorf("insert for another owner: %d %s", r.status, r.body)
	}
}

func TestUpsert(t *testing.T) {
	b := setup(t, nil)
	b.do("POST", "/todos", alice, `{"id":1,"title":"a","slug":"a"}`)
	r := b.do("POST", "/todos?select=id,title", alice, `[{"id":1,"title":"A","slug":"a"},{"id":2,"title":"B","slug":"b"}]`,
		"Prefer: resolution=merge-duplicates,return=representation")
	if r.status != 201 || !strings.Contains(r.body, `{"id":1,"title":"A"}`) || !strings.Contains(r.body, `{"id":2,"title":"B"}`) {
		t.Errorf("merge: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos?select=id,title", alice, `[{"id":1,"title":"ignored","slug":"a"},{"id":3,"title":"C","slug":"c"}]`,
		"Prefer: resolution=ignore-duplicates,return=representation")
	if r.status != 201 || r.body != `[{"id":3,"title":"C"}]` {
		t.Errorf("ignore: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos?on_conflict=slug&select=id,title", alice, `{"title":"by slug","slug":"c"}`,
		"Prefer: resolution=merge-duplicates,return=representation")
	if r.status != 201 || r.body != `[{"id":3,"title":"by slug"}]` {
		t.Errorf("on_conflict: %d %s", r.status, r.body)
	}
}

func TestUpdateDelete(t *testing.T) {
	b := setup(t, nil)
	b.do("POST", "/todos", alice, `[{"title":"a1","priority":1},{"title":"a2","priority":2},{"title":"a3","priority":3}]`)
	b.do("POST", "/todos", bob, `[{"title":"b1","priority":1}]`)
	// PATCH with filters; RLS bounds it to alice's rows.
	r := b.do("PATCH", "/todos?priority=lte.2&select=title,done&order=title", alice, `{"done":true}`, "Prefer: return=representation")
	if r.status != 200 || r.body != `[{"title":"a1","done":true}, `+"\n"+` {"title":"a2","done":true}]` {
		t.Errorf("patch: %d %q", r.status, r.body)
	}
	if b.count("select count(*) from todos where title = 'b1' and done") != 0 {
		t.Error("bob's row changed")
	}
	r = b.do("PATCH", "/todos?title=eq.a3", alice, `{"title":"A3","priority":9}`)
	if r.status != 204 || b.count("select count(*) from todos where title = 'A3' and priority = 9") != 1 {
		t.Errorf("patch minimal: %d %s", r.status, r.body)
	}
	// handling=strict with max-affected: over it, PGRST124 and nothing changes.
	r = b.do("PATCH", "/todos", alice, `{"priority":0}`, "Prefer: handling=strict,max-affected=1")
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "PGRST124" || b.count("select count(*) from todos where priority = 0") != 0 {
		t.Errorf("max-affected: %d %s", r.status, r.body)
	}
	// bob cannot touch alice's rows: zero rows, no error.
	r = b.do("PATCH", "/todos?title=eq.a1", bob, `{"title":"stolen"}`, "Prefer: return=representation")
	if r.status != 200 || r.body != "[]" {
		t.Errorf("cross-user patch: %d %s", r.status, r.body)
	}
	r = b.do("DELETE", "/todos?title=eq.a1", bob, "", "Prefer: count=exact")
	if r.status != 204 || r.header.Get("Content-Range") != "*/0" || b.count("select count(*) from todos where title = 'a1'") != 1 {
		t.Errorf("cross-user delete: %d %v", r.status, r.header)
	}
	r = b.do("DELETE", "/todos?or=(title.eq.a1,title.eq.a2)&select=title&order=title", alice, "", "Prefer: return=representation")
	if r.status != 200 || !strings.Contains(r.body, `"a1"`) || !strings.Contains(r.body, `"a2"`) {
		t.Errorf("delete: %d %s", r.status, r.body)
	}
	if b.count("select count(*) from todos") != 2 {
		t.Error("delete removed the wrong rows")
	}
	// Reads are isolated too.
	r = b.do("GET", "/todos?select=title&order=title", bob, "")
	if r.body != `[{"title":"b1"}]` {
		t.Errorf("bob reads %s", r.body)
	}
}

func TestRPC(t *testing.T) {
	b := setup(t, nil)
	cases := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"POST", "/rpc/add", `{"a":1,"b":2}`, 200, `3`},
		{"GET", "/rpc/add?a=4&b=5", "", 200, `9`},
		{"POST", "/rpc/hello", `{}`, 200, `"hello world"`},
		{"POST", "/rpc/hello", `{"name":"tablegate"}`, 200, `"hello tablegate"`},
		{"POST", "/rpc/nothing", ``, 204, ``},
		{"POST", "/rpc/first_thing?select=id,name", ``, 200, `{"id":1,"name":"apple"}`},
		{"POST", "/rpc/things_over?select=id&order=id.desc", `{"min":15}`, 200, `[{"id":5}, ` + "\n" + ` {"id":4}, ` + "\n" + ` {"id":2}]`},
		{"GET", "/rpc/things_over?min=15&select=id&id=lt.5&order=id", ``, 200, `[{"id":2}, ` + "\n" + ` {"id":4}]`},
		{"POST", "/rpc/numbers", `{"n":3}`, 200, `[1, 2, 3]`},
		{"POST", "/rpc/echo", `{"x":[1,{"y":2}]}`, 200, `{"x": [1, {"y": 2}]}`},
	}
	for _, c := range cases {
		r := b.do(c.method, c.path, "", c.body)
		if r.status != c.status || r.body != c.want {
			t.Errorf("%s %s %s: %d %q, want %d %q", c.method, c.path, c.body, r.status, r.body, c.status, c.want)
		}
	}
	errs := []struct {
		path, body string
		status     int
		code       string
	}{
		{"/rpc/missing", `{}`, 404, "PGRST202"},
		{"/rpc/add", `{"a":1}`, 404, "PGRST202"},
		{"/rpc/add", `{"a":1,"b":2,"c":3}`, 404, "PGRST202"},
		{"/rpc/over", `{"x":1,"y":"a"}`, 404, "PGRST202"},
		{"/rpc/fail_with", `{"msg":"nope"}`, 400, "P0001"},
		{"/rpc/add", `{"a":"x","b":1}`, 400, "22P02"},
	}
	for _, c := range errs {
		r := b.do("POST", c.path, "", c.body)
		m, _ := r.json(t).(map[string]any)
		if r.status != c.status || m["code"] != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.path, c.body, r.status, r.body, c.status, c.code)
		}
	}
}

func (b *bundle) exec(sql string) {
	b.t.Helper()
	if _, err := b.pool.Exec(context.Background(), sql); err != nil {
		b.t.Fatal(err)
	}
}

func TestRPCOverload(t *testing.T) {
	b := setup(t, nil)
	b.exec(`create function dup(a int) returns int language sql as 'select a'; create function dup(a text) returns text language sql as 'select a'; grant execute on all functions in schema public to anon`)
	api, err := New(context.Background(), &Config{DB: b.db, Caller: testCaller})
	if err != nil {
		t.Fatal(err)
	}
	b.api = api
	b.srv.Config.Handler = http.StripPrefix("/rest/v1", api)
	r := b.do("POST", "/rpc/dup", "", `{"a":1}`)
	if m, _ := r.json(t).(map[string]any); r.status != 300 || m["code"] != "PGRST203" {
		t.Errorf("overload: %d %s", r.status, r.body)
	}
}

func TestPutAndStrippedNulls(t *testing.T) {
	b := setup(t, nil)
	r := b.do("PUT", "/todos?id=eq.7&select=id,title,slug", alice, `{"id":7,"title":"seven"}`, "Prefer: return=representation")
	if r.status != 200 || r.body != `[{"id":7,"title":"seven","slug":null}]` {
		t.Errorf("put insert: %d %s", r.status, r.body)
	}
	r = b.do("PUT", "/todos?id=eq.7", alice, `{"id":7,"title":"SEVEN"}`)
	if r.status != 204 || b.count("select count(*) from todos where id = 7 and title = 'SEVEN'") != 1 {
		t.Errorf("put update: %d %s", r.status, r.body)
	}
	for _, c := range []struct {
		path, body string
		status     int
		code       string
	}{
		{"/todos?id=eq.7", `{"id":8,"title":"x"}`, 400, "PGRST115"},
		{"/todos?id=gt.7", `{"id":8,"title":"x"}`, 405, "PGRST105"},
		{"/todos?title=eq.x", `{"title":"x"}`, 405, "PGRST105"},
		{"/todos?id=eq.7", `[{"id":7},{"id":7}]`, 400, "PGRST102"},
	} {
		r = b.do("PUT", c.path, alice, c.body)
		if m, _ := r.json(t).(map[string]any); r.status != c.status || m["code"] != c.code {
			t.Errorf("PUT %s %s: %d %s", c.path, c.body, r.status, r.body)
		}
	}
	// bob's PUT on alice's key: RLS refuses the update path.
	r = b.do("PUT", "/todos?id=eq.7", bob, `{"id":7,"title":"mine now"}`)
	if r.status != 403 || b.count("select count(*) from todos where title = 'mine now'") != 0 {
		t.Errorf("cross-user put: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/todos?select=id,slug", alice, "", "Accept: application/vnd.pgrst.array+json;nulls=stripped")
	if r.status != 200 || r.body != `[{"id":7}]` || !strings.Contains(r.header.Get("Content-Type"), "nulls=stripped") {
		t.Errorf("nulls=stripped: %d %s %s", r.status, r.body, r.header.Get("Content-Type"))
	}
	r = b.do("GET", "/todos?select=id,slug", alice, "", "Accept: application/vnd.pgrst.object+json;nulls=stripped")
	if r.status != 200 || r.body != `{"id":7}` {
		t.Errorf("object nulls=stripped: %d %s", r.status, r.body)
	}
}

// TestWritesEmitTableEvents: a table opted in to events gets its events
// from its trigger, so writes through the data API emit them as native
// writes do.
func TestWritesEmitTableEvents(t *testing.T) {
	b := newBundle(t)
	b.exec(`select tablegate.enable_events('public.todos')`)
	b.serve(nil)
	b.do("POST", "/todos", alice, `[{"title":"e1"},{"title":"e2"}]`)
	b.do("PATCH", "/todos?title=eq.e1", alice, `{"done":true}`)
	b.do("DELETE", "/todos?title=eq.e2", alice, "")
	if n := b.count("select count(*) from tablegate.events"); n != 4 {
		t.Errorf("events: %d, want 4 (two creates, an update, a delete)", n)
	}
}

func TestStrictHandling(t *testing.T) {
	b := setup(t, nil)
	r := b.do("POST", "/todos", alice, `{"title":"x"}`, "Prefer: handling=strict, timezone=UTC")
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "PGRST122" || b.count("select count(*) from todos") != 0 {
		t.Errorf("strict with an unknown preference: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/todos", alice, `{"title":"x"}`, "Prefer: handling=lenient, timezone=UTC")
	if r.status != 201 {
		t.Errorf("lenient: %d %s", r.status, r.body)
	}
}

func TestInsertEmptyObjects(t *testing.T) {
	b := setup(t, nil)
	b.exec(`alter table todos alter column title set default 'untitled'`)
	r := b.do("POST", "/todos?select=title,priority", alice, `[{},{}]`, "Prefer: return=representation")
	if r.status != 201 || r.body != `[{"title":"untitled","priority":3}, `+"\n"+` {"title":"untitled","priority":3}]` {
		t.Errorf("empty objects: %d %s", r.status, r.body)
	}
}

func TestRPCGetIsReadOnly(t *testing.T) {
	b := setup(t, nil)
	b.exec(`create function bump(n int) returns int language sql as 'update things set score = score + n where id = 1 returning score';
	        grant execute on function bump(int) to anon; grant update on things to anon;
	        create policy things_bump on things for update to anon using (true)`)
	api, err := New(context.Background(), &Config{DB: b.db, Caller: testCaller})
	if err != nil {
		t.Fatal(err)
	}
	b.srv.Config.Handler = http.StripPrefix("/rest/v1", api)
	r := b.do("GET", "/rpc/bump?n=1", "", "")
	if m, _ := r.json(t).(map[string]any); r.status != 405 || m["code"] != "25006" {
		t.Errorf("GET of a writing function: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/bump", "", `{"n":1}`)
	if r.status != 200 || r.body != "11" {
		t.Errorf("POST of a writing function: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/rpc/add?a=1&b=2", "", "")
	if r.status != 200 || r.body != "3" {
		t.Errorf("GET of a stable function: %d %s", r.status, r.body)
	}
}
