package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/mcptools"
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
		Caller:      callerOf,
		Actions:     map[string]*rest.Action{"complete": complete, "export": export, "purge": purge},
	}
}

// demoAuthorizer grants todos.delete to claim role admin; todos.purge may
// be asked by any signed-in user and needs an approval by another user
// holding the approver role (tablegate.approvals).
func demoAuthorizer(d *db.DB) (*authz.Authorizer, error) {
	return authz.Claims(authz.Rules{
		"todos.delete": authz.Role("admin"),
		"todos.purge":  authz.SignedIn(),
	}, &authz.Options{
		DenyServices: true,
		Approvals:    &authz.ApprovalOptions{DB: d, Permissions: []string{"todos.purge"}},
	})
}

// demoAPIParts are what the demo serves under /api.
type demoAPIParts struct {
	// api serves /api/todos.
	api http.Handler
	// approvals serves /api/approvals (list, get, approve, deny).
	approvals http.Handler
	// mcp serves the same operations as MCP tools (Streamable HTTP).
	mcp http.Handler
}

// demoAllow is the allow list of /api/todos and /mcp.
var demoAllow = []authctx.Allow{authctx.AllowUser, authctx.AllowAnonymous}

// buildDemoAPI builds the todos resource, the approvals endpoint and the
// MCP tools of the same resource.
func buildDemoAPI(ctx context.Context, d *db.DB, rv *authctx.Resolver) (*demoAPIParts, error) {
	authorizer, err := demoAuthorizer(d)
	if err != nil {
		return nil, err
	}
	opts := demoTodoOptions()
	opts.Authorizer = authorizer
	todos, err := rest.NewResource(ctx, d, "public.todos", opts)
	if err != nil {
		return nil, fmt.Errorf("todos resource: %w", err)
	}
	mux := http.NewServeMux()
	h := authctx.Guard(demoAllow...)(http.StripPrefix("/api/todos", todos))
	mux.Handle("/api/todos", h)
	mux.Handle("/api/todos/", h)
	tools, err := mcptools.New(mcptools.Config{Resources: []*rest.Resource{todos}, Title: "tablegate demo", Version: "1.0.0"})
	if err != nil {
		return nil, fmt.Errorf("MCP tools: %w", err)
	}
	mcpHandler, err := tools.Handler(mcptools.HTTPOptions{Resolver: rv, Allow: demoAllow})
	if err != nil {
		return nil, fmt.Errorf("MCP handler: %w", err)
	}
	approvals := authz.NewApprovals(d).Handler(nil)
	return &demoAPIParts{
		api:       problemFallback(mux),
		approvals: authctx.Guard(authctx.AllowUser)(http.StripPrefix("/api/approvals", approvals)),
		mcp:       mcpHandler,
	}, nil
}

// callerOf is the rest resources' caller: the state the resolver
// middleware stored in the request context.
func callerOf(r *http.Request) (authctx.Auth, error) { return authctx.AuthFrom(r.Context()), nil }
