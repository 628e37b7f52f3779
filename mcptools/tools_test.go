package mcptools_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/rest"
)

// TestToolsList lists the tools with the SDK's client and checks names,
// schemas and annotations against the resources' descriptions.
func TestToolsList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs := b.session(user(alice))
	lr, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	tools := map[string]*mcp.Tool{}
	for _, tl := range lr.Tools {
		names = append(names, tl.Name)
		tools[tl.Name] = tl
	}
	want := []string{"listTodos", "getTodo", "createTodo", "updateTodo", "deleteTodo",
		"archiveTodos", "completeTodos", "statsTodos", "listTags", "getTag"}
	slices.Sort(want)
	slices.Sort(names)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}
	// The names are the operation ids of the descriptions (OpenAPI's).
	for _, r := range []*rest.Resource{b.todos, b.tags} {
		for _, op := range r.Describe().Operations {
			if tools[op.ID] == nil {
				t.Errorf("operation %s (%s) has no tool", op.Operation, op.ID)
			}
		}
	}
	// tags serves list and get only: no createTag, updateTag, deleteTag.
	for _, n := range []string{"createTag", "updateTag", "deleteTag"} {
		if tools[n] != nil {
			t.Errorf("unserved operation %s is a tool", n)
		}
	}

	schema := func(name string, which string) map[string]any {
		t.Helper()
		tl := tools[name]
		var v any = tl.InputSchema
		if which == "output" {
			v = tl.OutputSchema
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s schema %s: %v", name, which, raw, err)
		}
		return m
	}
	prop := func(m map[string]any, path ...string) map[string]any {
		t.Helper()
		cur := m
		for _, p := range path {
			next, ok := cur[p].(map[string]any)
			if !ok {
				t.Fatalf("schema has no %v: %v", path, m)
			}
			cur = next
		}
		return cur
	}
	required := func(m map[string]any) []string {
		var out []string
		for _, x := range m["required"].([]any) {
			out = append(out, x.(string))
		}
		return out
	}

	// getTodo: the key argument typed by the uuid key column.
	in := schema("getTodo", "input")
	if id := prop(in, "properties", "id"); id["type"] != "string" || id["format"] != "uuid" {
		t.Errorf("getTodo id schema %v", id)
	}
	if r := required(in); !slices.Equal(r, []string{"id"}) {
		t.Errorf("getTodo required %v", r)
	}
	// getTag: a bigserial key is an integer.
	if id := prop(schema("getTag", "input"), "properties", "id"); id["type"] != "integer" {
		t.Errorf("getTag id schema %v", id)
	}
	// createTodo: data is the create body schema (title required, owner_id read-only).
	data := prop(schema("createTodo", "input"), "properties", "data")
	if r := required(data); !slices.Equal(r, []string{"title"}) {
		t.Errorf("createTodo data required %v", r)
	}
	if _, ok := prop(data, "properties")["owner_id"]; ok {
		t.Errorf("createTodo data offers read-only owner_id")
	}
	// updateTodo: key and data.
	if r := required(schema("updateTodo", "input")); !slices.Equal(r, []string{"id", "data"}) {
		t.Errorf("updateTodo required %v", r)
	}
	// listTodos: the list parameters, filters by selected column.
	lin := prop(schema("listTodos", "input"), "properties")
	for _, p := range []string{"filters", "order", "limit", "cursor", "count"} {
		if _, ok := lin[p]; !ok {
			t.Errorf("listTodos has no %s argument", p)
		}
	}
	var fcols []string
	for _, c := range prop(lin, "filters", "propertyNames")["enum"].([]any) {
		fcols = append(fcols, c.(string))
	}
	if !slices.Equal(fcols, []string{"id", "owner_id", "title", "done", "priority"}) {
		t.Errorf("listTodos filter columns %v (the selected ones)", fcols)
	}
	if max := prop(lin, "limit")["maximum"]; max != float64(rest.DefaultMaxLimit) {
		t.Errorf("limit maximum %v", max)
	}
	// Actions: input and query schemas from the action definitions.
	if ids := prop(schema("completeTodos", "input"), "properties", "data", "properties", "ids"); !slices.Contains(ids["type"].([]any), any("array")) {
		t.Errorf("completeTodos data.ids %v", ids)
	}
	if mp := prop(schema("statsTodos", "input"), "properties", "query", "properties", "min_priority"); mp["type"] != "integer" {
		t.Errorf("statsTodos query.min_priority %v", mp)
	}
	if r := required(schema("archiveTodos", "input")); !slices.Equal(r, []string{"id"}) {
		t.Errorf("archiveTodos required %v", r)
	}

	// Output schemas: the row of the select list; a page for list; none for 204s.
	row := prop(schema("getTodo", "output"), "properties")
	for _, c := range []string{"id", "owner_id", "title", "done", "priority"} {
		if _, ok := row[c]; !ok {
			t.Errorf("getTodo output lacks %s", c)
		}
	}
	if _, ok := row["created_at"]; ok {
		t.Errorf("getTodo output has unselected created_at")
	}
	page := prop(schema("listTodos", "output"), "properties")
	if it := prop(page, "items", "items", "properties"); it["title"] == nil {
		t.Errorf("listTodos items %v", it)
	}
	if _, ok := page["next_cursor"]; !ok {
		t.Errorf("listTodos output lacks next_cursor")
	}
	if prop(schema("statsTodos", "output"), "properties")["open"] == nil {
		t.Errorf("statsTodos output")
	}
	for _, n := range []string{"deleteTodo", "archiveTodos"} {
		if tools[n].OutputSchema != nil {
			t.Errorf("%s has an output schema", n)
		}
	}

	// Descriptions and titles from summaries.
	if tools["statsTodos"].Title != "Count todos" || tools["statsTodos"].Description == "" {
		t.Errorf("statsTodos title %q description %q", tools["statsTodos"].Title, tools["statsTodos"].Description)
	}

	for n, want := range map[string]string{"listTodos": "List todos", "getTodo": "Get one row of todos",
		"createTodo": "Create a row in todos", "updateTodo": "Update a row of todos", "deleteTodo": "Delete a row of todos",
		"completeTodos": "Complete todos"} {
		if got := tools[n].Title; got != want {
			t.Errorf("%s title %q, want %q", n, got, want)
		}
	}

	// Annotations.
	type hints struct{ readOnly, destructive, idempotent bool }
	hint := func(n string) hints {
		a := tools[n].Annotations
		if a == nil {
			t.Fatalf("%s has no annotations", n)
		}
		d := true // MCP default
		if a.DestructiveHint != nil {
			d = *a.DestructiveHint
		}
		if a.OpenWorldHint == nil || *a.OpenWorldHint {
			t.Errorf("%s: openWorldHint should be false", n)
		}
		return hints{a.ReadOnlyHint, d, a.IdempotentHint}
	}
	for n, want := range map[string]hints{
		"listTodos":     {readOnly: true, destructive: true, idempotent: true}, // destructive is meaningless when read-only
		"getTodo":       {readOnly: true, destructive: true, idempotent: true},
		"statsTodos":    {readOnly: true, destructive: true, idempotent: true},
		"createTodo":    {readOnly: false, destructive: false, idempotent: false},
		"updateTodo":    {readOnly: false, destructive: true, idempotent: true},
		"deleteTodo":    {readOnly: false, destructive: true, idempotent: true},
		"completeTodos": {readOnly: false, destructive: true, idempotent: false},
	} {
		if got := hint(n); got != want {
			t.Errorf("%s hints %+v, want %+v", n, got, want)
		}
	}
}
