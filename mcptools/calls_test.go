package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestCallEveryTool calls each tool over the in-memory transport and checks
// what the pipeline did, in the database as the caller sees it.
func TestCallEveryTool(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs := b.session(user(alice))

	// createTodo → 201 row, owner from the caller's claims (auth.uid()).
	res := call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": "write tests", "priority": 2}})
	row := ok(t, res)
	if row["title"] != "write tests" || row["owner_id"] != alice || row["done"] != false {
		t.Fatalf("created %v", row)
	}
	if res.Meta[mcptools.MetaStatus] != float64(http.StatusCreated) {
		t.Errorf("create status %v", res.Meta[mcptools.MetaStatus])
	}
	id := row["id"].(string)
	row2 := ok(t, call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": "ship"}}))
	id2 := row2["id"].(string)

	// getTodo
	if got := ok(t, call(t, cs, "getTodo", map[string]any{"id": id})); got["id"] != id || got["priority"] != float64(2) {
		t.Fatalf("get %v", got)
	}

	// listTodos with a filter, order, limit and count; then the cursor.
	filters := map[string]any{"done": "eq.false", "title": []string{"neq.x", "like.*"}}
	page := ok(t, call(t, cs, "listTodos", map[string]any{
		"filters": filters, "order": "title.asc", "limit": 1, "count": true,
	}))
	items := page["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["title"] != "ship" || page["count"] != float64(2) {
		t.Fatalf("page 1 %v", page)
	}
	cur, _ := page["next_cursor"].(string)
	if cur == "" {
		t.Fatalf("page 1 has no next_cursor: %v", page)
	}
	page = ok(t, call(t, cs, "listTodos", map[string]any{"filters": filters, "order": "title.asc", "limit": 1, "cursor": cur}))
	if items := page["items"].([]any); len(items) != 1 || items[0].(map[string]any)["title"] != "write tests" || page["next_cursor"] != nil {
		t.Fatalf("page 2 %v", page)
	}

	// updateTodo
	if got := ok(t, call(t, cs, "updateTodo", map[string]any{"id": id, "data": map[string]any{"priority": 5}})); got["priority"] != float64(5) {
		t.Fatalf("update %v", got)
	}

	// statsTodos (GET action with a query), completeTodos (POST action with input).
	if got := ok(t, call(t, cs, "statsTodos", map[string]any{"query": map[string]any{"min_priority": 3}})); got["open"] != float64(1) || got["done"] != float64(0) {
		t.Fatalf("stats %v", got)
	}
	if got := ok(t, call(t, cs, "completeTodos", map[string]any{"data": map[string]any{"ids": []string{id, id2}}})); got["completed"] != float64(2) {
		t.Fatalf("complete %v", got)
	}
	if got := ok(t, call(t, cs, "statsTodos", nil)); got["open"] != float64(0) || got["done"] != float64(2) {
		t.Fatalf("stats after complete %v", got)
	}

	// deleteTodo: permission todos.delete admits admins → 204, then gone.
	admin := b.session(user(alice, "app_role", "admin"))
	res = call(t, admin, "deleteTodo", map[string]any{"id": id2})
	if res.IsError || res.Meta[mcptools.MetaStatus] != float64(http.StatusNoContent) || res.StructuredContent != nil {
		t.Fatalf("delete: %+v %s", res.Meta, text(t, res))
	}
	if _, p := problemOf(t, call(t, cs, "getTodo", map[string]any{"id": id2})); p.Kind != problem.KindNotFound {
		t.Fatalf("deleted row: %+v", p)
	}

	// archiveTodos: an item action under a permission; approved → 204.
	approved := b.session(user(alice, "approval", "appr-1"))
	res = call(t, approved, "archiveTodos", map[string]any{"id": id})
	if res.IsError || res.Meta[mcptools.MetaStatus] != float64(http.StatusNoContent) {
		t.Fatalf("archive: %+v %s", res.Meta, text(t, res))
	}
	if _, p := problemOf(t, call(t, approved, "archiveTodos", map[string]any{"id": id2})); p.Kind != problem.KindNotFound {
		t.Fatalf("archive a deleted row: %+v", p)
	}

	// The tags tools: RLS hides a row from list and get.
	b.exec(`insert into tags (name) values ('go'), ('hidden')`)
	tags := ok(t, call(t, cs, "listTags", nil))["items"].([]any)
	if len(tags) != 1 || tags[0].(map[string]any)["name"] != "go" {
		t.Fatalf("tags %v", tags)
	}
	if got := ok(t, call(t, cs, "getTag", map[string]any{"id": 1})); got["name"] != "go" {
		t.Fatalf("getTag %v", got)
	}
	if _, p := problemOf(t, call(t, cs, "getTag", map[string]any{"id": 2})); p.Status != http.StatusNotFound {
		t.Fatalf("hidden tag: %+v", p)
	}
}

func (b *bundle) exec(sql string, args ...any) {
	b.t.Helper()
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		b.t.Fatal(err)
	}
}

