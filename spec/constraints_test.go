package spec_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

type constrainedTodo struct {
	Title    string `json:"title" jsonschema:"What to do." tablegate:"minLength=3,maxLength=80"`
	Priority int    `json:"priority,omitempty" tablegate:"minimum=1,maximum=5"`
}

type renameTodo struct {
	Title string `json:"title" tablegate:"minLength=3"`
}

// TestConstraintKeywordsInDocument: the tablegate tag's keywords on a
// create input and on an action's inferred input appear in the OpenAPI
// document, where the validator reads them too.
func TestConstraintKeywordsInDocument(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), fixtureSQL); err != nil {
		t.Fatal(err)
	}
	todos, err := rest.NewResource(context.Background(), db.New(pool, nil), "todos", &rest.Config{
		Caller: testCaller,
		Input:  map[rest.Operation]*jsonschema.Schema{rest.OpCreate: rest.MustSchemaFor[constrainedTodo]()},
		Actions: map[string]*rest.Action{"rename": rest.DefineAction(rest.ActionDef[renameTodo, rest.None, rest.None]{
			Method: "POST", Path: "/{id}/rename",
			Handler: func(*rest.Ctx, rest.ActionInput[renameTodo, rest.None]) (rest.None, error) { return rest.None{}, nil },
		})},
	})
	if err != nil {
		t.Fatal(err)
	}
	api, err := spec.DefineAPI(&spec.Config{Info: spec.Info{Title: "T", Version: "1"}, BasePath: "/api",
		Resources: map[string]*rest.Resource{"todos": todos}})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			RequestBody struct {
				Content map[string]struct {
					Schema json.RawMessage `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]json.RawMessage `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	resolve := func(raw json.RawMessage) map[string]any {
		var s map[string]any
		_ = json.Unmarshal(raw, &s)
		if ref, ok := s["$ref"].(string); ok {
			const prefix = "#/components/schemas/"
			_ = json.Unmarshal(doc.Components.Schemas[ref[len(prefix):]], &s)
		}
		return s
	}
	prop := func(path, method, name string) map[string]any {
		op, ok := doc.Paths[path][method]
		if !ok {
			t.Fatalf("no %s %s in %v", method, path, doc.Paths)
		}
		s := resolve(op.RequestBody.Content["application/json"].Schema)
		props, _ := s["properties"].(map[string]any)
		p, _ := props[name].(map[string]any)
		return p
	}
	create := prop("/todos", "post", "title")
	if create["minLength"] != 3.0 || create["maxLength"] != 80.0 || create["description"] != "What to do." {
		t.Errorf("create body title: %v", create)
	}
	if p := prop("/todos", "post", "priority"); p["minimum"] != 1.0 || p["maximum"] != 5.0 {
		t.Errorf("create body priority: %v", p)
	}
	if p := prop("/todos/{id}/rename", "post", "title"); p["minLength"] != 3.0 {
		t.Errorf("action body title: %v", p)
	}
}
