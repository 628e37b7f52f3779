package mcptools_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/rest"
)

// BenchmarkGetTodo compares one getTodo under RLS: rest.Resource.Do
// directly (the floor), a tool call over the in-memory transport, a tool
// call over Streamable HTTP (stateless, JSON responses) and GET /{id}
// over REST, all with the same verified ES256 token (resolver memo hits).
func BenchmarkGetTodo(b *testing.B) {
	pool := pgtest.DB(b)
	if _, err := pool.Exec(context.Background(), fixtureSQL); err != nil {
		b.Fatal(err)
	}
	k := newKeys(b)
	todos, err := rest.NewResource(context.Background(), db.New(pool, nil), "todos", &rest.Config{
		Select: []string{"id", "owner_id", "title", "done", "priority"}, Caller: restCaller})
	if err != nil {
		b.Fatal(err)
	}
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{todos}})
	if err != nil {
		b.Fatal(err)
	}
	tok := k.sign(alice)
	var id string
	if err := seedTodo(pool, &id); err != nil {
		b.Fatal(err)
	}
	r, _ := http.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer "+tok)
	caller := k.caller(r)
	ctx := context.Background()

	b.Run("rest.Do", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := todos.Do(ctx, &rest.Call{Operation: rest.OpGet, Key: id, Auth: caller}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mcp in-memory", func(b *testing.B) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, caller, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer ss.Close()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := map[string]any{"id": id}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "getTodo", Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("mcp http", func(b *testing.B) {
		h, err := srv.Handler(&mcptools.HTTPConfig{Resolver: k.rv,
			Streamable: &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}})
		if err != nil {
			b.Fatal(err)
		}
		s := httptest.NewServer(h)
		defer s.Close()
		tr := &mcp.StreamableClientTransport{Endpoint: s.URL, HTTPClient: &http.Client{Transport: &bearer{token: tok}},
			MaxRetries: -1, DisableStandaloneSSE: true}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "v0"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		args := map[string]any{"id": id}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "getTodo", Arguments: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("rest http", func(b *testing.B) {
		s := httptest.NewServer(http.StripPrefix("/todos", k.rv.Middleware(todos)))
		defer s.Close()
		req, _ := http.NewRequest(http.MethodGet, s.URL+"/todos/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		b.ReportAllocs()
		for b.Loop() {
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != 200 {
				b.Fatal(res.Status)
			}
		}
	})
}

func seedTodo(pool *pgxpool.Pool, id *string) error {
	return pool.QueryRow(context.Background(),
		`insert into todos (owner_id, title) values ($1, 'bench') returning id::text`, alice).Scan(id)
}
