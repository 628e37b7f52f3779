package rest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tablegate/tablegate/internal/syncbuf"
	"github.com/tablegate/tablegate/problem"
)

// hookLog records which hooks fired, in order.
type hookLog struct {
	mu  sync.Mutex
	got []string
}

func (l *hookLog) add(s string) { l.mu.Lock(); l.got = append(l.got, s); l.mu.Unlock() }
func (l *hookLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.Join(l.got, ",")
	l.got = nil
	return s
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer = syncbuf.Buffer

// recordingAuthorizer logs what it sees and decides by the "deny" and
// "approve" fields of the row or body, and the caller.
type recordingAuthorizer struct {
	log  *hookLog
	seen []*AuthzRequest
	mu   sync.Mutex
}

func (a *recordingAuthorizer) decide(req *AuthzRequest, row Row) Decision {
	src := row
	if src == nil {
		src = req.Data
	}
	if src != nil {
		if t, _ := src["title"].(string); strings.HasPrefix(t, "deny") {
			return Denied()
		} else if strings.HasPrefix(t, "approve") {
			return ApprovalRequired("appr-1")
		}
	}
	return Allowed()
}

func (a *recordingAuthorizer) Authorize(ctx context.Context, req *AuthzRequest) (Decision, error) {
	a.mu.Lock()
	cp := *req
	a.seen = append(a.seen, &cp)
	a.mu.Unlock()
	a.log.add("authz:" + req.Permission)
	// The authorizer runs on the request's caller-bound transaction.
	var n int
	if err := req.DB.QueryRow(ctx, "select count(*) from todos").Scan(&n); err != nil {
		return Denied(), err
	}
	return a.decide(req, req.Row), nil
}

func (a *recordingAuthorizer) AuthorizeRows(ctx context.Context, req *AuthzRequest, rows []Row) ([]Decision, error) {
	a.log.add(fmt.Sprintf("authzRows:%s:%d", req.Permission, len(rows)))
	out := make([]Decision, len(rows))
	for i, r := range rows {
		out[i] = a.decide(req, r)
	}
	return out, nil
}

func (a *recordingAuthorizer) last() *AuthzRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		return nil
	}
	return a.seen[len(a.seen)-1]
}

func hookedTodos(b *bundle, l *hookLog, az Authorizer, logs *syncBuffer) *Resource {
	return b.resource("todos", &Config{
		Select:      []string{"id", "owner_id", "title", "done", "priority"},
		Permissions: map[Operation]string{OpList: "todos.read", OpGet: "todos.read", OpCreate: "todos.write", OpUpdate: "todos.write", OpDelete: "todos.delete"},
		Authorizer:  az,
		Logger:      slog.New(slog.NewJSONHandler(logs, nil)),
		Hooks: Hooks{
			AuthorizeFunc: func(c *Ctx, op Operation, t *Target) error {
				l.add("authorize:" + string(op))
				if c.Auth.Actor().ID == "" && op != OpList && op != OpGet {
					return problem.New(problem.KindForbidden, "Sign in first.")
				}
				title, _ := t.Data["title"].(string)
				if t.Row != nil {
					title, _ = t.Row["title"].(string)
				}
				switch title {
				case "hook-problem":
					return problem.Newf(problem.KindConflict, "custom refusal")
				case "hook-error":
					return errors.New("secret internal detail: password=hunter2")
				case "hook-panic":
					panic("secret panic detail")
				}
				return nil
			},
			BeforeCreateFunc: func(c *Ctx, data Row) (Row, error) {
				l.add("beforeCreate")
				if data["priority"] == nil {
					// Hooks query on the caller-bound transaction.
					var n int
					if err := c.DB.QueryRow(c, "select count(*) from todos").Scan(&n); err != nil {
						return nil, err
					}
					data["priority"] = n + 1
				}
				return data, nil
			},
			BeforeUpdateFunc: func(c *Ctx, data Row, t *Target) (Row, error) {
				l.add("beforeUpdate")
				if t.Row == nil || t.Row["id"] != t.ID {
					return nil, errors.New("target row missing")
				}
				if data["title"] == "keep" {
					data["title"] = t.Row["title"]
				}
				return data, nil
			},
			BeforeDeleteFunc: func(c *Ctx, t *Target) error {
				l.add("beforeDelete")
				if t.Row["done"] != true {
					return problem.New(problem.KindConflict, "Only done todos can be deleted.")
				}
				return nil
			},
			AfterListFunc: func(c *Ctx, p *Page) (any, error) {
				l.add("afterList")
				for _, it := range p.Items {
					it["label"] = strings.ToUpper(fmt.Sprint(it["title"]))
				}
				return p, nil
			},
			AfterGetFunc: func(c *Ctx, row Row) (any, error) {
				l.add("afterGet")
				return map[string]any{"id": row["id"], "label": strings.ToUpper(fmt.Sprint(row["title"]))}, nil
			},
			AfterCreateFunc: func(c *Ctx, row Row) (any, error) {
				l.add("afterCreate")
				switch row["title"] {
				case "after-fails":
					return nil, problem.New(problem.KindUnprocessable, "rejected after insert")
				case "after-panics":
					panic("after panic")
				}
				return row, nil
			},
			AfterUpdateFunc: func(c *Ctx, row Row) (any, error) {
				l.add("afterUpdate")
				if row["title"] == "after-fails" {
					return nil, errors.New("boom")
				}
				return row, nil
			},
		},
	})
}

