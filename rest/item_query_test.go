package rest

import (
	"strings"
	"testing"
)

// TestItemRoutesRefuseFilters: a get, create, update or delete whose query
// reads as a filter (a selected column's name, or/and, a JSON path or
// cast, any operator.value), in any spelling, or does not parse, is
// refused with 400 and changes nothing; a client expecting a conditional
// update would otherwise change the row unconditionally. Other query
// parameters stay ignored.
func TestItemRoutesRefuseFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", nil))
	r := do(t, s, "POST", "/api/todos", alice, `{"title":"keep"}`)
	if r.status != 201 {
		t.Fatal(r)
	}
	id := decode(t, r.body)["id"].(string)
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/api/todos/" + id + "?title=eq.other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?done=not.is.true", `{"title":"changed"}`},
		{"DELETE", "/api/todos/" + id + "?title=eq.other", ""},
		{"GET", "/api/todos/" + id + "?priority=gt.5", ""},
		{"POST", "/api/todos?title=eq.x", `{"title":"new"}`},
		{"PATCH", "/api/todos/" + id + "?title=match.other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title=cs.%7Bother%7D", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title=eq(any).%7Bother%7D", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?or=(title.eq.other)", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?not.and=(done.is.true)", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?todos.title=eq.other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title=in.(other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title=like." + strings.Repeat("x", 300), `{"title":"changed"}`},
		{"GET", "/api/todos/" + id + "?title=plain", ""},
		{"PATCH", "/api/todos/" + id + "?Title=eq.other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title%20=eq.other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title%00=eq.other", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?data-%3E%3Es=eq.closed", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title::text=plain", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?OR=(title.eq.x)", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?not.not.or=(x)", `{"title":"changed"}`},
		{"POST", "/api/todos?columns=title", `{"title":"new","done":true}`},
		{"PATCH", "/api/todos/" + id + "?select=id", `{"title":"changed"}`},
		{"POST", "/api/todos?on_conflict=slug", `{"title":"new"}`},
		{"PATCH", "/api/todos/" + id + "?todos.or=(title.eq.other)", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?todos.select=id", `{"title":"changed"}`},
	} {
		r := do(t, s, c.method, c.path, alice, c.body)
		if r.status != 400 || !strings.Contains(r.body, "reads as a filter") {
			t.Errorf("%s %s: %s, want 400 naming the filter", c.method, c.path, r)
		}
	}
	if r := do(t, s, "GET", "/api/todos/"+id, alice, ""); r.status != 200 || !strings.Contains(r.body, `"title":"keep"`) {
		t.Errorf("the row changed: %s", r)
	}
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/api/todos/" + id + "?title=eq.other&%zz", `{"title":"changed"}`},
		{"PATCH", "/api/todos/" + id + "?title=eq.other;x", `{"title":"changed"}`},
	} {
		if r := do(t, s, c.method, c.path, alice, c.body); r.status != 400 {
			t.Errorf("%s %s: %s, want 400 (malformed query)", c.method, c.path, r)
		}
	}
	for _, q := range []string{"?_=123", "?client.title=2", "?reason=because", "?next=in.example.com", "?lang=cs.CZ",
		"?order=42", "?limit=3", "?x=NOT.EQ.3", "?a.b=eq.5"} {
		if r := do(t, s, "GET", "/api/todos/"+id+q, alice, ""); r.status != 200 {
			t.Errorf("GET %s: %s", q, r)
		}
	}
}

// TestItemRefusalNamesOnlySelectedColumns: a parameter named as a column
// the resource does not select is treated as any other parameter (no
// oracle of hidden column names); one named as a selected column is
// refused.
func TestItemRefusalNamesOnlySelectedColumns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", &Config{Select: []string{"id", "title", "done"}}))
	r := do(t, s, "POST", "/api/todos", alice, `{"title":"keep"}`)
	id := decode(t, r.body)["id"].(string)
	if r := do(t, s, "GET", "/api/todos/"+id+"?secret=x", alice, ""); r.status != 200 {
		t.Errorf("hidden column name: %s, want 200 as for any other parameter", r)
	}
	if r := do(t, s, "GET", "/api/todos/"+id+"?title=x", alice, ""); r.status != 400 {
		t.Errorf("selected column name: %s, want 400", r)
	}
}
