package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/syncbuf"
	"github.com/tablegate/tablegate/telemetry"
)

// decode parses a JSON body into a map (numbers as json.Number).
func decode(t testing.TB, s string) map[string]any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not an object: %s", s)
	}
	return m
}

// isProblem checks a problem+json body with a status and kind.
func isProblem(t testing.TB, r resp, status int, kind string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q, body %s", ct, r.body)
	}
	m := decode(t, r.body)
	if kind != "" && m["kind"] != kind {
		t.Fatalf("kind = %v, want %s; body %s", m["kind"], kind, r.body)
	}
	if m["status"] != json.Number(itoa(status)) {
		t.Fatalf("body status = %v", m["status"])
	}
	// A violated constraint is named (with its columns), but never the SQL,
	// Postgres's own message or a relation.
	for _, leak := range []string{"SELECT", "INSERT", "UPDATE", "DELETE FROM", "pq:", "SQLSTATE", "new row violates", "violates check constraint \"todos_title_check\" for", "relation \"", "Key ("} {
		if strings.Contains(r.body, leak) {
			t.Fatalf("problem body leaks %q: %s", leak, r.body)
		}
	}
	return m
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestCRUDRoutesAndStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("todos", &Config{
		Select:   []string{"id", "owner_id", "title", "slug", "done", "priority", "seq"},
		ReadOnly: []string{"owner_id"},
	})
	s := server(t, "todos", res)

	// Empty list.
	r := do(t, s, "GET", "/api/todos", alice, "")
	if r.status != 200 || r.body != `{"items":[],"next_cursor":null}` {
		t.Fatalf("empty list: %s", r)
	}
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("content type %q", r.header.Get("Content-Type"))
	}

	// Create → 201 with Location and the selected columns.
	r = do(t, s, "POST", "/api/todos", alice, `{"title":"buy milk","slug":"milk","priority":2}`)
	if r.status != 201 {
		t.Fatalf("create: %s", r)
	}
	row := decode(t, r.body)
	id, _ := row["id"].(string)
	if row["title"] != "buy milk" || row["owner_id"] != alice || row["done"] != false || row["priority"] != json.Number("2") {
		t.Errorf("created row %s", r.body)
	}
	if _, ok := row["secret"]; ok {
		t.Errorf("unselected column returned: %s", r.body)
	}
	if loc := r.header.Get("Location"); loc != "/api/todos/"+id {
		t.Errorf("Location = %q", loc)
	}
	// Columns in select order.
	if !strings.HasPrefix(r.body, `{"id" : `) && !strings.HasPrefix(r.body, `{"id":`) {
		t.Errorf("column order: %s", r.body)
	}

	bobRow := decode(t, do(t, s, "POST", "/api/todos/", bob, `{"title":"bob's"}`).body)
	bobID := bobRow["id"].(string)

	// Get → 200; hidden by RLS → 404; missing → 404; malformed key → 400.
	if r = do(t, s, "GET", "/api/todos/"+id, alice, ""); r.status != 200 || decode(t, r.body)["id"] != id {
		t.Fatalf("get: %s", r)
	}
	isProblem(t, do(t, s, "GET", "/api/todos/"+bobID, alice, ""), 404, "not_found")
	isProblem(t, do(t, s, "GET", "/api/todos/"+id, bob, ""), 404, "not_found")
	isProblem(t, do(t, s, "GET", "/api/todos/"+id, "anon", ""), 404, "not_found")
	isProblem(t, do(t, s, "GET", "/api/todos/00000000-0000-0000-0000-000000000000", alice, ""), 404, "not_found")
	isProblem(t, do(t, s, "GET", "/api/todos/not-a-uuid", alice, ""), 400, "bad_request")
	isProblem(t, do(t, s, "GET", "/api/todos/1'%20or%20'1'='1", alice, ""), 400, "bad_request")

	// List shows only the caller's rows.
	r = do(t, s, "GET", "/api/todos", alice, "")
	page := decode(t, r.body)
	if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Errorf("alice's list: %s", r.body)
	}
	if r = do(t, s, "GET", "/api/todos", "anon", ""); r.body != `{"items":[],"next_cursor":null}` {
		t.Errorf("anon list: %s", r)
	}

	// Update → 200 row; others' row → 404; read-only/unknown columns → 400.
	r = do(t, s, "PATCH", "/api/todos/"+id, alice, `{"done":true,"title":"buy oat milk"}`)
	if r.status != 200 || decode(t, r.body)["done"] != true || decode(t, r.body)["title"] != "buy oat milk" {
		t.Fatalf("update: %s", r)
	}
	isProblem(t, do(t, s, "PATCH", "/api/todos/"+bobID, alice, `{"done":true}`), 404, "not_found")
	p := isProblem(t, do(t, s, "PATCH", "/api/todos/"+id, alice, `{"id":"`+bobID+`","seq":5,"owner_id":"x","nope":1}`), 400, "bad_request")
	errs, _ := p["errors"].([]any)
	if len(errs) != 4 {
		t.Errorf("errors = %v", p["errors"])
	}
	isProblem(t, do(t, s, "PATCH", "/api/todos/"+id, alice, `{}`), 400, "bad_request")

	// Delete → 204 without body; then 404.
	r = do(t, s, "DELETE", "/api/todos/"+bobID, alice, "")
	isProblem(t, r, 404, "not_found")
	r = do(t, s, "DELETE", "/api/todos/"+id, alice, "")
	if r.status != 204 || r.body != "" {
		t.Fatalf("delete: %s", r)
	}
	isProblem(t, do(t, s, "GET", "/api/todos/"+id, alice, ""), 404, "not_found")
	isProblem(t, do(t, s, "DELETE", "/api/todos/"+id, alice, ""), 404, "not_found")
}

func TestErrorStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("todos", &Config{MaxBodyBytes: 256})
	s := server(t, "todos", res)

	// 405 with Allow.
	r := do(t, s, "PUT", "/api/todos", alice, `{}`)
	isProblem(t, r, 405, "method_not_allowed")
	if a := r.header.Get("Allow"); a != "GET, POST, HEAD" {
		t.Errorf("Allow = %q", a)
	}
	r = do(t, s, "POST", "/api/todos/"+alice, alice, `{}`)
	isProblem(t, r, 405, "method_not_allowed")
	if a := r.header.Get("Allow"); a != "GET, PATCH, DELETE, HEAD" {
		t.Errorf("item Allow = %q", a)
	}
	isProblem(t, do(t, s, "GET", "/api/todos/a/b/c", alice, ""), 404, "not_found")

	// Operations not listed are not served.
	ro := b.resource("todos", &Config{Operations: []Operation{OpList, OpGet}})
	s2 := server(t, "todos", ro)
	r = do(t, s2, "POST", "/api/todos", alice, `{"title":"x"}`)
	isProblem(t, r, 405, "")
	if a := r.header.Get("Allow"); a != "GET, HEAD" {
		t.Errorf("read-only Allow = %q", a)
	}
	r = do(t, s2, "DELETE", "/api/todos/"+alice, alice, "")
	isProblem(t, r, 405, "")

	// 415, 413, 400 malformed JSON / not an object / empty.
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"x"}`, "Content-Type", "text/plain"), 415, "unsupported_media_type")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `title=x`, "Content-Type", "application/x-www-form-urlencoded"), 415, "")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"`+strings.Repeat("x", 300)+`"}`), 413, "payload_too_large")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":`), 400, "bad_request")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"a"} {}`), 400, "bad_request")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `["x"]`), 400, "bad_request")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, ""), 400, "bad_request")
	if r := do(t, s, "POST", "/api/todos", alice, `{"title":"ok"}`, "Content-Type", "application/merge-patch+json; charset=utf-8"); r.status != 201 {
		t.Errorf("+json media type: %s", r)
	}

	// 409 unique; 422 check and not-null; 400 invalid text representation.
	if r := do(t, s, "POST", "/api/todos", alice, `{"title":"a","slug":"dup"}`); r.status != 201 {
		t.Fatal(r)
	}
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"b","slug":"dup"}`), 409, "conflict")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":""}`), 422, "unprocessable")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":null}`), 422, "unprocessable")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"x","priority":"high"}`), 400, "bad_request")

	// 403: a policy refuses the write (anon has the grant, no policy; a
	// user may not hand a row to someone else).
	isProblem(t, do(t, s, "POST", "/api/todos", "anon", `{"title":"x"}`), 403, "forbidden")
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"x","owner_id":"`+bob+`"}`), 403, "forbidden")
	mine := decode(t, do(t, s, "POST", "/api/todos", alice, `{"title":"mine"}`).body)["id"].(string)
	isProblem(t, do(t, s, "PATCH", "/api/todos/"+mine, alice, `{"owner_id":"`+bob+`"}`), 403, "forbidden")

	// 401 for an invalid caller that reached the handler.
	isProblem(t, do(t, s, "GET", "/api/todos", "invalid", ""), 401, "unauthorized")
}

func TestTypesRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "notes", b.resource("notes", nil))
	body := `{"code":"a/b c","body":{"k":[1,2,{"x":null}]},"tags":["x","y,z"],"amount":"12345678901234.56","big":9007199254740993}`
	r := do(t, s, "POST", "/api/notes", alice, body)
	if r.status != 201 {
		t.Fatal(r)
	}
	if loc := r.header.Get("Location"); loc != "/api/notes/a%2Fb%20c" {
		t.Errorf("Location = %q", loc)
	}
	r = do(t, s, "GET", "/api/notes/a%2Fb%20c", alice, "")
	if r.status != 200 {
		t.Fatal(r)
	}
	m := decode(t, r.body)
	if m["big"] != json.Number("9007199254740993") || m["amount"] != json.Number("12345678901234.56") {
		t.Errorf("numbers lost precision: %s", r.body)
	}
	if tags := m["tags"].([]any); len(tags) != 2 || tags[1] != "y,z" {
		t.Errorf("tags: %s", r.body)
	}
	r = do(t, s, "PATCH", "/api/notes/a%2Fb%20c", alice, `{"tags":null,"body":"str"}`)
	if m := decode(t, r.body); r.status != 200 || m["tags"] != nil || m["body"] != "str" {
		t.Errorf("patch: %s", r)
	}
	if r := do(t, s, "GET", "/api/notes?code=eq.a/b%20c&big=gt.9007199254740992", alice, ""); !strings.Contains(r.body, `"code" : "a/b c"`) && !strings.Contains(r.body, `"code":"a/b c"`) {
		t.Errorf("filter on text key and bigint: %s", r)
	}
	_ = http.StatusOK
}

// TestAwkwardColumnNames: columns named like the SQL's own aliases, or
// needing quotes, are served correctly.
func TestAwkwardColumnNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table "Odd Table" ("t" int primary key, "r" text, "rn" int, "k" text, "p" text, "_tg_row" text, "Mixed Case" text, "quo""te" text, "count" int);
	        grant select, insert on "Odd Table" to authenticated`)
	s := server(t, "odd", b.resource(`public.Odd Table`, noRLS()))
	for i := 1; i <= 3; i++ {
		body := `{"t":` + itoa(i) + `,"r":"r","rn":9,"k":"k","p":"p","_tg_row":"x","Mixed Case":"m","quo\"te":"q","count":1}`
		if r := do(t, s, "POST", "/api/odd", alice, body); r.status != 201 {
			t.Fatal(r)
		}
	}
	p := getPage(t, s, `/api/odd?limit=2&order=rn.desc,k&`+`Mixed%20Case=eq.m`, alice)
	if len(p.Items) != 2 || p.NextCursor == nil || p.Items[0]["quo\"te"] != "q" || p.Items[1]["_tg_row"] != "x" {
		t.Fatalf("page %+v", p)
	}
	p = getPage(t, s, `/api/odd?limit=2&order=rn.desc,k&Mixed%20Case=eq.m&cursor=`+*p.NextCursor, alice)
	if len(p.Items) != 1 || p.Items[0]["t"] != json.Number("3") {
		t.Fatalf("page 2 %+v", p)
	}
}