// TestHooksScenarios runs the hook scenarios of reads and writes through HTTP and checks
// which hooks fired, in which order.
func TestHooksScenarios(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := &hookLog{}
	az := &recordingAuthorizer{log: l}
	logs := &syncBuffer{}
	s := server(t, "todos", hookedTodos(b, l, az, logs))

	mk := func(who, title string, done bool) string {
		t.Helper()
		var id string
		err := b.pool.QueryRow(context.Background(),
			`insert into todos (owner_id, title, done) values ($1, $2, $3) returning id`, who, title, done).Scan(&id)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	plain := mk(alice, "plain", false)
	doneID := mk(alice, "finished", true)
	denyID := mk(alice, "deny me", false)
	apprID := mk(alice, "approve me", false)
	hpID := mk(alice, "hook-problem", false)
	heID := mk(alice, "hook-error", false)
	panicID := mk(alice, "hook-panic", false)
	bobs := mk(bob, "bob's", false)

	type scenario struct {
		name, method, path, who, body string
		status                        int
		hooks                         string
		check                         func(t *testing.T, r resp)
	}
	scenarios := []scenario{
		{"get runs authorizer, authorize, afterGet", "GET", "/api/todos/" + plain, alice, "", 200,
			"authz:todos.read,authorize:get,afterGet", func(t *testing.T, r resp) {
				if m := decode(t, r.body); m["label"] != "PLAIN" || len(m) != 2 {
					t.Errorf("reshaped: %s", r.body)
				}
				req := az.last()
				if req.Operation != OpGet || req.Key != plain || req.Row["title"] != "plain" || req.Table != "todos" || req.Caller.Actor().ID != alice {
					t.Errorf("authorizer saw %+v", req)
				}
			}},
		{"get hidden by RLS: 404 before the authorizer", "GET", "/api/todos/" + bobs, alice, "", 404, "", nil},
		{"get denied", "GET", "/api/todos/" + denyID, alice, "", 403, "authz:todos.read", func(t *testing.T, r resp) {
			m := isProblem(t, r, 403, "forbidden")
			if m["code"] != "PERMISSION_DENIED" || m["permission"] != "todos.read" {
				t.Errorf("body %s", r.body)
			}
		}},
		{"get needs approval", "GET", "/api/todos/" + apprID, alice, "", 403, "authz:todos.read", func(t *testing.T, r resp) {
			m := isProblem(t, r, 403, "forbidden")
			if m["code"] != "APPROVAL_REQUIRED" || m["permission"] != "todos.read" || fmt.Sprint(m["approval"]) != "map[id:appr-1]" {
				t.Errorf("body %s", r.body)
			}
		}},
		{"authorize hook problem is sent as is", "GET", "/api/todos/" + hpID, alice, "", 409, "authz:todos.read,authorize:get", func(t *testing.T, r resp) {
			if m := isProblem(t, r, 409, "conflict"); m["detail"] != "custom refusal" {
				t.Errorf("body %s", r.body)
			}
		}},
		{"authorize hook error is unexpected", "GET", "/api/todos/" + heID, alice, "", 500, "authz:todos.read,authorize:get", func(t *testing.T, r resp) {
			m := isProblem(t, r, 500, "unexpected")
			rid, _ := m["request_id"].(string)
			if rid == "" || strings.Contains(r.body, "hunter2") || strings.Contains(r.body, "secret") {
				t.Errorf("body %s", r.body)
			}
			if !strings.Contains(logs.String(), rid) || !strings.Contains(logs.String(), "hunter2") {
				t.Errorf("log lacks request id or cause: %s", logs.String())
			}
		}},
		{"authorize hook panic is unexpected", "GET", "/api/todos/" + panicID, alice, "", 500, "authz:todos.read,authorize:get", func(t *testing.T, r resp) {
			m := isProblem(t, r, 500, "unexpected")
			if m["request_id"] == nil || strings.Contains(r.body, "panic") {
				t.Errorf("body %s", r.body)
			}
			if !strings.Contains(logs.String(), "secret panic detail") {
				t.Errorf("panic not logged")
			}
		}},
		{"create: authorizer sees the body; beforeCreate sets values", "POST", "/api/todos", alice, `{"title":"new one"}`, 201,
			"authz:todos.write,authorize:create,beforeCreate,afterCreate", func(t *testing.T, r resp) {
				m := decode(t, r.body)
				if m["priority"] == nil || m["title"] != "new one" {
					t.Errorf("created %s", r.body)
				}
				req := az.last()
				if req.Operation != OpCreate || req.Data["title"] != "new one" || req.Row != nil || req.Key != nil {
					t.Errorf("authorizer saw %+v", req)
				}
			}},
		{"create denied by authorizer on body", "POST", "/api/todos", alice, `{"title":"deny this"}`, 403, "authz:todos.write", nil},
		{"create refused by authorize hook (anon)", "POST", "/api/todos", "anon", `{"title":"x"}`, 403, "authz:todos.write,authorize:create", nil},
		{"after hook error rolls the insert back", "POST", "/api/todos", alice, `{"title":"after-fails"}`, 422,
			"authz:todos.write,authorize:create,beforeCreate,afterCreate", func(t *testing.T, r resp) {
				var n int
				_ = b.pool.QueryRow(context.Background(), "select count(*) from todos where title = 'after-fails'").Scan(&n)
				if n != 0 {
					t.Errorf("insert not rolled back")
				}
			}},
		{"after hook panic rolls the insert back", "POST", "/api/todos", alice, `{"title":"after-panics"}`, 500,
			"authz:todos.write,authorize:create,beforeCreate,afterCreate", func(t *testing.T, r resp) {
				var n int
				_ = b.pool.QueryRow(context.Background(), "select count(*) from todos where title = 'after-panics'").Scan(&n)
				if n != 0 {
					t.Errorf("insert not rolled back")
				}
			}},
		{"update: current row fetched first", "PATCH", "/api/todos/" + plain, alice, `{"title":"keep","done":true}`, 200,
			"authz:todos.write,authorize:update,beforeUpdate,afterUpdate", func(t *testing.T, r resp) {
				if m := decode(t, r.body); m["title"] != "plain" || m["done"] != true {
					t.Errorf("updated %s", r.body)
				}
				if req := az.last(); req.Row["title"] != "plain" || req.Row["done"] != false || req.Data["done"] != true {
					t.Errorf("authorizer saw %+v", req)
				}
			}},
		{"update hidden by RLS: 404, no hooks", "PATCH", "/api/todos/" + bobs, alice, `{"done":true}`, 404, "", nil},
		{"update denied on current row", "PATCH", "/api/todos/" + denyID, alice, `{"title":"fine now"}`, 403, "authz:todos.write", nil},
		{"after update error rolls back", "PATCH", "/api/todos/" + doneID, alice, `{"title":"after-fails"}`, 500,
			"authz:todos.write,authorize:update,beforeUpdate,afterUpdate", func(t *testing.T, r resp) {
				var title string
				_ = b.pool.QueryRow(context.Background(), "select title from todos where id = $1", doneID).Scan(&title)
				if title != "finished" {
					t.Errorf("update not rolled back: %s", title)
				}
			}},
		{"malformed key on delete", "DELETE", "/api/todos/" + apprID + "x", alice, "", 400, "", nil},
		{"authorize hook refuses a delete", "DELETE", "/api/todos/" + hpID, alice, "", 409, "authz:todos.delete,authorize:delete", nil},
		{"delete allowed: authorizer sees key and current row", "DELETE", "/api/todos/" + doneID, alice, "", 204,
			"authz:todos.delete,authorize:delete,beforeDelete", func(t *testing.T, r resp) {
				if req := az.last(); req.Operation != OpDelete || req.Key != doneID || req.Row["title"] != "finished" || req.Data != nil {
					t.Errorf("authorizer saw %+v", req)
				}
				if r.body != "" {
					t.Errorf("204 with a body: %q", r.body)
				}
			}},
		{"delete refused by hook keeps the row", "DELETE", "/api/todos/" + plain, alice, "", 200,
			"authz:todos.delete,authorize:delete,beforeDelete", nil},
	}
	// plain is done now (updated above): fix the last scenario's expectations.
	scenarios[len(scenarios)-1].status = 204
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			l.take()
			r := do(t, s, sc.method, sc.path, sc.who, sc.body)
			if r.status != sc.status {
				t.Fatalf("status %d, want %d: %s", r.status, sc.status, r.body)
			}
			if got := l.take(); got != sc.hooks {
				t.Errorf("hooks %q, want %q", got, sc.hooks)
			}
			if sc.check != nil {
				sc.check(t, r)
			}
		})
	}

	// A not-done row: beforeDelete refuses and the row stays.
	keep := mk(alice, "not done", false)
	r := do(t, s, "DELETE", "/api/todos/"+keep, alice, "")
	isProblem(t, r, 409, "conflict")
	var n int
	_ = b.pool.QueryRow(context.Background(), "select count(*) from todos where id = $1", keep).Scan(&n)
	if n != 1 {
		t.Errorf("row deleted despite beforeDelete")
	}
}

