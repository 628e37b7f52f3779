package dataapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// rpcFixtureSQL adds functions for the read-only and single-object tests;
// served by a fresh API (the catalogue is read when it is built).
const rpcFixtureSQL = `
create sequence ticks;
create function tick() returns bigint language sql volatile as $$select nextval('ticks')$$;
create function stable_tick() returns bigint language sql stable as 'select tick()';
create function immutable_tick() returns bigint language sql immutable as 'select tick()';
create function bump_score(n int) returns int language sql volatile as
  'update things set score = score + n where id = 1 returning score';
create function stable_touch() returns int language sql stable as
  $$select count(*)::int from (select bump_score(1)) _$$;
create function mult(param json) returns int language sql stable as $$select (param->>'x')::int * (param->>'y')::int$$;
create function doc_of(doc jsonb) returns jsonb language sql stable as 'select doc';
create function two(a json) returns int language sql stable as 'select 1';
create function two(b jsonb) returns int language sql stable as 'select 2';
create function my_todos(opts jsonb) returns setof todos language sql stable as
  $$select * from todos where title like coalesce(opts->>'like', '%') order by id$$;
create function add_todo(t jsonb) returns bigint language sql volatile as
  $$insert into todos (title) values (t->>'title') returning id$$;
grant update on things to authenticated;
create policy things_bump on things for update to authenticated using (true);
revoke execute on function mult(json) from public;
grant usage on sequence ticks to anon, authenticated;
grant execute on all functions in schema public to authenticated;
grant execute on function tick(), stable_tick(), immutable_tick() to anon;
`

func setupRPC(t *testing.T) *bundle {
	t.Helper()
	b := newBundle(t)
	b.exec(rpcFixtureSQL)
	return b.serve(nil)
}

func errCode(t *testing.T, r resp) string {
	t.Helper()
	m, _ := r.json(t).(map[string]any)
	for _, k := range []string{"code", "message", "details", "hint"} {
		if _, ok := m[k]; !ok {
			t.Errorf("error without %q: %d %s", k, r.status, r.body)
		}
	}
	code, _ := m["code"].(string)
	return code
}