// TestRefusalsMatchHTTP checks that RLS hides rows (not found) and
// permissions deny (PERMISSION_DENIED, APPROVAL_REQUIRED) exactly as over
// HTTP: the tool error's text is byte for byte the REST problem body.
func TestRefusalsMatchHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t)
	srv := b.restServer()
	aliceTok, bobTok := b.keys.sign(alice), b.keys.sign(bob)
	created := do(t, http.MethodPost, srv.URL+"/api/todos", aliceTok, `{"title":"alice's"}`)
	if created.status != http.StatusCreated {
		t.Fatalf("create over HTTP: %d %s", created.status, created.body)
	}
	var row map[string]any
	mustJSON(t, created.body, &row)
	id := row["id"].(string)

	// The MCP callers are the same verified tokens, resolved by the same
	// caller function as the REST routes.
	asMCP := func(tok string) *mcp.ClientSession {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return b.session(b.keys.caller(r))
	}
	aliceMCP, bobMCP := asMCP(aliceTok), asMCP(bobTok)

	cases := []struct {
		name       string
		cs         *mcp.ClientSession
		tool       string
		args       map[string]any
		method     string
		path, tok  string
		body       string
		status     int
		kind       problem.Kind
		code       problem.Code
		permission string
	}{
		{name: "rls hides the row from bob (get)", cs: bobMCP, tool: "getTodo", args: map[string]any{"id": id},
			method: http.MethodGet, path: "/api/todos/" + id, tok: bobTok, status: 404, kind: problem.KindNotFound},
		{name: "rls hides the row from bob (update)", cs: bobMCP, tool: "updateTodo", args: map[string]any{"id": id, "data": map[string]any{"title": "mine"}},
			method: http.MethodPatch, path: "/api/todos/" + id, tok: bobTok, body: `{"title":"mine"}`, status: 404, kind: problem.KindNotFound},
		{name: "rls hides the row from bob (delete)", cs: bobMCP, tool: "deleteTodo", args: map[string]any{"id": id},
			method: http.MethodDelete, path: "/api/todos/" + id, tok: bobTok, status: 404, kind: problem.KindNotFound},
		{name: "permission denied", cs: aliceMCP, tool: "deleteTodo", args: map[string]any{"id": id},
			method: http.MethodDelete, path: "/api/todos/" + id, tok: aliceTok, status: 403, kind: problem.KindForbidden,
			code: problem.CodePermissionDenied, permission: permDelete},
		{name: "approval required", cs: aliceMCP, tool: "archiveTodos", args: map[string]any{"id": id},
			method: http.MethodPost, path: "/api/todos/" + id + "/archive", tok: aliceTok, status: 403, kind: problem.KindForbidden,
			code: problem.CodeApprovalRequired, permission: permArchive},
		{name: "malformed key", cs: aliceMCP, tool: "getTodo", args: map[string]any{"id": "not-a-uuid"},
			method: http.MethodGet, path: "/api/todos/not-a-uuid", tok: aliceTok, status: 400, kind: problem.KindBadRequest},
		{name: "body fails the schema", cs: aliceMCP, tool: "createTodo", args: map[string]any{"data": map[string]any{"title": "x", "nope": 1}},
			method: http.MethodPost, path: "/api/todos", tok: aliceTok, body: `{"title":"x","nope":1}`, status: 400, kind: problem.KindBadRequest},
		{name: "unknown filter column", cs: aliceMCP, tool: "listTodos", args: map[string]any{"filters": map[string]any{"created_at": "eq.x"}},
			method: http.MethodGet, path: "/api/todos?created_at=eq.x", tok: aliceTok, status: 400, kind: problem.KindBadRequest},
		{name: "check violation", cs: aliceMCP, tool: "updateTodo", args: map[string]any{"id": id, "data": map[string]any{"title": ""}},
			method: http.MethodPatch, path: "/api/todos/" + id, tok: aliceTok, body: `{"title":""}`, status: 422, kind: problem.KindUnprocessable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body, p := problemOf(t, call(t, c.cs, c.tool, c.args))
			if p.Status != c.status || p.Kind != c.kind || p.Code != c.code || p.Permission != c.permission {
				t.Fatalf("problem %s", body)
			}
			if c.code == problem.CodeApprovalRequired && (p.Approval == nil || p.Approval.ID != "appr-1") {
				t.Fatalf("approval %s", body)
			}
			h := do(t, c.method, srv.URL+c.path, c.tok, c.body)
			if h.status != c.status || h.header.Get("Content-Type") != problem.MediaType {
				t.Fatalf("HTTP %d %s", h.status, h.body)
			}
			if want := h.body[:len(h.body)-1]; body != want { // HTTP ends the body with a newline
				t.Fatalf("MCP problem\n%s\ndiffers from HTTP\n%s", body, want)
			}
		})
	}

	// The row is untouched: bob's update and delete did not reach it.
	if got := ok(t, call(t, aliceMCP, "getTodo", map[string]any{"id": id})); got["title"] != "alice's" {
		t.Fatalf("row after refusals: %v", got)
	}
}

