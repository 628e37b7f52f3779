package rest

import (
	"testing"
)

// TestBodyValueTypeFitsColumn: without an input schema, a body value
// whose JSON type does not fit its column's type answers 400 naming the
// field (Postgres would store "yes" as true), while the JSON forms a
// column takes (numbers as strings for int8 and numeric, any JSON for
// jsonb, null) still pass.
func TestBodyValueTypeFitsColumn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	todos := server(t, "todos", b.resource("todos", nil))
	notes := server(t, "notes", b.resource("notes", nil))
	refused := []struct {
		srv            string
		method, path   string
		body           string
		field, message string
	}{
		{"todos", "POST", "/api/todos", `{"title":"x","done":"yes"}`, "/done", "must be a JSON boolean (the column is boolean)"},
		{"todos", "POST", "/api/todos", `{"title":"x","done":1}`, "/done", "must be a JSON boolean (the column is boolean)"},
		{"todos", "POST", "/api/todos", `{"title":"x","priority":true}`, "/priority", "must be a JSON number (or a string of one) (the column is integer)"},
		{"todos", "POST", "/api/todos", `{"title":5}`, "/title", "must be a JSON string (the column is text)"},
		{"todos", "POST", "/api/todos", `{"title":{"a":1}}`, "/title", "must be a JSON string (the column is text)"},
		{"notes", "POST", "/api/notes", `{"code":"a","tags":"x"}`, "/tags", "must be a JSON array (the column is text[])"},
		{"notes", "POST", "/api/notes", `{"code":"a","amount":[1]}`, "/amount", "must be a JSON number (or a string of one) (the column is numeric(20,2))"},
		{"notes", "POST", "/api/notes", `{"code":"a","tags":["ok",true]}`, "/tags/1", "must be a JSON string"},
	}
	for _, c := range refused {
		s := todos
		if c.srv == "notes" {
			s = notes
		}
		m := isProblem(t, do(t, s, c.method, c.path, alice, c.body), 400, "bad_request")
		errs, _ := m["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["path"] != c.field || errs[0].(map[string]any)["message"] != c.message {
			t.Errorf("%s: errors %v, want %s %q", c.body, m["errors"], c.field, c.message)
		}
	}
	// The row was never written, and a PATCH is checked the same way.
	r := do(t, todos, "POST", "/api/todos", alice, `{"title":"ok","done":true,"priority":"5"}`)
	if r.status != 201 {
		t.Fatalf("fitting values: %s", r)
	}
	id := decode(t, r.body)["id"].(string)
	isProblem(t, do(t, todos, "PATCH", "/api/todos/"+id, alice, `{"done":"no"}`), 400, "bad_request")
	if r := do(t, todos, "PATCH", "/api/todos/"+id, alice, `{"done":false,"priority":null}`); r.status != 200 {
		t.Errorf("fitting patch: %s", r)
	}
	for _, body := range []string{`{"code":"j1","body":"any JSON"}`, `{"code":"j2","body":{"a":[1,true]}}`,
		`{"code":"n1","amount":"12.50","big":"9007199254740993"}`, `{"code":"n2","amount":12.5,"big":9007199254740993,"tags":["a",null]}`} {
		if r := do(t, notes, "POST", "/api/notes", alice, body); r.status != 201 {
			t.Errorf("%s: %s", body, r)
		}
	}
}

// TestBodyValueTypeFitsInside: the elements of an array column and the
// fields of a composite one are checked the same way, the path naming
// the element or field.
func TestBodyValueTypeFitsInside(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create type addr as (street text, zip int, verified boolean);
create table places (id int primary key, home addr, flags boolean[]);
alter table places enable row level security;
create policy places_all on places for all to authenticated using (true) with check (true);
grant select, insert, update, delete on places to authenticated;`)
	s := server(t, "places", b.resource("places", nil))
	for _, c := range []struct{ body, path, msg string }{
		{`{"id":1,"home":{"street":"x","zip":1,"verified":"yes"}}`, "/home/verified", "must be a JSON boolean"},
		{`{"id":1,"home":{"street":["x"]}}`, "/home/street", "must be a JSON string"},
		{`{"id":1,"flags":[true,"no"]}`, "/flags/1", "must be a JSON boolean"},
		{`{"id":1,"home":"(x,1,t)"}`, "/home", "must be a JSON object (the column is addr)"},
	} {
		m := isProblem(t, do(t, s, "POST", "/api/places", alice, c.body), 400, "bad_request")
		errs, _ := m["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["path"] != c.path || errs[0].(map[string]any)["message"] != c.msg {
			t.Errorf("%s: errors %v, want %s %q", c.body, m["errors"], c.path, c.msg)
		}
	}
	if r := do(t, s, "POST", "/api/places", alice, `{"id":2,"home":{"street":"x","zip":"12345","verified":true},"flags":[true,null]}`); r.status != 201 {
		t.Errorf("fitting values: %s", r)
	}
}