// TestRPCPostStableIsReadOnly: a POST to a STABLE or IMMUTABLE function
// runs in a read-only transaction, as PostgREST runs it: a write it
// makes anyway (through a volatile function it calls) answers 405 with
// Postgres's 25006 in PostgREST's error shape and changes nothing; a
// VOLATILE function still writes.
func TestRPCPostStableIsReadOnly(t *testing.T) {
	b := setupRPC(t)
	for _, fn := range []string{"stable_tick", "immutable_tick"} {
		for _, user := range []string{"", alice} {
			r := b.do("POST", "/rpc/"+fn, user, `{}`)
			if r.status != http.StatusMethodNotAllowed || errCode(t, r) != "25006" || !strings.Contains(r.body, "read-only transaction") {
				t.Errorf("POST %s as %q: %d %s", fn, user, r.status, r.body)
			}
		}
	}
	if n := b.count("select count(*) from pg_sequences where sequencename = 'ticks' and last_value is not null"); n != 0 {
		t.Errorf("the sequence advanced under a read-only POST")
	}
	r := b.do("POST", "/rpc/stable_touch", alice, ``)
	if r.status != http.StatusMethodNotAllowed || errCode(t, r) != "25006" {
		t.Errorf("stable function updating through a volatile one: %d %s", r.status, r.body)
	}
	if n := b.count("select score from things where id = 1"); n != 10 {
		t.Errorf("score %d after a refused read-only write, want 10", n)
	}
	// GET of a volatile function that writes is refused the same way.
	r = b.do("GET", "/rpc/tick", "", "")
	if r.status != http.StatusMethodNotAllowed || errCode(t, r) != "25006" {
		t.Errorf("GET of a writing volatile function: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/rpc/bump_score?n=1", alice, "")
	if r.status != http.StatusMethodNotAllowed || errCode(t, r) != "25006" {
		t.Errorf("GET of an updating volatile function: %d %s", r.status, r.body)
	}
	// A volatile function still writes on POST.
	r = b.do("POST", "/rpc/tick", "", ``)
	if r.status != 200 || r.body != "1" {
		t.Errorf("POST of a volatile function: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/bump_score", alice, `{"n":5}`)
	if r.status != 200 || r.body != "15" {
		t.Errorf("POST of an updating volatile function: %d %s", r.status, r.body)
	}
	// Reading stays possible in the read-only transaction.
	r = b.do("POST", "/rpc/add", "", `{"a":1,"b":2}`)
	if r.status != 200 || r.body != "3" {
		t.Errorf("POST of a reading stable function: %d %s", r.status, r.body)
	}
}

// TestRPCSingleObject: Prefer: params=single-object passes the whole
// body as the function's one json/jsonb parameter, named or not, with
// PostgREST's errors when no function or several fit; the caller's RLS
// and EXECUTE privilege apply as for any call.
func TestRPCSingleObject(t *testing.T) {
	b := setupRPC(t)
	so := "Prefer: params=single-object"
	r := b.do("POST", "/rpc/mult", alice, `{"x":4,"y":2}`, so)
	if r.status != 200 || r.body != "8" {
		t.Errorf("single object: %d %s", r.status, r.body)
	}
	// Without the preference the keys are argument names: x and y are not.
	r = b.do("POST", "/rpc/mult", alice, `{"x":4,"y":2}`)
	if r.status != 404 || errCode(t, r) != "PGRST202" {
		t.Errorf("keys as argument names: %d %s", r.status, r.body)
	}
	// Any JSON value is the argument: an array, a string, null.
	for _, body := range []string{`[1,{"a":[true,null]}]`, `"text"`, `null`, `{"nested":{"deep":[1,2,3]}}`} {
		r = b.do("POST", "/rpc/doc_of", alice, body, so)
		if r.status != 200 || strings.ReplaceAll(r.body, " ", "") != strings.ReplaceAll(body, " ", "") {
			t.Errorf("doc_of(%s): %d %s", body, r.status, r.body)
		}
	}
	// An empty body is an empty object.
	r = b.do("POST", "/rpc/doc_of", alice, ``, so)
	if r.status != 200 || r.body != "{}" {
		t.Errorf("empty body: %d %s", r.status, r.body)
	}
	// No function with one json/jsonb parameter: PostgREST's words.
	r = b.do("POST", "/rpc/add", alice, `{"a":1,"b":2}`, so)
	want := `{"code":"PGRST202","details":"Searched for the function public.add with a single json/jsonb parameter, but no matches were found in the schema cache.","hint":null,"message":"Could not find the function public.add in the schema cache"}`
	if r.status != 404 || !sameJSON(t, r.body, want) {
		t.Errorf("no single-object function: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/two", alice, `{}`, so)
	if r.status != 300 || errCode(t, r) != "PGRST203" {
		t.Errorf("json and jsonb overloads: %d %s", r.status, r.body)
	}
	// Bad input: malformed JSON, wrong types, a huge body.
	r = b.do("POST", "/rpc/mult", alice, `{"x":4,`, so)
	if r.status != 400 || errCode(t, r) != "PGRST102" {
		t.Errorf("malformed body: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/mult", alice, `{"x":"four","y":2}`, so)
	if r.status != 400 || errCode(t, r) != "22P02" {
		t.Errorf("wrong type: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/mult", alice, `{"x":4,"y":2,"pad":"`+strings.Repeat("a", MaxBodyBytes)+`"}`, so)
	if r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("huge body: %d %.200s", r.status, r.body)
	}
	// The caller's privileges apply: anon may not execute mult.
	r = b.do("POST", "/rpc/mult", "", `{"x":4,"y":2}`, so)
	if r.status != 401 || errCode(t, r) != "42501" {
		t.Errorf("anon without EXECUTE: %d %s", r.status, r.body)
	}
	// Row-level security decides the rows: each user sees only theirs.
	for _, u := range []string{alice, bob} {
		r = b.do("POST", "/todos", u, `[{"title":"a-`+u[:1]+`"},{"title":"b-`+u[:1]+`"}]`)
		if r.status != 201 {
			t.Fatalf("insert: %d %s", r.status, r.body)
		}
	}
	r = b.do("POST", "/rpc/my_todos?select=title", alice, `{"like":"%"}`, so)
	if r.status != 200 || r.body != `[{"title":"a-1"}, `+"\n"+` {"title":"b-1"}]` {
		t.Errorf("alice's rows: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/my_todos?select=title&title=like.b*", bob, `{}`, so)
	if r.status != 200 || r.body != `[{"title":"b-2"}]` {
		t.Errorf("bob's rows, filtered: %d %s", r.status, r.body)
	}
	r = b.do("POST", "/rpc/my_todos", "", `{}`, so)
	if r.status != 200 || r.body != "[]" {
		t.Errorf("anon sees no one's rows: %d %s", r.status, r.body)
	}
	// An anonymous sign-in is an authenticated caller with its own id: it
	// sees none of the others' rows.
	r = b.do("POST", "/rpc/my_todos", "anonymous:33333333-3333-3333-3333-333333333333", `{}`, so)
	if r.status != 200 || r.body != "[]" {
		t.Errorf("anonymous sign-in: %d %s", r.status, r.body)
	}
	// A volatile single-object function writes, as the caller.
	r = b.do("POST", "/rpc/add_todo", bob, `{"title":"via rpc"}`, so)
	if r.status != 200 || b.count("select count(*) from todos where title = 'via rpc' and owner_id = '"+bob+"'") != 1 {
		t.Errorf("volatile single object: %d %s", r.status, r.body)
	}
	// handling=strict accepts the preference.
	r = b.do("POST", "/rpc/mult", alice, `{"x":3,"y":3}`, "Prefer: params=single-object, handling=strict")
	if r.status != 200 || r.body != "9" {
		t.Errorf("strict: %d %s", r.status, r.body)
	}
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
