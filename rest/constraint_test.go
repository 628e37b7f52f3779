package rest

import (
	"net/http/httptest"
	"strings"
	"testing"
)

const constraintSQLFixture = `
create table lists (id int primary key, name text not null);
alter table lists enable row level security;
create policy lists_all on lists for all to authenticated using (true) with check (true);
grant select, insert, update, delete on lists to authenticated;
create table tasks (
  id int primary key,
  list_id int references lists (id),
  title text not null,
  starts int,
  ends int,
  done boolean not null default false,
  created_by uuid default auth.uid(),
  constraint tasks_window check (starts <= ends)
);
create unique index tasks_list_title on tasks (list_id, title);
alter table tasks enable row level security;
create policy tasks_all on tasks for all to authenticated using (true) with check (true);
grant select, insert, update, delete on tasks to authenticated;
insert into lists values (1, 'inbox');
`

// TestConstraintViolationsNameConstraintAndColumns: a check, unique,
// foreign-key or not-null violation names the constraint and its columns
// (from the catalog, remembered per resource) in the problem body, and
// never the value.
func TestConstraintViolationsNameConstraintAndColumns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(constraintSQLFixture)
	taskRes := b.resource("tasks", nil)
	tasks := server(t, "tasks", taskRes)
	lists := server(t, "lists", b.resource("lists", nil))
	todos := server(t, "todos", b.resource("todos", nil))
	if r := do(t, tasks, "POST", "/api/tasks", alice, `{"id":1,"list_id":1,"title":"Quarterly-Report-7731"}`); r.status != 201 {
		t.Fatal(r)
	}
	type fieldErr struct{ path, msg string }
	cases := []struct {
		name   string
		srv    string
		method string
		path   string
		body   string
		status int
		detail string
		errs   []fieldErr
		values []string // must not appear in the body
	}{
		{"check over two columns", "tasks", "POST", "/api/tasks", `{"id":2,"title":"t","starts":98765,"ends":12345}`, 422,
			`A value violates check constraint "tasks_window" on starts, ends.`,
			[]fieldErr{{"/starts", `violates check constraint "tasks_window"`}, {"/ends", `violates check constraint "tasks_window"`}},
			[]string{"98765", "12345"}},
		{"column check", "todos", "POST", "/api/todos", `{"title":""}`, 422,
			`A value violates check constraint "todos_title_check" on title.`,
			[]fieldErr{{"/title", `violates check constraint "todos_title_check"`}}, nil},
		{"unique index over two columns", "tasks", "POST", "/api/tasks", `{"id":3,"list_id":1,"title":"Quarterly-Report-7731"}`, 409,
			`A row with the same list_id, title already exists (unique constraint "tasks_list_title").`,
			[]fieldErr{{"/list_id", `violates unique constraint "tasks_list_title"`}, {"/title", `violates unique constraint "tasks_list_title"`}},
			[]string{"Quarterly-Report-7731"}},
		{"primary key", "tasks", "POST", "/api/tasks", `{"id":1,"title":"x"}`, 409,
			`A row with the same id already exists (unique constraint "tasks_pkey").`,
			[]fieldErr{{"/id", `violates unique constraint "tasks_pkey"`}}, nil},
		{"foreign key on write", "tasks", "POST", "/api/tasks", `{"id":4,"list_id":424242,"title":"x"}`, 409,
			`The value of list_id does not reference an existing row (foreign key "tasks_list_id_fkey").`,
			[]fieldErr{{"/list_id", `violates foreign key "tasks_list_id_fkey"`}}, []string{"424242"}},
		{"foreign key on delete", "lists", "DELETE", "/api/lists/1", "", 409,
			`The row is still referenced by another row (foreign key "tasks_list_id_fkey" on tasks.list_id).`, nil, nil},
		{"not null", "tasks", "POST", "/api/tasks", `{"id":5,"list_id":1}`, 422,
			`A required value is missing: title may not be null.`, []fieldErr{{"/title", "may not be null"}}, nil},
		{"update breaking a check", "tasks", "PATCH", "/api/tasks/1", `{"starts":55501,"ends":55500}`, 422,
			`A value violates check constraint "tasks_window" on starts, ends.`, nil, []string{"55501", "55500"}},
	}
	servers := map[string]*httptest.Server{"tasks": tasks, "lists": lists, "todos": todos}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := do(t, servers[c.srv], c.method, c.path, alice, c.body)
			m := isProblem(t, r, c.status, "")
			if m["detail"] != c.detail {
				t.Errorf("detail %q, want %q", m["detail"], c.detail)
			}
			if c.errs != nil {
				errs, _ := m["errors"].([]any)
				if len(errs) != len(c.errs) {
					t.Fatalf("errors %v, want %v", m["errors"], c.errs)
				}
				for i, e := range errs {
					fe := e.(map[string]any)
					if fe["path"] != c.errs[i].path || fe["message"] != c.errs[i].msg {
						t.Errorf("error %d: %v, want %v", i, fe, c.errs[i])
					}
				}
			}
			for _, v := range c.values {
				if strings.Contains(r.body, v) {
					t.Errorf("the body repeats the value %s: %s", v, r.body)
				}
			}
		})
	}
	// The catalog was read once per constraint of the table.
	taskRes.constraints.mu.Lock()
	n := len(taskRes.constraints.m)
	taskRes.constraints.mu.Unlock()
	if n != 4 { // tasks_window (twice), tasks_list_title, tasks_pkey, tasks_list_id_fkey
		t.Errorf("the tasks resource remembers %d constraints, want 4", n)
	}
}

// TestReadOnlyProtectsDefaultedColumn: a column with a default (created_by
// default auth.uid()) is writable by default — a caller can send another
// user's id — until Config.ReadOnly lists it; then a body naming it
// answers 400 and the default always applies.
func TestReadOnlyProtectsDefaultedColumn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(constraintSQLFixture)
	open := server(t, "tasks", b.resource("tasks", nil))
	r := do(t, open, "POST", "/api/tasks", alice, `{"id":10,"title":"forged","created_by":"`+bob+`"}`)
	if r.status != 201 || decode(t, r.body)["created_by"] != bob {
		t.Fatalf("without ReadOnly the defaulted column is writable: %s", r)
	}
	guarded := server(t, "tasks", b.resource("tasks", &Config{ReadOnly: []string{"created_by"}}))
	m := isProblem(t, do(t, guarded, "POST", "/api/tasks", alice, `{"id":11,"title":"forged","created_by":"`+bob+`"}`), 400, "bad_request")
	if errs, _ := m["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["path"] != "/created_by" ||
		errs[0].(map[string]any)["message"] != "is read-only" {
		t.Errorf("read-only created_by: %v", m)
	}
	r = do(t, guarded, "POST", "/api/tasks", alice, `{"id":12,"title":"mine"}`)
	if r.status != 201 || decode(t, r.body)["created_by"] != alice {
		t.Errorf("the default applies: %s", r)
	}
}
