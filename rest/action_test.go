package rest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/problem"
)

type completeIn struct {
	Note string `json:"note,omitempty"`
}

type completeOut struct {
	ID   string `json:"id"`
	Done bool   `json:"done"`
	Note string `json:"note"`
}

type exportQuery struct {
	Limit int  `json:"limit,omitempty"`
	Done  bool `json:"done,omitempty"`
}

func todoActions(l *hookLog) map[string]*Action {
	return map[string]*Action{
		"complete": DefineAction(ActionDef[completeIn, None, completeOut]{
			Method: "POST", Path: "/{id}/complete", Permission: "todos.complete",
			Summary: "Mark a todo done", Emits: []string{"todo.completed"},
			Handler: func(c *Ctx, in ActionInput[completeIn, None]) (completeOut, error) {
				l.add("complete")
				if in.Row["done"] == true {
					return completeOut{}, problem.New(problem.KindConflict, "Already done.")
				}
				var out completeOut
				err := c.DB.QueryRow(c, `update todos set done = true where id = $1 returning id::text, done`, in.ID).Scan(&out.ID, &out.Done)
				out.Note = in.Data.Note
				if in.Data.Note == "fail-after-write" {
					return out, errors.New("handler failed after writing")
				}
				return out, err
			},
		}),
		"export": DefineAction(ActionDef[None, exportQuery, []string]{
			Method: "GET", Path: "/export",
			Handler: func(c *Ctx, in ActionInput[None, exportQuery]) ([]string, error) {
				l.add("export")
				q := `select title from todos where done = $1 order by title`
				if in.Query.Limit > 0 {
					q += " limit " + itoa(in.Query.Limit)
				}
				rows, err := c.DB.Query(c, q, in.Query.Done)
				if err != nil {
					return nil, err
				}
				defer rows.Close()
				out := []string{}
				for rows.Next() {
					var s string
					if err := rows.Scan(&s); err != nil {
						return nil, err
					}
					out = append(out, s)
				}
				return out, rows.Err()
			},
		}),
		"touch": DefineAction(ActionDef[None, None, None]{
			Method: "PUT", Path: "/{key}/touch",
			Handler: func(c *Ctx, in ActionInput[None, None]) (None, error) {
				l.add("touch")
				return None{}, nil
			},
		}),
		"import": DefineAction(ActionDef[[]completeIn, None, map[string]int]{
			Method: "POST", Path: "/import", Status: http.StatusAccepted, Permission: "todos.import",
			Handler: func(c *Ctx, in ActionInput[[]completeIn, None]) (map[string]int, error) {
				l.add("import")
				return map[string]int{"accepted": len(in.Data)}, nil
			},
		}),
		"csv": DefineAction(ActionDef[None, None, *Response]{
			Method: "GET", Path: "/export.csv",
			Handler: func(c *Ctx, in ActionInput[None, None]) (*Response, error) {
				h := http.Header{}
				h.Set("Content-Disposition", `attachment; filename="todos.csv"`)
				h.Set("Content-Length", "1") // wrong: the body's own length wins
				return &Response{Status: 200, ContentType: "text/csv", Header: h, Body: []byte("title\nx\n")}, nil
			},
		}),
	}
}