// TestListBatchAuthorization: denied rows leave items, next_cursor and
// count stay as queried, AfterList sees the filtered page.
func TestListBatchAuthorization(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := &hookLog{}
	az := &recordingAuthorizer{log: l}
	s := server(t, "todos", hookedTodos(b, l, az, &syncBuffer{}))
	b.exec(`insert into todos (owner_id, title, priority)
	        select $1, case when i % 3 = 0 then 'deny ' || i else 'ok ' || i end, i from generate_series(1, 9) i`, alice)
	b.exec(`insert into todos (owner_id, title) values ($1, 'bob hidden')`, bob)

	all := map[string]bool{}
	q := "/api/todos?order=priority&limit=4&count=exact"
	cursors := 0
	for {
		r := do(t, s, "GET", q, alice, "")
		if r.status != 200 {
			t.Fatal(r)
		}
		if got := l.take(); !strings.HasPrefix(got, "authorize:list,authzRows:todos.read:") || !strings.HasSuffix(got, ",afterList") {
			t.Errorf("hooks %q", got)
		}
		p := getPageBody(t, r.body)
		if p.Count == nil || *p.Count != 9 {
			t.Errorf("count changed by filtering: %v", p.Count)
		}
		for _, it := range p.Items {
			title := it["title"].(string)
			if strings.HasPrefix(title, "deny") {
				t.Errorf("denied row listed: %s", title)
			}
			if it["label"] != strings.ToUpper(title) {
				t.Errorf("afterList not applied: %v", it)
			}
			all[title] = true
		}
		if p.NextCursor == nil {
			break
		}
		cursors++
		q = "/api/todos?order=priority&limit=4&count=exact&cursor=" + *p.NextCursor
	}
	// 9 rows, pages of 4 → 3 pages, 2 cursors, even though page 1 kept 3
	// items and page 2 kept 3: the cursor follows the query, not the filter.
	if cursors != 2 || len(all) != 6 {
		t.Errorf("cursors %d, rows %d (%v)", cursors, len(all), all)
	}
}