// TestArgumentErrors: a malformed tool call is a 400 tool error naming
// the argument, never a protocol error or a 500.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs := b.session(user(alice))
	for _, c := range []struct {
		tool string
		args any
		path string
	}{
		{"getTodo", map[string]any{}, "/id"},
		{"getTodo", map[string]any{"id": true}, "/id"},
		{"getTodo", map[string]any{"id": 1.5}, "/id"},
		{"getTodo", map[string]any{"id": "x", "extra": 1}, "/extra"},
		{"createTodo", map[string]any{"id": "x"}, "/id"},
		{"listTodos", map[string]any{"filters": []string{"a"}}, "/filters"},
		{"listTodos", map[string]any{"filters": map[string]any{"done": 1}}, "/filters/done"},
		{"listTodos", map[string]any{"filters": map[string]any{"limit": "eq.1"}}, "/filters/limit"},
		{"listTodos", map[string]any{"limit": "ten"}, "/limit"},
		{"listTodos", map[string]any{"count": "yes"}, "/count"},
		{"statsTodos", map[string]any{"query": map[string]any{"min_priority": map[string]any{}}}, "/query/min_priority"},
		{"statsTodos", map[string]any{"data": map[string]any{}}, "/data"},
	} {
		t.Run(fmt.Sprintf("%s %v", c.tool, c.args), func(t *testing.T) {
			body, p := problemOf(t, call(t, cs, c.tool, c.args))
			if p.Status != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Path != c.path {
				t.Fatalf("problem %s", body)
			}
		})
	}
	// Limits and query values are then checked by the pipeline itself.
	for _, args := range []map[string]any{
		{"limit": 0}, {"limit": rest.DefaultMaxLimit + 1}, {"order": "nope.asc"}, {"cursor": "forged"},
	} {
		if _, p := problemOf(t, call(t, cs, "listTodos", args)); p.Status != http.StatusBadRequest {
			t.Errorf("listTodos %v: %+v", args, p)
		}
	}
	if _, p := problemOf(t, call(t, cs, "statsTodos", map[string]any{"query": map[string]any{"min_priority": "high"}})); p.Status != http.StatusBadRequest {
		t.Errorf("stats bad query: %+v", p)
	}
	// A missing or non-object body is refused by the pipeline, as over HTTP.
	for _, args := range []map[string]any{{}, {"data": nil}, {"data": "title"}, {"data": []any{}}} {
		if body, p := problemOf(t, call(t, cs, "createTodo", args)); p.Status != http.StatusBadRequest {
			t.Errorf("createTodo %v: %s", args, body)
		}
	}
	// The data argument is capped by Options.MaxBodyBytes (413, as over HTTP).
	big := strings.Repeat("x", rest.DefaultMaxBodyBytes)
	if body, p := problemOf(t, call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": big}})); p.Status != http.StatusRequestEntityTooLarge {
		t.Errorf("big body: %.200s", body)
	}
}

