package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// A todos table served under /api/todos with a permission on delete, a
// hook that stamps new rows and an item action.
func ExampleNewResource() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost/app")
	if err != nil {
		log.Fatal(err)
	}
	d := db.New(pool, nil)

	type completeIn struct {
		Note string `json:"note,omitempty"`
	}
	todos, err := rest.NewResource(ctx, d, "todos", &rest.Config{
		Select:      []string{"id", "title", "done", "created_at"},
		Permissions: map[rest.Operation]string{rest.OpDelete: "todos.delete"},
		Hooks: rest.Hooks{
			BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
				if data["title"] == "" {
					return nil, problem.New(problem.KindUnprocessable, "A title is required.")
				}
				data["done"] = false
				return data, nil
			},
		},
		Actions: map[string]*rest.Action{
			"complete": rest.DefineAction(rest.ActionDef[completeIn, rest.None, rest.None]{
				Method: "POST", Path: "/{id}/complete",
				Handler: func(c *rest.Ctx, in rest.ActionInput[completeIn, rest.None]) (rest.None, error) {
					// c.DB is the caller-bound transaction: RLS applies.
					_, err := c.DB.Exec(c, "update todos set done = true where id = $1", in.ID)
					return rest.None{}, err
				},
			}),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", todos))
	mux.Handle("/api/todos", http.StripPrefix("/api/todos", todos))
	log.Fatal(http.ListenAndServe(":8080", mux))
}

func ExampleOperationID() {
	for _, op := range []rest.Operation{rest.OpList, rest.OpGet, rest.OpCreate, "complete"} {
		fmt.Println(rest.OperationID("todos", op))
	}
	// Output:
	// listTodos
	// getTodo
	// createTodo
	// completeTodos
}

func ExampleDefineAction() {
	type exportQuery struct {
		Limit int `json:"limit,omitempty"`
	}
	export := rest.DefineAction(rest.ActionDef[rest.None, exportQuery, []string]{
		Method: "GET", Path: "/export", Summary: "Export titles",
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, exportQuery]) ([]string, error) {
			return []string{"a", "b"}, nil
		},
	})
	q, _ := export.Query.MarshalJSON()
	fmt.Println(export.Status, export.Input == nil, string(q))
	// Output:
	// 200 true {"type":"object","properties":{"limit":{"type":"integer"}},"additionalProperties":false}
}

// Constraining a body from Go: validation keywords in the tablegate tag
// (the jsonschema tag is the description), and the returned schema edited
// for anything else. The same schema validates bodies (400 naming the
// path and keyword) and describes them in the OpenAPI document.
func ExampleSchemaFor() {
	type newProject struct {
		Name  string   `json:"name" jsonschema:"The project's name." tablegate:"minLength=3,maxLength=80"`
		Plan  string   `json:"plan" tablegate:"enum=free|team"`
		Seats int      `json:"seats,omitempty" tablegate:"minimum=1,maximum=500"`
		Tags  []string `json:"tags,omitempty" tablegate:"maxItems=5,uniqueItems"`
		Slug  string   `json:"slug,omitempty"`
	}
	s, err := rest.SchemaFor[newProject]()
	if err != nil {
		log.Fatal(err)
	}
	s.Properties["slug"].Pattern = "^[a-z0-9-]+$" // or tablegate:"pattern=^[a-z0-9-]+$"
	b, _ := json.Marshal(s.Properties)
	fmt.Println(string(b))

	// Use it as the create body of a resource (or as ActionDef.Input):
	//
	//	rest.NewResource(ctx, d, "projects", &rest.Config{
	//		Input:    map[rest.Operation]*jsonschema.Schema{rest.OpCreate: s},
	//		ReadOnly: []string{"created_by"}, // default auth.uid(): never from the body
	//	})

	// Output:
	// {"name":{"type":"string","description":"The project's name.","minLength":3,"maxLength":80},"plan":{"type":"string","enum":["free","team"]},"seats":{"type":"integer","minimum":1,"maximum":500},"slug":{"type":"string","pattern":"^[a-z0-9-]+$"},"tags":{"type":["null","array"],"items":{"type":"string"},"maxItems":5,"uniqueItems":true}}
}
