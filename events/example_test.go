package events_test

import (
	"context"
	"log"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/rest"
)

// A todos resource whose complete action emits todo.completed, and whose
// rows emit todos.created/updated/deleted (the table was opted in with
// select tablegate.enable_events('todos') in a migration), watched at
// GET /api/todos/events:
//
//	curl -N http://localhost:8080/api/todos/events -H "Authorization: Bearer $TOKEN"
func ExampleHub_Stream() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, "postgres://app@localhost/app")
	if err != nil {
		log.Fatal(err)
	}
	d := db.New(pool, nil)
	todos, err := rest.NewResource(ctx, d, "todos", &rest.Config{
		Actions: map[string]*rest.Action{
			"complete": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.None]{
				Method: "POST", Path: "/{id}/complete", Emits: []string{"todo.completed"},
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.None, error) {
					if _, err := c.DB.Exec(c, "update todos set done = true where id = $1", in.ID); err != nil {
						return rest.None{}, rest.DBProblem(err)
					}
					// Written in this transaction: delivered only if it commits.
					return rest.None{}, events.Emit(c, "todo.completed", map[string]any{"id": in.ID}, &events.EmitOpts{Key: in.ID})
				},
			}),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	hub, err := events.New(ctx, &events.Config{DB: d})
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	stream, err := hub.Stream(ctx, todos, &events.StreamOpts{Table: true})
	if err != nil {
		log.Fatal(err)
	}
	callers, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: "https://abcdefghijklmnopqrst.supabase.co"})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/todos", http.StripPrefix("/api/todos", todos)) // the list, no redirect
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", todos))
	mux.Handle("GET /api/todos/events", stream)
	log.Fatal(http.ListenAndServe(":8080", callers.Middleware(callers.CrossSite(mux))))
}
