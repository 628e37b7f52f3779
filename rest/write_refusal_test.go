package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestRefusedWriteOfVisibleRow: a row the caller can read but a policy
// does not let them change answers 403 on PATCH and DELETE; a row they
// cannot see stays 404. With and without a permission (which reads the
// row first), and through a custom repository's ErrNotFound alike.
func TestRefusedWriteOfVisibleRow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`
create table boards (
  id bigint generated always as identity primary key,
  owner_id uuid not null default auth.uid(),
  title text not null,
  hidden boolean not null default false
);
alter table boards enable row level security;
grant select, insert, update, delete on boards to authenticated;
create policy boards_read on boards for select using (not hidden or owner_id = auth.uid());
create policy boards_update on boards for update using (owner_id = auth.uid());
create policy boards_delete on boards for delete using (owner_id = auth.uid());
insert into boards (owner_id, title) values ('` + alice + `', 'shared');
insert into boards (owner_id, title, hidden) values ('` + alice + `', 'private', true);`)
	plain := server(t, "boards", b.resource("boards", nil))
	perm := server(t, "boards", b.resource("boards", &Config{
		Permissions: map[Operation]string{OpUpdate: "boards.write", OpDelete: "boards.write"},
		Authorizer:  AuthorizerFunc(func(context.Context, *AuthzRequest) (Decision, error) { return Allowed(), nil }),
	}))
	for _, c := range []struct {
		name string
		s    string
	}{{"plain", "plain"}, {"with permission", "perm"}} {
		s := plain
		if c.s == "perm" {
			s = perm
		}
		t.Run(c.name, func(t *testing.T) {
			// bob reads row 1 but may not change it.
			if r := do(t, s, "GET", "/api/boards/1", bob, ""); r.status != 200 {
				t.Fatalf("bob reads the shared board: %s", r)
			}
			p := isProblem(t, do(t, s, "PATCH", "/api/boards/1", bob, `{"title":"mine now"}`), 403, "forbidden")
			if d, _ := p["detail"].(string); !strings.Contains(d, "does not let you update it") {
				t.Errorf("PATCH detail %q", d)
			}
			p = isProblem(t, do(t, s, "DELETE", "/api/boards/1", bob, ""), 403, "forbidden")
			if d, _ := p["detail"].(string); !strings.Contains(d, "does not let you delete it") {
				t.Errorf("DELETE detail %q", d)
			}
			// Row 2 is hidden from bob, row 99 does not exist: both 404.
			for _, path := range []string{"/api/boards/2", "/api/boards/99"} {
				isProblem(t, do(t, s, "PATCH", path, bob, `{"title":"x"}`), 404, "not_found")
				isProblem(t, do(t, s, "DELETE", path, bob, ""), 404, "not_found")
			}
		})
	}
	// The refused writes changed nothing; the owner still may.
	var title string
	if err := b.pool.QueryRow(context.Background(), `select title from boards where id = 1`).Scan(&title); err != nil || title != "shared" {
		t.Fatalf("row 1 after refused writes: %q %v", title, err)
	}
	if r := do(t, plain, "PATCH", "/api/boards/1", alice, `{"title":"renamed"}`); r.status != 200 {
		t.Fatalf("owner update: %s", r)
	}
}

// TestFilterValuesColumnsCannotHold: a NUL byte or invalid UTF-8 in a
// filter value answers 400 naming the parameter (not Postgres's 422), and
// an order term naming an unknown column names that column.
func TestFilterValuesColumnsCannotHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", nil))
	for _, q := range []string{"title=eq.a%00b", "title=eq.%FF%FE", "title=in.(a,%00)", "title=like.%C3*", "title=not.eq.%00"} {
		p := isProblem(t, do(t, s, "GET", "/api/todos?"+q, alice, ""), 400, "bad_request")
		if d, _ := p["detail"].(string); !strings.Contains(d, `"title"`) || !strings.Contains(d, "NUL byte or invalid UTF-8") {
			t.Errorf("%s: detail %q", q, d)
		}
	}
	p := isProblem(t, do(t, s, "GET", "/api/todos?order=title,nope.desc", alice, ""), 400, "bad_request")
	if d, _ := p["detail"].(string); !strings.Contains(d, `"nope"`) || !strings.Contains(d, "selected: id, owner_id, title") {
		t.Errorf("unknown order column: detail %q", d)
	}
	long := strings.Repeat("x", 500)
	p = isProblem(t, do(t, s, "GET", "/api/todos?order="+long, alice, ""), 400, "bad_request")
	if d, _ := p["detail"].(string); strings.Contains(d, long) {
		t.Errorf("a long unknown column is echoed whole: %d bytes", len(d))
	}
	// Valid UTF-8 beyond ASCII still filters.
	if r := do(t, s, "GET", "/api/todos?title=eq.%C3%A9t%C3%A9", alice, ""); r.status != 200 {
		t.Errorf("UTF-8 filter: %s", r)
	}
}