func TestActions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	l := &hookLog{}
	az := &recordingAuthorizer{log: l}
	res := b.resource("todos", &Config{
		Select:     []string{"id", "title", "done"},
		Authorizer: az,
		Actions:    todoActions(l),
		Hooks: Hooks{AuthorizeFunc: func(c *Ctx, op Operation, t *Target) error {
			l.add("authorize:" + string(op))
			return nil
		}},
	})
	s := server(t, "todos", res)
	var id, denyID, doneID string
	_ = b.pool.QueryRow(context.Background(), `insert into todos (owner_id, title) values ($1, 'a') returning id`, alice).Scan(&id)
	_ = b.pool.QueryRow(context.Background(), `insert into todos (owner_id, title) values ($1, 'deny me') returning id`, alice).Scan(&denyID)
	_ = b.pool.QueryRow(context.Background(), `insert into todos (owner_id, title, done) values ($1, 'z', true) returning id`, alice).Scan(&doneID)
	var bobs string
	_ = b.pool.QueryRow(context.Background(), `insert into todos (owner_id, title) values ($1, 'b') returning id`, bob).Scan(&bobs)

	// Item action: row fetched under RLS, authorizer sees key+row, then
	// the Authorize hook, then the handler, in one transaction.
	r := do(t, s, "POST", "/api/todos/"+id+"/complete", alice, `{"note":"yay"}`)
	if r.status != 200 {
		t.Fatal(r)
	}
	if m := decode(t, r.body); m["done"] != true || m["id"] != id || m["note"] != "yay" {
		t.Errorf("complete: %s", r.body)
	}
	if got := l.take(); got != "authz:todos.complete,authorize:complete,complete" {
		t.Errorf("order %q", got)
	}
	if req := az.last(); req.Operation != "complete" || req.Key != id || req.Row["title"] != "a" || req.Data["note"] != "yay" {
		t.Errorf("authorizer saw %+v", req)
	}
	isProblem(t, do(t, s, "POST", "/api/todos/"+bobs+"/complete", alice, `{}`), 404, "not_found")
	isProblem(t, do(t, s, "POST", "/api/todos/"+denyID+"/complete", alice, `{}`), 403, "forbidden")
	isProblem(t, do(t, s, "POST", "/api/todos/"+doneID+"/complete", alice, `{}`), 409, "conflict")
	isProblem(t, do(t, s, "POST", "/api/todos/nope/complete", alice, `{}`), 400, "bad_request")
	// Input validated before the handler, naming paths.
	l.take()
	m := isProblem(t, do(t, s, "POST", "/api/todos/"+denyID+"/complete", alice, `{"note":5,"x":1}`), 400, "bad_request")
	if errs := m["errors"].([]any); len(errs) != 2 || !strings.Contains(r.body+"", "") {
		t.Errorf("errors %v", m["errors"])
	}
	if got := l.take(); got != "" {
		t.Errorf("hooks ran before validation: %q", got)
	}
	// A handler error after writing rolls the write back and is a 500.
	var other string
	_ = b.pool.QueryRow(context.Background(), `insert into todos (owner_id, title) values ($1, 'c') returning id`, alice).Scan(&other)
	isProblem(t, do(t, s, "POST", "/api/todos/"+other+"/complete", alice, `{"note":"fail-after-write"}`), 500, "unexpected")
	var done bool
	_ = b.pool.QueryRow(context.Background(), `select done from todos where id = $1`, other).Scan(&done)
	if done {
		t.Error("action write not rolled back")
	}

	// Collection action with a typed query; no permission declared.
	r = do(t, s, "GET", "/api/todos/export?done=true", alice, "")
	if r.status != 200 || r.body != `["a","z"]` {
		t.Errorf("export: %s", r)
	}
	if r = do(t, s, "GET", "/api/todos/export?limit=1", alice, ""); r.body != `["c"]` {
		t.Errorf("export limit: %s", r)
	}
	m = isProblem(t, do(t, s, "GET", "/api/todos/export?limit=ten", alice, ""), 400, "bad_request")
	if !strings.Contains(m["detail"].(string), `"limit"`) {
		t.Errorf("detail %v", m["detail"])
	}
	isProblem(t, do(t, s, "GET", "/api/todos/export?unknown=1", alice, ""), 400, "bad_request")
	// A parameter of one value given twice: which counts would be a guess.
	m = isProblem(t, do(t, s, "GET", "/api/todos/export?done=true&done=false", alice, ""), 400, "bad_request")
	if !strings.Contains(m["detail"].(string), `"done"`) {
		t.Errorf("duplicate detail %v", m["detail"])
	}

	// 204 without output; status override; collection action sees the body.
	if r = do(t, s, "PUT", "/api/todos/"+id+"/touch", alice, ""); r.status != 204 || r.body != "" {
		t.Errorf("touch: %s", r)
	}
	isProblem(t, do(t, s, "PUT", "/api/todos/"+id+"/touch", alice, `{"a":1}`), 400, "bad_request")
	if r = do(t, s, "POST", "/api/todos/import", alice, `[{"note":"a"},{"note":"b"}]`); r.status != 202 || r.body != `{"accepted":2}` {
		t.Errorf("import: %s", r)
	}
	if req := az.last(); req.Operation != "import" || req.Key != nil || req.Row != nil {
		t.Errorf("collection action authorizer saw %+v", req)
	}
	isProblem(t, do(t, s, "POST", "/api/todos/import", alice, `{"note":"a"}`), 400, "bad_request")
	// A handler's own response; its Content-Length is the body's.
	r = do(t, s, "GET", "/api/todos/export.csv", alice, "")
	if r.status != 200 || r.body != "title\nx\n" || r.header.Get("Content-Type") != "text/csv" || !strings.Contains(r.header.Get("Content-Disposition"), "todos.csv") ||
		r.header.Get("Content-Length") != "8" {
		t.Errorf("csv: %s %v", r, r.header)
	}
	// 405 lists CRUD and action methods of the path.
	r = do(t, s, "DELETE", "/api/todos/"+id+"/complete", alice, "")
	if isProblem(t, r, 405, ""); r.header.Get("Allow") != "POST" {
		t.Errorf("Allow %q", r.header.Get("Allow"))
	}
	// A collection action's path is its own for every method (concrete
	// paths win over /{key}, as in OpenAPI): its methods only, never a key
	// "export" or "import" read, updated or deleted.
	for _, c := range []struct{ method, path, allow string }{
		{"POST", "/api/todos/export", "GET, HEAD"}, {"PATCH", "/api/todos/export", "GET, HEAD"},
		{"GET", "/api/todos/import", "POST"}, {"DELETE", "/api/todos/import", "POST"},
	} {
		r = do(t, s, c.method, c.path, alice, "")
		if isProblem(t, r, 405, ""); r.header.Get("Allow") != c.allow {
			t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, r.header.Get("Allow"), c.allow)
		}
	}

	// Description: ids, paths, statuses, permissions, emits.
	d := res.Describe()
	for _, c := range []struct {
		op     Operation
		id     string
		path   string
		status int
	}{
		{"complete", "completeTodos", "/{id}/complete", 200},
		{"export", "exportTodos", "/export", 200},
		{"touch", "touchTodos", "/{id}/touch", 204},
		{"import", "importTodos", "/import", 202},
		{OpGet, "getTodo", "/{id}", 200},
		{OpList, "listTodos", "/", 200},
		{OpDelete, "deleteTodo", "/{id}", 204},
	} {
		oi, ok := d.Operation(c.op)
		if !ok || oi.ID != c.id || oi.Path != c.path || oi.Status != c.status {
			t.Errorf("%s: %+v", c.op, oi)
		}
	}
	if oi, _ := d.Operation("complete"); oi.Permission != "todos.complete" || oi.Action.Emits[0] != "todo.completed" || oi.Input == nil || oi.Output == nil || !oi.Item {
		t.Errorf("complete info %+v", oi)
	}
}

