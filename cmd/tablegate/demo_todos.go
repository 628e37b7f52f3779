package main

import (
	"context"
	"crypto/rand"
	"net/http"

	"encoding/hex"
	"fmt"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// todoColumns are the columns every todos operation returns.
var todoColumns = []string{"id", "tenant_id", "owner_id", "title", "done", "created_at"}

// todoCreate is the create body: title required, done optional.
type todoCreate struct {
	Title string `json:"title"`
	Done  *bool  `json:"done,omitempty"`
}

// todoUpdate is the update body: both optional, no other keys.
type todoUpdate struct {
	Title *string `json:"title,omitempty"`
	Done  *bool   `json:"done,omitempty"`
}

// exportQuery is the query of the export action.
type exportQuery struct {
	Done *bool `json:"done,omitempty"`
}

// exportOutput is the export action's output.
type exportOutput struct {
	Items []rest.Row `json:"items"`
}

// purgeOutput is the purge action's output.
type purgeOutput struct {
	Deleted int64 `json:"deleted"`
}

// withTitleLimits bounds the title property like the table's check.
func withTitleLimits(s *jsonschema.Schema) *jsonschema.Schema {
	one, max := 1, 200
	if p := s.Properties["title"]; p != nil {
		p.MinLength, p.MaxLength = &one, &max
	}
	return s
}

// demoAuthorizer grants todos.delete to claim role admin and todos.purge to
// claim role approver; everyone else needs an approval for purge.
var demoAuthorizer = rest.AuthorizerFunc(func(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	roles := claimRoles(req.Caller.Claims)
	switch req.Permission {
	case "todos.delete":
		if slices.Contains(roles, "admin") {
			return rest.Allowed, nil
		}
	case "todos.purge":
		if slices.Contains(roles, "approver") {
			return rest.Allowed, nil
		}
		var b [8]byte
		_, _ = rand.Read(b[:])
		return rest.ApprovalRequired("apr_" + hex.EncodeToString(b[:])), nil
	}
	return rest.Denied, nil
})

func claimRoles(c map[string]any) []string {
	list, _ := c["roles"].([]any)
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

const todoReturning = ` returning id, tenant_id, owner_id, title, done, created_at`

// scanTodo reads one todos row as rest.Row.
func scanTodos(q db.Querier, c *rest.Ctx, sql string, args ...any) ([]rest.Row, error) {
	rows, err := q.Query(c, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []rest.Row
	for rows.Next() {
		var (
			id            int64
			tenant, owner string
			title         string
			done          bool
			created       any
		)
		if err := rows.Scan(&id, &tenant, &owner, &title, &done, &created); err != nil {
			return nil, err
		}
		out = append(out, rest.Row{"id": id, "tenant_id": tenant, "owner_id": owner, "title": title, "done": done, "created_at": created})
	}
	return out, rows.Err()
}

// demoTodoOptions are the options of /api/todos.
func demoTodoOptions() *rest.Options {
	complete := rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.Row]{
		Method: "POST", Path: "/{id}/complete",
		Summary: "Mark a todo done", Emits: []string{"todo.completed"},
		Output: rest.SchemaFor[rest.Row](),
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.Row, error) {
			rows, err := scanTodos(c.DB, c, `update public.todos set done = true where id = $1`+todoReturning, in.ID)
			if err != nil {
				return nil, err
			}
			if len(rows) == 0 {
				return nil, problem.New(problem.KindForbidden, "Only the owner, signed in with a full account, may complete this todo.")
			}
			return rows[0], nil
		},
	})
	export := rest.DefineAction(rest.ActionDef[rest.None, exportQuery, exportOutput]{
		Method: "GET", Path: "/export", Summary: "Export the visible todos",
		Query: &jsonschema.Schema{
			Type:                 "object",
			Properties:           map[string]*jsonschema.Schema{"done": {Type: "boolean", Description: "only todos with this done flag"}},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, exportQuery]) (exportOutput, error) {
			rows, err := scanTodos(c.DB, c, `select id, tenant_id, owner_id, title, done, created_at from public.todos
			  where $1::boolean is null or done = $1 order by id`, in.Query.Done)
			if rows == nil {
				rows = []rest.Row{}
			}
			return exportOutput{Items: rows}, err
		},
	})
	purge := rest.DefineAction(rest.ActionDef[rest.None, rest.None, purgeOutput]{
		Method: "POST", Path: "/purge", Summary: "Delete your completed todos", Permission: "todos.purge",
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (purgeOutput, error) {
			tag, err := c.DB.Exec(c, `delete from public.todos where done`)
			if err != nil {
				return purgeOutput{}, err
			}
			return purgeOutput{Deleted: tag.RowsAffected()}, nil
		},
	})
	return &rest.Options{
		Select: todoColumns,
		Input: map[rest.Operation]*jsonschema.Schema{
			rest.OpCreate: withTitleLimits(rest.SchemaFor[todoCreate]()),
			rest.OpUpdate: withTitleLimits(rest.SchemaFor[todoUpdate]()),
		},
		Permissions: map[rest.Operation]string{rest.OpDelete: "todos.delete"},
		Authorizer:  demoAuthorizer,
		Caller:      callerOf,
		Actions:     map[string]*rest.Action{"complete": complete, "export": export, "purge": purge},
	}
}

// demoAPI returns the handler of /api/: the todos resource behind a guard
// that admits full users and anonymous sign-ins.
func demoAPI(ctx context.Context, d *db.DB) (http.Handler, error) {
	todos, err := rest.NewResource(ctx, d, "public.todos", demoTodoOptions())
	if err != nil {
		return nil, fmt.Errorf("todos resource: %w", err)
	}
	mux := http.NewServeMux()
	guard := guardWith("user", "anonymous")
	h := guard(http.StripPrefix("/api/todos", todos))
	mux.Handle("/api/todos", h)
	mux.Handle("/api/todos/", h)
	return problemFallback(mux), nil
}
