package spec_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

// ExampleDefineAPI serves a table and its description from one resource.
func ExampleDefineAPI() {
	t := &exampleTB{}
	defer t.cleanup()
	pool := pgtest.DB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `create table todos (id bigint generated always as identity primary key, title text not null);
alter table todos enable row level security;
create policy todos_read on todos for select to authenticated using (true);
grant select on todos to authenticated;`); err != nil {
		log.Fatal(err)
	}
	todos, err := rest.NewResource(ctx, db.New(pool, nil), "todos", &rest.Config{
		Operations:  []rest.Operation{rest.OpList, rest.OpGet},
		Permissions: map[rest.Operation]string{rest.OpGet: "todos.read"},
	})
	if err != nil {
		log.Fatal(err)
	}
	api, err := spec.DefineAPI(&spec.Config{
		Info:      spec.Info{Title: "Todos", Version: "1.0.0"},
		BasePath:  "/api",
		Resources: map[string]*rest.Resource{"todos": todos},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range api.Routes() {
		fmt.Println(r.Method, r.Path, r.OperationID)
	}
	rec := httptest.NewRecorder()
	api.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/api/openapi.json", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output:
	// GET /api/docs getAPIReference
	// GET /api/openapi.json getOpenAPIJSON
	// GET /api/openapi.yaml getOpenAPIYAML
	// GET /api/todos listTodos
	// GET /api/todos/{id} getTodo
	// 200 application/json
}

// exampleTB lets an Example borrow a pgtest database: it implements the
// methods pgtest calls and runs the cleanups at the end.
type exampleTB struct {
	testing.TB // nil: methods not overridden here are not called by pgtest
	cleanups   []func()
}

func (*exampleTB) Helper()                           {}
func (*exampleTB) Failed() bool                      { return false }
func (*exampleTB) Name() string                      { return "ExampleDefineAPI" }
func (*exampleTB) Logf(format string, args ...any)   { log.Printf(format, args...) }
func (*exampleTB) Fatalf(format string, args ...any) { log.Fatalf(format, args...) }
func (*exampleTB) Fatal(args ...any)                 { log.Fatal(args...) }
func (*exampleTB) Errorf(format string, args ...any) { log.Fatalf(format, args...) }
func (t *exampleTB) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }

func (t *exampleTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
