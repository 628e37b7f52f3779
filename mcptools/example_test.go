package mcptools_test

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/rest"
)

// Example serves a todos table as MCP tools: over Streamable HTTP for
// remote agents, and here over an in-memory transport with a fixed caller,
// driven by the SDK's own client.
func Example() {
	ctx := context.Background()
	pool, drop := exampleDatabase(ctx)
	defer drop()

	todos, err := rest.NewResource(ctx, db.New(pool, nil), "todos", &rest.Config{
		Select:     []string{"id", "title", "done"},
		Operations: []rest.Operation{rest.OpList, rest.OpGet, rest.OpCreate},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{todos}})
	if err != nil {
		log.Fatal(err)
	}

	// Over HTTP: every request's caller is resolved (in an application,
	// with the authctx.Resolver of the REST routes: HTTPConfig.Resolver)
	// and admitted by the allow list, then the handler mounts anywhere.
	h, err := srv.Handler(&mcptools.HTTPConfig{
		Caller: func(r *http.Request) authctx.Auth { return authctx.Anon(authctx.ReasonNone) },
		Allow:  []authctx.Allow{authctx.AllowUser},
	})
	if err != nil {
		log.Fatal(err)
	}
	http.NewServeMux().Handle("/mcp", h)

	// In memory, with one caller for the session.
	alice := authctx.NewUser(authctx.Claims{"sub": "11111111-1111-1111-1111-111111111111", "role": "authenticated"}, "", nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, alice, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range tools.Tools {
		fmt.Printf("%s readOnly=%v\n", t.Name, t.Annotations.ReadOnlyHint)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "createTodo", Arguments: map[string]any{
		"data": map[string]any{"title": "try tablegate"},
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", res.StructuredContent.(map[string]any)["title"])
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "getTodo", Arguments: map[string]any{
		"id": "00000000-0000-0000-0000-000000000000",
	}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("isError:", res.IsError, "status:", res.Meta[mcptools.MetaStatus])
	// Output:
	// createTodo readOnly=false
	// getTodo readOnly=true
	// listTodos readOnly=true
	// created: try tablegate
	// isError: true status: 404
}

// exampleDatabase creates a migrated database holding an RLS todos table on
// the server pgtest uses (TEST_DATABASE_URL, DATABASE_URL or 127.0.0.1:5432),
// and returns a function dropping it.
func exampleDatabase(ctx context.Context) (*pgxpool.Pool, func()) {
	admin := cmp.Or(os.Getenv("TEST_DATABASE_URL"), os.Getenv("DATABASE_URL"),
		"postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	ap, err := pgxpool.New(ctx, admin)
	if err != nil {
		log.Fatal(err)
	}
	name := fmt.Sprintf("mcptools_example_%d", os.Getpid())
	// A run killed before its cleanup leaves the database behind; a later
	// process may get the same pid.
	if _, err := ap.Exec(ctx, "drop database if exists "+name+" with (force)"); err != nil {
		log.Fatal(err)
	}
	if _, err := ap.Exec(ctx, "create database "+name); err != nil {
		log.Fatal(err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		log.Fatal(err)
	}
	u.Path = "/" + name
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		log.Fatal(err)
	}
	if err := db.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `
		create table todos (
		  id uuid primary key default gen_random_uuid(),
		  owner_id uuid not null default auth.uid(),
		  title text not null,
		  done boolean not null default false);
		alter table todos enable row level security;
		grant select, insert on todos to authenticated;
		create policy own on todos using (owner_id = auth.uid()) with check (owner_id = auth.uid());`); err != nil {
		log.Fatal(err)
	}
	return pool, func() {
		pool.Close()
		_, _ = ap.Exec(ctx, "drop database "+name+" with (force)")
		ap.Close()
	}
}