// TestWideTable: more than 50 selected columns (json_build_object's
// argument limit) render through row_to_json, columns in order.
func TestWideTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var cols []string
	for i := 0; i < 60; i++ {
		cols = append(cols, fmt.Sprintf("c%02d int default %d", i, i))
	}
	b.exec(`create table wide (id int primary key, x int default 7, ` + strings.Join(cols, ",") + `); grant select, insert on wide to authenticated`)
	s := server(t, "wide", b.resource("wide", noRLS()))
	r := do(t, s, "POST", "/api/wide", alice, `{"id":1}`)
	if r.status != 201 || !strings.Contains(r.body, `"x":7`) || !strings.Contains(r.body, `"c59":59`) {
		t.Fatalf("create: %s", r)
	}
	r = do(t, s, "GET", "/api/wide/1", alice, "")
	if r.status != 200 || !strings.HasPrefix(r.body, `{"id":1,"x":7,"c00":0,`) {
		t.Fatalf("get: %s", r)
	}
	if p := getPage(t, s, "/api/wide", alice); len(p.Items) != 1 || p.Items[0]["c30"] != json.Number("30") {
		t.Fatalf("list: %+v", p)
	}
}

// TestResourcesSet: many tables under one Router, below a base path.
func TestResourcesSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rs, err := NewResources(t.Context(), b.db, map[string]*Config{
		"todos": {Caller: testCaller},
		"notes": {Caller: testCaller, Operations: []Operation{OpList, OpCreate}},
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := NewRouter(&RouterConfig{BasePath: "/v1", Resources: rs})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "notes,todos" {
		t.Errorf("names %s", got)
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", set)
	var accessLog syncbuf.Buffer
	tel, err := telemetry.New(&telemetry.Config{AccessLog: slog.New(slog.NewJSONHandler(&accessLog, nil))})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(tel.Handler(mux))
	t.Cleanup(s.Close)
	r := do(t, s, "POST", "/v1/todos", alice, `{"title":"x"}`)
	if r.status != 201 || !strings.HasPrefix(r.header.Get("Location"), "/v1/todos/") {
		t.Fatalf("create: %s %v", r, r.header)
	}
	if r := do(t, s, "GET", r.header.Get("Location"), alice, ""); r.status != 200 {
		t.Errorf("follow Location: %s", r)
	}
	if r := do(t, s, "POST", "/v1/notes/", alice, `{"code":"a"}`); r.status != 201 || r.header.Get("Location") != "/v1/notes/a" {
		t.Errorf("notes create: %s %v", r, r.header.Get("Location"))
	}
	// No item operation at all: the item path is not a route (404), while
	// the collection answers 405 for methods it does not serve.
	isProblem(t, do(t, s, "GET", "/v1/notes/a", alice, ""), 404, "not_found")
	r = do(t, s, "DELETE", "/v1/notes", alice, "")
	if isProblem(t, r, 405, ""); r.header.Get("Allow") != "GET, POST, HEAD" {
		t.Errorf("notes Allow %q", r.header.Get("Allow"))
	}
	isProblem(t, do(t, s, "GET", "/v1/nope", alice, ""), 404, "not_found")
	isProblem(t, do(t, s, "GET", "/v1/", alice, ""), 404, "not_found")
	// Telemetry names each table's routes below the set's mount.
	for _, route := range []string{`"route":"/v1/todos"`, `"route":"/v1/todos/{id}"`, `"route":"/v1/notes"`} {
		if !strings.Contains(accessLog.String(), route) {
			t.Errorf("no access log line with %s:\n%s", route, accessLog.String())
		}
	}
	// A request the set refuses before its resource reports a route (the
	// 405, the 404 item) keeps the mount's pattern, never the set's
	// relative "/notes/".
	if strings.Contains(accessLog.String(), `"route":"/notes/"`) {
		t.Errorf("the set's relative pattern became a route:\n%s", accessLog.String())
	}
	_, err = NewResources(t.Context(), b.db, map[string]*Config{"todos": nil, "missing": nil})
	if !errors.Is(err, ErrBuild) {
		t.Errorf("missing table: %v", err)
	}
}
