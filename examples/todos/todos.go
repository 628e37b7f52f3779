// Package todos is a small tablegate app: todos per tenant served as a
// REST resource whose data access is sqlc-generated (package todosql),
// with a hook and two actions. Row-level security (schema.sql) decides
// which todos a caller sees: members of the token's tenant, never guests.
//
// Regenerate the queries after editing queries.sql or schema.sql:
//
//	go generate ./examples/todos
package todos

//go:generate env GOWORK=off go tool -modfile=../../tools/go.mod sqlc generate -f sqlc.yaml

import (
	"context"
	_ "embed"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/examples/todos/todosql"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Schema creates the todos table and its policies, on top of tablegate's
// migrations.
//
//go:embed schema.sql
var Schema string

// CreateInput is the body of POST /todos.
type CreateInput struct {
	Title string `json:"title" jsonschema:"what to do"`
}

// UpdateInput is the body of PATCH /todos/{id}.
type UpdateInput struct {
	Title *string `json:"title,omitempty"`
	Done  *bool   `json:"done,omitempty"`
}

// Stats is the output of GET /todos/stats.
type Stats struct {
	Open int64 `json:"open"`
}

// New builds the todos resource on d. caller resolves the caller of a
// request; nil reads the state stored by the authctx middleware.
func New(ctx context.Context, d *db.DB, caller func(*http.Request) (authctx.Auth, error)) (*rest.Resource, error) {
	q := todosql.New()
	return rest.NewResource(ctx, d, "todos", &rest.Config{
		Caller:     caller,
		Select:     []string{"id", "tenant_id", "owner_id", "title", "done", "created_at"},
		ReadOnly:   []string{"tenant_id", "owner_id", "created_at"},
		Repository: &Repository{q: q},
		Input: map[rest.Operation]*jsonschema.Schema{
			rest.OpCreate: rest.MustSchemaFor[CreateInput](),
			rest.OpUpdate: rest.MustSchemaFor[UpdateInput](),
		},
		Hooks: rest.Hooks{
			BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
				title := strings.TrimSpace(data["title"].(string))
				if title == "" {
					return nil, problem.New(problem.KindUnprocessable, "The title is blank.")
				}
				data["title"] = title
				return data, nil
			},
			BeforeDeleteFunc: func(c *rest.Ctx, t *rest.Target) error {
				if t.Row["done"] != true {
					return problem.New(problem.KindConflict, "Only done todos can be deleted.")
				}
				return nil
			},
		},
		Actions: map[string]*rest.Action{
			"complete": rest.DefineAction(rest.ActionDef[rest.None, rest.None, todosql.Todo]{
				Method: "POST", Path: "/{id}/complete", Summary: "Mark a todo done",
				Emits: []string{"todo.completed"},
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (todosql.Todo, error) {
					if in.Row["done"] == true {
						return todosql.Todo{}, problem.New(problem.KindConflict, "The todo is already done.")
					}
					return q.TodoComplete(c, c.DB, in.ID.(string))
				},
			}),
			"stats": rest.DefineAction(rest.ActionDef[rest.None, rest.None, Stats]{
				Method: "GET", Path: "/stats", Summary: "Count open todos",
				Handler: func(c *rest.Ctx, _ rest.ActionInput[rest.None, rest.None]) (Stats, error) {
					n, err := q.TodoCountOpen(c, c.DB)
					return Stats{Open: n}, err
				},
			}),
		},
	})
}