// TestBodiesTextCannotHold: a body the JSON decoder would change
// (invalid UTF-8 or half a surrogate pair, stored as U+FFFD) or that
// Postgres cannot store (a NUL) answers 400 and writes nothing; escapes
// that decode to real characters still work.
func TestBodiesTextCannotHold(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", nil))
	created := do(t, s, "POST", "/api/todos", alice, `{"title":"mine"}`)
	var row map[string]any
	if err := json.Unmarshal([]byte(created.body), &row); err != nil || created.status != 201 {
		t.Fatalf("create: %s %v", created, err)
	}
	item := fmt.Sprintf("/api/todos/%v", row["id"])
	for _, c := range []struct{ body, detail string }{
		{"{\"title\":\"a\xff\xfeb\"}", "not valid UTF-8"},
		{`{"title":"a\ud800b"}`, "surrogate"},
		{`{"title":"a\uDC00b"}`, "surrogate"},
		{`{"title":"a\ud800\u0041"}`, "surrogate"},
		{`{"title":"\\\ud800"}`, "surrogate"},
		{`{"title":"a\u0000b"}`, "NUL"},
	} {
		for _, op := range []struct{ method, path string }{{"POST", "/api/todos"}, {"PATCH", item}} {
			p := isProblem(t, do(t, s, op.method, op.path, alice, c.body), 400, "bad_request")
			if d, _ := p["detail"].(string); !strings.Contains(d, c.detail) {
				t.Errorf("%s %q: detail %q", op.method, c.body, d)
			}
		}
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), `select count(*) from todos where title like '%' || chr(65533) || '%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows with U+FFFD: %d %v", n, err)
	}
	// A pair, an escaped backslash before "u", and plain escapes decode.
	for _, body := range []string{`{"title":"\ud83d\ude00"}`, `{"title":"\\ud800"}`, `{"title":"\u00e9\n\"x\""}`} {
		if r := do(t, s, "POST", "/api/todos", alice, body); r.status != 201 {
			t.Errorf("POST %s: %s", body, r)
		}
	}
}

// TestInputSchemaFollowsNullability: an input schema built from a struct
// of pointers admits null for every field; for NOT NULL columns the
// resource removes null, in validation and in the description.
func TestInputSchemaFollowsNullability(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type patch struct {
		Title    *string `json:"title,omitempty"`
		Done     *bool   `json:"done,omitempty"`
		Priority *int    `json:"priority,omitempty"`
	}
	given := MustSchemaFor[patch]()
	r := b.resource("todos", &Config{Input: map[Operation]*jsonschema.Schema{OpUpdate: given}})
	s := server(t, "todos", r)
	id := decode(t, do(t, s, "POST", "/api/todos", alice, `{"title":"t"}`).body)["id"].(string)
	p := isProblem(t, do(t, s, "PATCH", "/api/todos/"+id, alice, `{"done":null}`), 400, "bad_request")
	if errs, _ := json.Marshal(p["errors"]); !strings.Contains(string(errs), `"/done"`) {
		t.Errorf("errors %s", errs)
	}
	isProblem(t, do(t, s, "PATCH", "/api/todos/"+id, alice, `{"title":null}`), 400, "bad_request")
	if r := do(t, s, "PATCH", "/api/todos/"+id, alice, `{"priority":null,"done":true}`); r.status != 200 {
		t.Errorf("nullable column set to null: %s", r)
	}
	oi, _ := r.Describe().Operation(OpUpdate)
	for name, want := range map[string]string{"title": `"type":"string"`, "done": `"type":"boolean"`, "priority": `"type":["null","integer"]`} {
		b, _ := json.Marshal(oi.Input.Properties[name])
		if !strings.Contains(string(b), want) {
			t.Errorf("described %s: %s, want %s", name, b, want)
		}
	}
	// The caller's schema is not modified.
	if b, _ := json.Marshal(given.Properties["done"]); !strings.Contains(string(b), "null") {
		t.Errorf("the given schema was changed: %s", b)
	}
}
