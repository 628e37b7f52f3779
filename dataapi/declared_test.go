package dataapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestDeclaredTable: a table declared as a rest resource keeps its select,
// guard, permissions and hooks through the data API.
func TestDeclaredTable(t *testing.T) {
	b := newBundle(t)
	d := b.db
	hookRuns := 0
	authz := rest.AuthorizerFunc(func(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
		if req.Data != nil && req.Data["title"] == "forbidden" {
			return rest.Denied(), nil
		}
		return rest.Allowed(), nil
	})
	res, err := rest.NewResource(context.Background(), d, "todos", &rest.Config{
		Select:      []string{"id", "title", "done", "priority"},
		Operations:  rest.CRUD(),
		Authorizer:  authz,
		Permissions: map[rest.Operation]string{rest.OpCreate: "todos.create"},
		Caller:      testCaller,
		Hooks: rest.Hooks{BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
			hookRuns++
			if data["title"] == "bad" {
				return nil, problem.New(problem.KindUnprocessable, "titles may not be bad")
			}
			data["title"] = strings.ToUpper(data["title"].(string))
			return data, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"todos": {Resource: res, Allow: []authctx.Allow{authctx.AllowUser}}}})
	// The hook runs per row, in the same statement's transaction.
	r := b.do("POST", "/todos?select=title", alice, `[{"title":"one"},{"title":"two"}]`, "Prefer: return=representation")
	if r.status != 201 || r.body != `[{"title":"ONE"}, `+"\n"+` {"title":"TWO"}]` || hookRuns != 2 {
		t.Fatalf("hooked insert: %d %s (hook ran %d times)", r.status, r.body, hookRuns)
	}
	// A hook's refusal answers its problem and writes nothing.
	r = b.do("POST", "/todos", alice, `[{"title":"fine"},{"title":"bad"}]`)
	if r.status != 422 || !strings.Contains(r.body, "titles may not be bad") || b.count("select count(*) from todos where title = 'FINE'") != 0 {
		t.Errorf("hook refusal: %d %s", r.status, r.body)
	}
	// The permission is checked per row.
	r = b.do("POST", "/todos", alice, `{"title":"forbidden"}`)
	if m, _ := r.json(t).(map[string]any); r.status != 403 || m["code"] != "PERMISSION_DENIED" {
		t.Errorf("permission: %d %s", r.status, r.body)
	}
	// The declared select bounds reads and writes.
	r = b.do("GET", "/todos?select=owner_id", alice, "")
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "42703" {
		t.Errorf("column outside select: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/todos?select=*&order=title", alice, "")
	if r.status != 200 || strings.Contains(r.body, "owner_id") || !strings.Contains(r.body, `"title":"ONE"`) {
		t.Errorf("star: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/todos?owner_id=eq."+alice, alice, "")
	if r.status != 400 {
		t.Errorf("filter outside select: %d %s", r.status, r.body)
	}
	// The guard admits users only.
	r = b.do("GET", "/todos", "", "")
	if r.status != 401 {
		t.Errorf("anon on a user-only table: %d %s", r.status, r.body)
	}
	// Filtered updates and deletes run the permission and Before hooks per
	// row, each row with its own values, in one transaction.
	var seen []any
	res2, err := rest.NewResource(context.Background(), d, "todos", &rest.Config{
		Select: []string{"id", "title", "done", "priority"}, Operations: []rest.Operation{rest.OpList, rest.OpUpdate, rest.OpDelete},
		Caller: testCaller, Authorizer: authz,
		Permissions: map[rest.Operation]string{rest.OpUpdate: "todos.update"},
		Hooks: rest.Hooks{
			BeforeUpdateFunc: func(c *rest.Ctx, data rest.Row, tg *rest.Target) (rest.Row, error) {
				seen = append(seen, tg.ID)
				if _, leaked := tg.Row["owner_id"]; leaked {
					return nil, errors.New("the row holds a column outside the select")
				}
				data["title"] = tg.Row["title"].(string) + "!"
				return data, nil
			},
			BeforeDeleteFunc: func(c *rest.Ctx, tg *rest.Target) error {
				if tg.Row["title"] == "TWO!" {
					return problem.New(problem.KindConflict, "TWO stays")
				}
				return nil
			},
		}})
	if err != nil {
		t.Fatal(err)
	}
	b2 := (&bundle{t: t, pool: b.pool, db: d}).serve(&Config{Tables: map[string]*Table{"public.todos": {Resource: res2, Allow: []authctx.Allow{authctx.AllowUser}}}})
	r = b2.do("PATCH", "/todos?select=title,done&order=title", alice, `{"done":true}`, "Prefer: return=representation")
	if r.status != 200 || r.body != `[{"title":"ONE!","done":true}, `+"\n"+` {"title":"TWO!","done":true}]` || len(seen) != 2 {
		t.Errorf("hooked update: %d %s (hook saw %v)", r.status, r.body, seen)
	}
	if _, ok := seen[0].(int64); !ok {
		t.Errorf("the hook's key is %T, want int64 as on the native routes", seen[0])
	}
	r = b2.do("PATCH", "/todos?title=eq.ONE!", bob, `{"done":false}`, "Prefer: return=representation")
	if r.status != 200 || r.body != "[]" || len(seen) != 2 {
		t.Errorf("bob's hooked update reaches no row: %d %s", r.status, r.body)
	}
	r = b2.do("PATCH", "/todos?title=eq.ONE!", alice, `{"title":"forbidden"}`)
	if r.status != 403 {
		t.Errorf("update permission: %d %s", r.status, r.body)
	}
	r = b2.do("DELETE", "/todos", alice, "")
	if r.status != 409 || !strings.Contains(r.body, "TWO stays") || b.count("select count(*) from todos") != 2 {
		t.Errorf("BeforeDelete refusal rolls back the whole delete: %d %s", r.status, r.body)
	}
	r = b2.do("DELETE", "/todos?title=eq.ONE!&select=title", alice, "", "Prefer: return=representation")
	if r.status != 200 || r.body != `[{"title":"ONE!"}]` || b.count("select count(*) from todos") != 1 {
		t.Errorf("hooked delete: %d %s", r.status, r.body)
	}
}

// TestUnprotectedRefused: a table anon or authenticated can reach without
// row-level security stops the data API from starting, unless allowed.
func TestUnprotectedRefused(t *testing.T) {
	b := setup(t, nil)
	b.exec(`create table open_table (id int); grant select on open_table to anon`)
	_, err := New(context.Background(), &Config{DB: b.db})
	if !errors.Is(err, ErrUnprotected) || !strings.Contains(err.Error(), "public.open_table") || !strings.Contains(err.Error(), "allow_without_rls") {
		t.Fatalf("err = %v", err)
	}
	if _, err := New(context.Background(), &Config{DB: b.db, AllowWithoutRLS: true}); err != nil {
		t.Fatal(err)
	}
	b.exec(`create table private_table (id int)`) // no grants: nothing to protect
	b.exec(`drop table open_table`)
	if _, err := New(context.Background(), &Config{DB: b.db}); err != nil {
		t.Fatal(err)
	}
	// A view runs as its owner unless security_invoker: refused with the
	// fix, as the native resources refuse it.
	b.exec(`create table guarded (id int); alter table guarded enable row level security;
	create view guarded_view as select id from guarded; grant select on guarded_view to authenticated`)
	_, err = New(context.Background(), &Config{DB: b.db})
	if !errors.Is(err, ErrUnprotected) || !strings.Contains(err.Error(), "public.guarded_view") || !strings.Contains(err.Error(), "security_invoker") {
		t.Fatalf("view without security_invoker: %v", err)
	}
	b.exec(`alter view guarded_view set (security_invoker = true)`)
	if _, err := New(context.Background(), &Config{DB: b.db}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), &Config{DB: b.db, Schemas: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("missing schema: %v", err)
	}
}

// TestDeclaredHooksNeverSkipped: AuthorizeFunc runs on reads and writes;
// an After hook runs on inserts.
func TestDeclaredHooksNeverSkipped(t *testing.T) {
	b := newBundle(t)
	authorized := 0
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Operations: rest.CRUD(), Caller: testCaller,
		Hooks: rest.Hooks{
			AuthorizeFunc: func(c *rest.Ctx, op rest.Operation, _ *rest.Target) error {
				authorized++
				if c.Auth.Claims()["sub"] == bob {
					return problem.New(problem.KindForbidden, "bob may not")
				}
				return nil
			},
			AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) { return row, nil },
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"todos": {Resource: res}}})
	if r := b.do("GET", "/todos", alice, ""); r.status != 200 || authorized != 1 {
		t.Errorf("read with AuthorizeFunc: %d %s (ran %d)", r.status, r.body, authorized)
	}
	if r := b.do("GET", "/todos", bob, ""); r.status != 403 || !strings.Contains(r.body, "bob may not") {
		t.Errorf("AuthorizeFunc refusal on a read: %d %s", r.status, r.body)
	}
	if r := b.do("POST", "/todos", alice, `{"title":"x"}`, "Prefer: return=representation"); r.status != 201 || !strings.Contains(r.body, `"title":"x"`) {
		t.Errorf("insert with an After hook: %d %s", r.status, r.body)
	}
	if r := b.do("DELETE", "/todos?id=eq.1", bob, ""); r.status != 204 {
		t.Errorf("delete matching none of bob's rows: %d %s", r.status, r.body)
	}
	b.do("DELETE", "/todos", alice, "")
	if r := b.do("PATCH", "/todos", bob, `{"done":true}`); r.status != 204 {
		t.Errorf("update matching no row runs no AuthorizeFunc: %d %s", r.status, r.body)
	}
}

// TestDeclaredStatementTimeout: a declared table's statement timeout
// bounds its statements through the data API too.
func TestDeclaredStatementTimeout(t *testing.T) {
	b := newBundle(t)
	b.exec(`alter table todos alter column title set default (pg_sleep(0.3)::text || 'slow')`)
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{Caller: testCaller,
		Operations: rest.CRUD(), StatementTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"todos": {Resource: res}}})
	r := b.do("POST", "/todos", alice, `{}`)
	if m, _ := r.json(t).(map[string]any); r.status != 503 || m["code"] != "57014" || r.header.Get("Retry-After") == "" {
		t.Errorf("over the table's budget: %d %s %v", r.status, r.body, r.header)
	}
}