func getPageBody(t testing.TB, body string) pageResp {
	t.Helper()
	var p pageResp
	dec := newNumberDecoder(body)
	if err := dec.Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPermissionsWithoutAuthorizer: a declared permission and no
// authorizer denies every caller, for single rows and lists alike.
func TestPermissionsWithoutAuthorizer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("todos", &Config{Permissions: map[Operation]string{OpGet: "todos.read", OpCreate: "todos.write", OpList: "todos.read"}})
	s := server(t, "todos", res)
	m := isProblem(t, do(t, s, "POST", "/api/todos", "service", `{"title":"x","owner_id":"`+alice+`"}`), 403, "forbidden")
	if m["code"] != "PERMISSION_DENIED" || m["permission"] != "todos.write" {
		t.Errorf("%v", m)
	}
	b.exec(`insert into todos (owner_id, title) values ($1, 'a')`, alice)
	var id string
	_ = b.pool.QueryRow(context.Background(), "select id from todos").Scan(&id)
	isProblem(t, do(t, s, "GET", "/api/todos/"+id, alice, ""), 403, "forbidden")
	if r := do(t, s, "GET", "/api/todos", alice, ""); r.status != 200 || r.body != `{"items":[],"next_cursor":null}` {
		t.Errorf("list: %s", r)
	}
	// Without a permission on update, no authorizer is needed.
	if r := do(t, s, "PATCH", "/api/todos/"+id, alice, `{"done":true}`); r.status != 200 {
		t.Errorf("update: %s", r)
	}
}

