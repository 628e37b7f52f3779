package demo

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/mcpdiscovery"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/spec/reference"
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

// demoTodoOptions are the options of /api/todos.
func demoTodoOptions() *rest.Config {
	// complete and export return rows as the resource renders them
	// (rest.RowJSON, rest.Rows): same keys, order and formats as GET, and
	// described by the row schema without writing one.
	complete := rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.RowJSON]{
		Method: "POST", Path: "/{id}/complete",
		Summary: "Mark a todo done", Emits: []string{"todo.completed"},
		Description: "Sets done on a todo you own and answers the row. Readable todos of others answer 403.",
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.RowJSON, error) {
			tag, err := c.DB.Exec(c, `update public.todos set done = true where id = $1`, in.ID)
			if err != nil {
				return nil, rest.DBProblem(err)
			}
			if tag.RowsAffected() == 0 {
				return nil, problem.New(problem.KindForbidden, "Only the owner, signed in with a full account, may complete this todo.")
			}
			row, err := c.Row(in.ID)
			if err != nil {
				return nil, err
			}
			// Delivered to the subscribers who may read this todo, when
			// (and only if) the transaction commits.
			return row, events.Emit(c, "todo.completed", row, &events.EmitOpts{Key: in.ID})
		},
	})
	export := rest.DefineAction(rest.ActionDef[rest.None, exportQuery, rest.Rows]{
		Method: "GET", Path: "/export", Summary: "Export the visible todos",
		Description: "Up to 1000 todos you can see, oldest first, optionally only done or open ones.",
		Query: &jsonschema.Schema{
			Type:                 "object",
			Properties:           map[string]*jsonschema.Schema{"done": {Type: "boolean", Description: "only todos with this done flag"}},
			AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
		},
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, exportQuery]) (rest.Rows, error) {
			q := "order=id&limit=1000"
			if in.Query.Done != nil {
				q += "&done=eq." + strconv.FormatBool(*in.Query.Done)
			}
			return c.Rows(q)
		},
	})
	purge := rest.DefineAction(rest.ActionDef[rest.None, rest.None, purgeOutput]{
		Method: "POST", Path: "/purge", Summary: "Delete your completed todos", Permission: "todos.purge",
		Description: "Deletes the done todos you own. Needs an approval by another user holding the approver role: " +
			"the first call answers 403 APPROVAL_REQUIRED with approval.id; approve it at /approvals/{id}/approve, then call again.",
		Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (purgeOutput, error) {
			tag, err := c.DB.Exec(c, `delete from public.todos where done`)
			if err != nil {
				return purgeOutput{}, err
			}
			return purgeOutput{Deleted: tag.RowsAffected()}, nil
		},
	})
	return &rest.Config{
		Select: todoColumns,
		Input: map[rest.Operation]*jsonschema.Schema{
			rest.OpCreate: withTitleLimits(rest.MustSchemaFor[todoCreate]()),
			rest.OpUpdate: withTitleLimits(rest.MustSchemaFor[todoUpdate]()),
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
	}, &authz.Config{
		DenyServices: true,
		Approvals:    &authz.ApprovalConfig{DB: d, Permissions: []string{"todos.purge"}},
	})
}

// API is what the demo serves under /api and /mcp.
type API struct {
	// API serves /api/todos, /api/approvals (list, get, approve, deny),
	// /api/openapi.json, /api/openapi.yaml and /api/docs, from the same
	// objects.
	API *spec.API
	// MCP serves the same operations as MCP tools (Streamable HTTP).
	MCP http.Handler
	// MCPMetadata serves the protected resource metadata of /mcp (RFC
	// 9728), which MCP's 401 challenges name as resource_metadata.
	MCPMetadata http.Handler
	// Hub delivers /api/todos/events; Close it on shutdown.
	Hub *events.Hub
}

// demoAllow is the allow list of /api/todos and /mcp.
var demoAllow = []authctx.Allow{authctx.AllowUser, authctx.AllowAnonymous}

// BuildAPI builds the todos resource, its description, the approvals
// endpoint and the MCP tools of the same resource.
//
// baseURL is where the demo answers; authServer the auth server issuing
// its tokens, named in the MCP endpoint's protected resource metadata.
func BuildAPI(ctx context.Context, d *db.DB, rv *authctx.Resolver, baseURL, authServer string) (*API, error) {
	return BuildAPIWith(ctx, d, rv, baseURL, authServer, &events.Config{})
}

// BuildAPIWith is BuildAPI with the events hub's configuration
// (its DB is set to d).
func BuildAPIWith(ctx context.Context, d *db.DB, rv *authctx.Resolver, baseURL, authServer string, ev *events.Config) (*API, error) {
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
	hc := *ev
	hc.DB = d
	hub, err := events.New(ctx, &hc)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	stream, err := hub.Stream(ctx, todos, &events.StreamOpts{Table: true, Resolver: rv,
		Payloads: map[string]*jsonschema.Schema{"todo.completed": rest.MustSchemaFor[rest.Row]()}})
	if err != nil {
		hub.Close()
		return nil, fmt.Errorf("todos events: %w", err)
	}
	// /api/approvals: served, described and offered as MCP tools with the
	// todos, so generated clients and agents can finish a purge.
	approvals := rest.DescribeHandler(authz.NewApprovals(d).Handler(nil), authz.ApprovalOperations())
	api, err := spec.DefineAPI(&spec.Config{
		Info: spec.Info{Title: "tablegate demo", Version: "1.0.0",
			Description: "Todos of two tenants, served under row-level security.",
			Contact:     &spec.Contact{Name: "The person running tablegate demo"},
			License:     &spec.License{Name: "The Unlicense (demo data)", Identifier: "Unlicense"}},
		BasePath:   "/api",
		Docs:       reference.Page,
		Authorizer: authorizer,
		Resources:  map[string]*rest.Resource{"todos": todos},
		Allow:      map[string][]authctx.Allow{"todos": demoAllow, "approvals": {authctx.AllowUser}},
		Handlers:   map[string]rest.DescribedHandler{"approvals": approvals},
		Guard:      authctx.Guard,
		CookieName: rv.CookieName(),
		Streams:    map[string]spec.EventStream{"todos": stream},
	})
	if err != nil {
		hub.Close()
		return nil, fmt.Errorf("API description: %w", err)
	}
	tools, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{todos}, Title: "tablegate demo", Version: "1.0.0",
		Handlers: []mcptools.HandlerTools{{Handler: approvals, Guard: mcptools.AllowList(authctx.AllowUser)}}})
	if err != nil {
		hub.Close()
		return nil, fmt.Errorf("MCP tools: %w", err)
	}
	metadataURL, metadata := mcpdiscovery.Handler(baseURL, authServer)
	mcpHandler, err := tools.Handler(&mcptools.HTTPConfig{Resolver: rv, Allow: demoAllow, ResourceMetadataURL: metadataURL})
	if err != nil {
		hub.Close()
		return nil, fmt.Errorf("MCP handler: %w", err)
	}
	return &API{API: api, MCP: mcpHandler, MCPMetadata: metadata, Hub: hub}, nil
}

// callerOf is the rest resources' caller: the state the resolver
// middleware stored in the request context.
func callerOf(r *http.Request) (authctx.Auth, error) { return authctx.AuthFrom(r.Context()), nil }