// TestConnectGuard: the guard decides who may open a session on a
// fixed-caller transport; an invalid credential is always refused.
func TestConnectGuard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, c := range []struct {
		name string
		auth authctx.Auth
		code problem.Code
	}{
		{"anonymous sign-in", authctx.NewUser(authctx.Claims{"sub": anonymous, "role": "authenticated", "is_anonymous": true}, "t", nil), problem.CodeAnonymousUser},
		{"no session", authctx.Anon(authctx.ReasonNone), problem.CodeAuthRequired},
		{"invalid", authctx.Invalid(authctx.ReasonToken, nil), problem.CodeTokenInvalid},
	} {
		st, _ := mcp.NewInMemoryTransports()
		_, err := b.srv.Connect(context.Background(), st, c.auth, mcptools.AllowList())
		var ce *mcptools.CallerError
		if !errors.As(err, &ce) || ce.Problem.Code != c.code {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// Without a guard an invalid caller is still refused.
	st, _ := mcp.NewInMemoryTransports()
	if _, err := b.srv.Connect(context.Background(), st, authctx.Invalid(authctx.ReasonToken, nil), nil); err == nil {
		t.Error("invalid caller admitted without a guard")
	}
}

func mustJSON(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
}

// TestSessionExpiry: a session's fixed caller is refused once its token's
// exp has passed (beyond the resolver's 30 s clock skew), like an expired
// Bearer token on the REST routes.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{b.todos},
		Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	exp := now.Load() + 60
	a := authctx.NewUser(authctx.Claims{"sub": alice, "role": "authenticated", "exp": float64(exp)}, "t", nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, a, mcptools.AllowList())
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ok(t, call(t, cs, "listTodos", nil))
	now.Store(exp + 29) // within the skew
	ok(t, call(t, cs, "listTodos", nil))
	now.Store(exp + 31)
	if _, p := problemOf(t, call(t, cs, "listTodos", nil)); p.Status != http.StatusUnauthorized || p.Code != problem.CodeTokenExpired {
		t.Fatalf("expired caller: %+v", p)
	}
	st2, _ := mcp.NewInMemoryTransports()
	var ce *mcptools.CallerError
	if _, err := srv.Connect(context.Background(), st2, a, mcptools.AllowList()); !errors.As(err, &ce) || ce.Problem.Code != problem.CodeTokenExpired {
		t.Fatalf("connect with an expired token: %v", err)
	}
}

type tagView struct {
	Label string `json:"label"`
}