type forOpAuthorizer struct{ AuthorizerFunc }

func (forOpAuthorizer) ForOperation(table string, op Operation) (string, error) {
	if op == OpDelete {
		return "", nil
	}
	return table + "." + string(op), nil
}

func TestPermissionsFromAuthorizer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := NewResource(context.Background(), b.db, "todos", &Config{
		PermissionsFromAuthorizer: true,
		Authorizer:                AuthorizerFunc(func(context.Context, *AuthzRequest) (Decision, error) { return Allowed(), nil }),
	})
	if !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), "ForOperation") {
		t.Errorf("authorizer without ForOperation: %v", err)
	}
	_, err = NewResource(context.Background(), b.db, "todos", &Config{PermissionsFromAuthorizer: true})
	if !errors.Is(err, ErrBuild) {
		t.Errorf("no authorizer: %v", err)
	}
	var seen []string
	var mu sync.Mutex
	az := forOpAuthorizer{AuthorizerFunc(func(_ context.Context, req *AuthzRequest) (Decision, error) {
		mu.Lock()
		seen = append(seen, req.Permission)
		mu.Unlock()
		if req.Permission == "todos.create" {
			return Denied(), nil
		}
		return Allowed(), nil
	})}
	res := b.resource("todos", &Config{PermissionsFromAuthorizer: true, Authorizer: az,
		Permissions: map[Operation]string{OpUpdate: "custom.update"}})
	want := map[Operation]string{OpList: "todos.list", OpGet: "todos.get", OpCreate: "todos.create", OpUpdate: "custom.update", OpDelete: ""}
	for op, key := range want {
		oi, ok := res.Describe().Operation(op)
		if !ok || oi.Permission != key {
			t.Errorf("%s permission %q, want %q", op, oi.Permission, key)
		}
	}
	s := server(t, "todos", res)
	m := isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"x"}`), 403, "forbidden")
	if m["permission"] != "todos.create" {
		t.Errorf("%v", m)
	}
	b.exec(`insert into todos (owner_id, title) values ($1, 'a'), ($1, 'b')`, alice)
	if r := do(t, s, "GET", "/api/todos", alice, ""); r.status != 200 || len(getPageBody(t, r.body).Items) != 2 {
		t.Errorf("list: %s", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(seen, ",") != "todos.create,todos.list,todos.list" {
		t.Errorf("authorizer calls %v", seen)
	}
	_ = http.MethodGet
}

// errShared is a problem value shared by every request, as an
// application might declare it; the pipeline must not mutate it.
var errShared = problem.New(problem.KindConflict, "shared refusal")

func TestSharedProblemValue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("todos", &Config{Hooks: Hooks{AuthorizeFunc: func(*Ctx, Operation, *Target) error { return errShared }}})
	s := server(t, "todos", res)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := do(t, s, "GET", "/api/todos", alice, ""); r.status != 409 {
				t.Errorf("status %d", r.status)
			}
		}()
	}
	wg.Wait()
	if errShared.Type != "" || errShared.RequestID != "" {
		t.Errorf("shared problem mutated: %+v", errShared)
	}
}
