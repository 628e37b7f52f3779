package rest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type todoCreate struct {
	Title    string `json:"title"`
	Priority int    `json:"priority,omitempty"`
}

type todoLabel struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// TestDescribeAndInputSchemas: the description carries columns with
// Postgres types, the key, schemas, permissions and reshaped outputs;
// an input schema refuses bodies before the repository, naming paths.
func TestDescribeAndInputSchemas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("todos", &Config{
		Select:      []string{"id", "title", "done", "created_at", "seq"},
		Operations:  []Operation{OpList, OpGet, OpCreate, OpUpdate},
		Input:       map[Operation]*jsonschema.Schema{OpCreate: MustSchemaFor[todoCreate]()},
		Output:      map[Operation]*jsonschema.Schema{OpGet: MustSchemaFor[todoLabel]()},
		Permissions: map[Operation]string{OpCreate: "todos.create"},
		Authorizer:  AuthorizerFunc(func(context.Context, *AuthzRequest) (Decision, error) { return Allowed(), nil }),
		Hooks: Hooks{AfterGetFunc: func(c *Ctx, row Row) (any, error) {
			return todoLabel{ID: row["id"].(string), Label: strings.ToUpper(row["title"].(string))}, nil
		}},
	})
	d := res.Describe()
	if d.Table != "todos" || d.Schema != "public" || d.Key.Name != "id" || d.Key.Type != "uuid" {
		t.Errorf("key %+v", d.Key)
	}
	types := map[string]string{}
	for _, c := range d.Columns {
		types[c.Name] = c.Type
	}
	if types["created_at"] != "timestamp with time zone" || types["done"] != "boolean" || types["seq"] != "bigint" || len(d.Columns) != 5 {
		t.Errorf("columns %v", types)
	}
	if len(d.AllColumns) != 9 {
		t.Errorf("all columns %d", len(d.AllColumns))
	}
	for _, c := range d.AllColumns {
		if c.Name == "seq" && !c.ReadOnly || c.Name == "title" && (c.ReadOnly || !c.NotNull) || c.Name == "secret" && c.Selected {
			t.Errorf("column %+v", c)
		}
	}
	row, _ := json.Marshal(d.Row)
	if ca := d.Row.Properties["created_at"]; ca == nil || ca.Type != "string" || ca.Format != "date-time" {
		t.Errorf("row schema %s", row)
	}
	if _, ok := d.Operation(OpDelete); ok {
		t.Error("delete described but not served")
	}
	get, _ := d.Operation(OpGet)
	if get.Output == nil || get.Output.Properties["label"] == nil || get.Permission != "" || get.Path != "/{id}" {
		t.Errorf("get %+v", get)
	}
	create, _ := d.Operation(OpCreate)
	if create.Input.Properties["title"] == nil || create.Status != 201 || create.Permission != "todos.create" || create.ID != "createTodo" {
		t.Errorf("create %+v", create)
	}
	upd, _ := d.Operation(OpUpdate)
	ub, _ := json.Marshal(upd.Input)
	if strings.Contains(string(ub), `"seq"`) || strings.Contains(string(ub), `"id"`) || !strings.Contains(string(ub), `"title"`) {
		t.Errorf("update body schema %s", ub)
	}

	s := server(t, "todos", res)
	m := isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"priority":"high"}`), 400, "bad_request")
	errs, _ := json.Marshal(m["errors"])
	if !strings.Contains(string(errs), `"/title"`) || !strings.Contains(string(errs), `"/priority"`) || strings.Contains(string(errs), "high") {
		t.Errorf("errors %s", errs)
	}
	r := do(t, s, "POST", "/api/todos", alice, `{"title":"abc","priority":3}`)
	if r.status != 201 {
		t.Fatal(r)
	}
	id := decode(t, r.body)["id"].(string)
	if r := do(t, s, "GET", "/api/todos/"+id, alice, ""); r.body != `{"id":"`+id+`","label":"ABC"}` {
		t.Errorf("reshaped get: %s", r)
	}
}
