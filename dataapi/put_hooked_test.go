package dataapi

import (
	"context"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
)

// TestDeclaredPutRunsHooks: PUT on a declared table with permissions and
// hooks on create and update runs them: a key the caller cannot see yet
// is a create (create permission, BeforeCreateFunc), a row they can see
// an update (update permission, BeforeUpdateFunc with the current row,
// AfterUpdateFunc answering), each in one transaction with its events;
// another user's row is never overwritten.
func TestDeclaredPutRunsHooks(t *testing.T) {
	b := newBundle(t)
	b.exec(`select tablegate.enable_events('public.todos')`)
	var beforeUpdateSaw rest.Row
	creates := 0
	authz := rest.AuthorizerFunc(func(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
		if req.Data != nil && (req.Data["title"] == "nocreate" && req.Operation == rest.OpCreate ||
			req.Data["title"] == "noupdate" && req.Operation == rest.OpUpdate) {
			return rest.Denied(), nil
		}
		return rest.Allowed(), nil
	})
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Select:      []string{"id", "title", "done", "priority"},
		Operations:  rest.CRUD(),
		Caller:      testCaller,
		Authorizer:  authz,
		Permissions: map[rest.Operation]string{rest.OpCreate: "todos.create", rest.OpUpdate: "todos.update"},
		Hooks: rest.Hooks{
			BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
				creates++
				if s, ok := data["title"].(string); ok {
					data["title"] = strings.ToUpper(s)
				}
				return data, nil
			},
			BeforeUpdateFunc: func(c *rest.Ctx, data rest.Row, tg *rest.Target) (rest.Row, error) {
				beforeUpdateSaw = tg.Row
				if s, ok := data["title"].(string); ok {
					data["title"] = s + "!"
				}
				return data, nil
			},
			AfterUpdateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				return map[string]any{"id": row["id"], "title": row["title"], "via": "after-update"}, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"todos": {Resource: res, Allow: []authctx.Allow{authctx.AllowUser}}}})
	rep := "Prefer: return=representation"

	r := b.do("PUT", "/todos?id=eq.100&select=id,title", alice, `{"id":100,"title":"new"}`, rep)
	if r.status != 200 || r.body != `[{"id":100,"title":"NEW"}]` || creates != 1 {
		t.Fatalf("create by PUT: %d %s (BeforeCreateFunc ran %d)", r.status, r.body, creates)
	}
	if n := b.count("select count(*) from todos where id = 100 and owner_id = '" + alice + "'"); n != 1 {
		t.Errorf("the created row is not alice's")
	}
	r = b.do("PUT", "/todos?id=eq.100", alice, `{"id":100,"title":"again","done":true}`, rep)
	if r.status != 200 || !sameJSON(t, r.body, `[{"id":100,"title":"again!","via":"after-update"}]`) || creates != 1 {
		t.Errorf("update by PUT: %d %s", r.status, r.body)
	}
	if beforeUpdateSaw["title"] != "NEW" || beforeUpdateSaw["owner_id"] != nil {
		t.Errorf("BeforeUpdateFunc saw %v, want the current row's declared columns", beforeUpdateSaw)
	}
	if n := b.count("select count(*) from tablegate.events"); n != 2 {
		t.Errorf("events: %d, want a create and an update", n)
	}
	// Minimal: 204, as PostgREST answers PUT.
	r = b.do("PUT", "/todos?id=eq.100", alice, `{"id":100,"title":"quiet"}`)
	if r.status != 204 || b.count("select count(*) from todos where title = 'quiet!'") != 1 {
		t.Errorf("minimal PUT: %d %s", r.status, r.body)
	}
	// Permissions per branch.
	r = b.do("PUT", "/todos?id=eq.101", alice, `{"id":101,"title":"nocreate"}`)
	if m, _ := r.json(t).(map[string]any); r.status != 403 || m["code"] != "PERMISSION_DENIED" || b.count("select count(*) from todos where id = 101") != 0 {
		t.Errorf("create permission: %d %s", r.status, r.body)
	}
	r = b.do("PUT", "/todos?id=eq.100", alice, `{"id":100,"title":"noupdate"}`)
	if m, _ := r.json(t).(map[string]any); r.status != 403 || m["code"] != "PERMISSION_DENIED" || b.count("select count(*) from todos where title = 'quiet!'") != 1 {
		t.Errorf("update permission: %d %s", r.status, r.body)
	}
	// bob cannot see alice's row: his PUT is a create, which the key refuses.
	r = b.do("PUT", "/todos?id=eq.100", bob, `{"id":100,"title":"steal"}`)
	if r.status != 409 || errCode(t, r) != "23505" || b.count("select count(*) from todos where id = 100 and owner_id = '"+alice+"' and title = 'quiet!'") != 1 {
		t.Errorf("bob's PUT over alice's row: %d %s", r.status, r.body)
	}
	// The PUT rules still hold; bad bodies and callers outside the guard.
	for _, tc := range []struct {
		user, path, body string
		status           int
		code             string
	}{
		{alice, "/todos?id=eq.102", `{"id":103,"title":"x"}`, 400, "PGRST115"},
		{alice, "/todos?title=eq.x", `{"title":"x"}`, 405, "PGRST105"},
		{alice, "/todos?id=eq.102", `{"id":102,`, 400, "PGRST102"},
		{alice, "/todos?id=eq.102", `{"id":102,"owner_id":"` + bob + `"}`, 400, "PGRST204"},
		{alice, "/todos?id=eq.102", `{"id":102,"priority":"high"}`, 400, "22P02"},
		{"", "/todos?id=eq.102", `{"id":102,"title":"x"}`, 401, "PGRST302"},
		{"anonymous:" + bob, "/todos?id=eq.102", `{"id":102,"title":"x"}`, 403, "PGRST302"},
		{"invalid", "/todos?id=eq.102", `{"id":102,"title":"x"}`, 401, "PGRST301"},
	} {
		r := b.do("PUT", tc.path, tc.user, tc.body)
		if r.status != tc.status || errCode(t, r) != tc.code {
			t.Errorf("PUT %s %s as %q: %d %s, want %d %s", tc.path, tc.body, tc.user, r.status, r.body, tc.status, tc.code)
		}
	}
	if n := b.count("select count(*) from todos where id = 102"); n != 0 {
		t.Errorf("a refused PUT wrote row 102")
	}
}