// TestHooksAndOutput: hooks run for tool calls (they are the pipeline's),
// in the call's transaction, and Options.Output documents the reshaped
// response as the tool's output schema.
func TestHooksAndOutput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var fired []string
	var mu sync.Mutex
	hook := func(name string) {
		mu.Lock()
		fired = append(fired, name)
		mu.Unlock()
	}
	tags, err := rest.NewResource(context.Background(), b.db, "tags", &rest.Config{
		Output: map[rest.Operation]*jsonschema.Schema{rest.OpGet: rest.MustSchemaFor[tagView]()},
		Hooks: rest.Hooks{
			AuthorizeFunc: func(c *rest.Ctx, op rest.Operation, _ *rest.Target) error {
				hook("authorize:" + string(op))
				if c.Request != nil {
					return errors.New("an MCP call has no HTTP request")
				}
				return nil
			},
			BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
				hook("beforeCreate")
				data["name"] = strings.ToUpper(data["name"].(string))
				return data, nil
			},
			AfterGetFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				hook("afterGet")
				return tagView{Label: "#" + row["name"].(string)}, nil
			},
			AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				hook("afterCreate")
				if row["name"] == "BOOM" {
					return nil, problem.New(problem.KindConflict, "boom")
				}
				return row, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{tags}})
	if err != nil {
		t.Fatal(err)
	}
	var getTag *mcp.Tool
	for _, tl := range srv.Tools() {
		if tl.Name == "getTag" {
			getTag = tl
		}
	}
	if getTag == nil || mustMarshal(t, getTag.OutputSchema) != mustMarshal(t, rest.MustSchemaFor[tagView]()) {
		t.Fatalf("getTag output schema %v", getTag)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, user(alice), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	row := ok(t, call(t, cs, "createTag", map[string]any{"data": map[string]any{"name": "go"}}))
	if row["name"] != "GO" {
		t.Fatalf("created %v", row)
	}
	if got := ok(t, call(t, cs, "getTag", map[string]any{"id": row["id"]})); got["label"] != "#GO" {
		t.Fatalf("get %v", got)
	}
	// An After hook's error rolls the write back, as over HTTP.
	if _, p := problemOf(t, call(t, cs, "createTag", map[string]any{"data": map[string]any{"name": "boom"}})); p.Kind != problem.KindConflict {
		t.Fatalf("boom: %+v", p)
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), `select count(*) from tags where name = 'BOOM'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("rolled back row present: %d %v", n, err)
	}
	want := []string{"authorize:create", "beforeCreate", "afterCreate", "authorize:get", "afterGet",
		"authorize:create", "beforeCreate", "afterCreate"}
	if !slices.Equal(fired, want) {
		t.Fatalf("hooks %v, want %v", fired, want)
	}
}

// TestResourceGuards: per-resource allow lists, as the REST routes of a
// config may have: anon may list tags but not todos.
func TestResourceGuards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into tags (name) values ('public')`)
	if _, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{b.tags},
		Guards: map[*rest.Resource]func(authctx.Auth) *problem.Problem{b.todos: mcptools.AllowList()}}); !errors.Is(err, mcptools.ErrConfig) {
		t.Fatalf("guard of an unserved resource: %v", err)
	}
	srv, err := mcptools.New(&mcptools.Config{
		Resources: []*rest.Resource{b.todos, b.tags},
		Guards: map[*rest.Resource]func(authctx.Auth) *problem.Problem{
			b.todos: mcptools.AllowList(authctx.AllowUser),
			b.tags:  mcptools.AllowList(authctx.AllowUser, authctx.AllowAnon),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, authctx.Anon(authctx.ReasonNone),
		mcptools.AllowList(authctx.AllowUser, authctx.AllowAnon))
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if items := ok(t, call(t, cs, "listTags", nil))["items"].([]any); len(items) != 1 {
		t.Fatalf("anon lists tags %v", items)
	}
	if _, p := problemOf(t, call(t, cs, "listTodos", nil)); p.Status != http.StatusUnauthorized || p.Code != problem.CodeAuthRequired {
		t.Fatalf("anon lists todos: %+v", p)
	}
}