func TestActionBuildRules(t *testing.T) {
	t.Parallel()
	h := func(c *Ctx, in ActionInput[None, None]) (None, error) { return None{}, nil }
	act := func(method, path string) *Action {
		return DefineAction(ActionDef[None, None, None]{Method: method, Path: path, Handler: h})
	}
	cases := []struct {
		name    string
		actions map[string]*Action
		ops     []Operation
		want    string
	}{
		{"name starts with digit", map[string]*Action{"1up": act("POST", "/x")}, nil, "must start with a letter"},
		{"name with dash", map[string]*Action{"mark-done": act("POST", "/x")}, nil, "letters, digits and '_'"},
		{"empty name", map[string]*Action{"": act("POST", "/x")}, nil, "must start with a letter"},
		{"CRUD name", map[string]*Action{"delete": act("POST", "/x")}, nil, "must not be a CRUD operation name"},
		{"bad method", map[string]*Action{"a": act("HEAD", "/x")}, nil, "method"},
		{"lowercase method", map[string]*Action{"a": act("post", "/x")}, nil, "method"},
		{"relative path", map[string]*Action{"a": act("POST", "x")}, nil, "must start with /"},
		{"other parameter", map[string]*Action{"a": act("POST", "/{id}/items/{item}")}, nil, "the only path parameter allowed is the key"},
		{"wrong parameter name", map[string]*Action{"a": act("POST", "/{todo_id}/send")}, nil, "the only path parameter allowed is the key"},
		{"key not first", map[string]*Action{"a": act("POST", "/send/{id}")}, nil, "must be the first segment"},
		{"trailing slash", map[string]*Action{"a": act("POST", "/send/")}, nil, "must not end with /"},
		{"empty segment", map[string]*Action{"a": act("POST", "/a//b")}, nil, "empty segment"},
		{"wildcard", map[string]*Action{"a": act("POST", "/a*")}, nil, "reserved character"},
		{"clash with create", map[string]*Action{"a": act("POST", "/")}, nil, "clashes with \"create\""},
		{"clash with update", map[string]*Action{"a": act("PATCH", "/{id}")}, nil, "clashes with \"update\""},
		{"two actions same route", map[string]*Action{"a": act("POST", "/{id}/x"), "b": act("POST", "/{key}/x")}, nil, "clashes"},
		{"no handler", map[string]*Action{"a": DefineAction(ActionDef[None, None, None]{Method: "POST", Path: "/x"})}, nil, "no handler"},
		{"nil action", map[string]*Action{"a": nil}, nil, "nil"},
		{"unknown operation", nil, []Operation{"list", "upsert"}, "unknown operation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := fakeResource(t, &Config{Actions: c.actions, Operations: c.ops})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to contain %q", err, c.want)
			}
		})
	}
	// Allowed: PUT on the item path does not clash with CRUD; a clash
	// with a CRUD operation that is not served is fine.
	if _, err := fakeResource(t, &Config{Actions: map[string]*Action{"replace": act("PUT", "/{id}"), "add": act("POST", "/")},
		Operations: []Operation{OpList, OpGet}}); err != nil {
		t.Errorf("valid actions refused: %v", err)
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		table string
		o     *Config
		want  string
	}{
		{"nope", nil, `table "nope"`},
		{"public.nope", nil, "no such table"},
		{"todos", &Config{Select: []string{"id", "nope"}}, `select column "nope"`},
		{"todos", &Config{Select: []string{}}, "select lists no column"},
		{"todos", &Config{Key: "nope"}, `key column "nope"`},
		{"todos", &Config{ReadOnly: []string{"nope"}}, `read-only column "nope"`},
		{"todos", &Config{Operations: []Operation{OpList}, Permissions: map[Operation]string{OpCreate: "x"}}, "not served"},
		{"todos", &Config{Input: map[Operation]*jsonschema.Schema{OpList: MustSchemaFor[completeIn]()}}, "only create and update"},
		{"todos", &Config{DefaultLimit: 10, MaxLimit: 5}, "exceeds MaxLimit"},
	}
	for _, c := range cases {
		_, err := NewResource(context.Background(), b.db, c.table, c.o)
		if !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: err = %v, want %q", c.table, c.o, err, c.want)
		}
	}
	b.exec(`create table nokey (a int, b text); alter table nokey enable row level security; grant select on nokey to authenticated;
	        create table twokey (a int, b int, primary key (a, b));`)
	if _, err := NewResource(context.Background(), b.db, "nokey", nil); err == nil || !strings.Contains(err.Error(), "no primary key; set Config.Key") {
		t.Errorf("nokey: %v", err)
	}
	if _, err := NewResource(context.Background(), b.db, "twokey", nil); err == nil || !strings.Contains(err.Error(), "composite primary key") {
		t.Errorf("twokey: %v", err)
	}
	if _, err := NewResource(context.Background(), b.db, "nokey", &Config{Key: "a"}); err != nil {
		t.Errorf("nokey with Key: %v", err)
	}
}
