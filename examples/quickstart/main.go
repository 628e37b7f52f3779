// Command quickstart serves the table "tablegate init" creates, public.todos,
// at /api/todos: callers resolved from the Supabase environment, one hook and
// one action, every statement running as the caller under row-level security.
//
// In the project folder "tablegate init" made next to the clone (../myapi),
// with "tablegate serve" stopped (the quick start takes its port, BASE_URL's):
//
//	. ./.env
//	go -C ../tablegate run ./examples/quickstart   # ../tablegate is the clone
//	curl -s "$BASE_URL/api/todos" -H "Authorization: Bearer $USER_TOKEN"   # in another shell, after . ./.env
package main

import (
	"cmp"
	"context"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

func main() {
	ctx := context.Background()
	env, err := authctx.LoadEnv(nil) // SUPABASE_URL or SUPABASE_JWKS; SUPABASE_SECRET_KEYS, ... optional
	if err != nil {
		log.Fatal(err)
	}
	callers, err := authctx.New(ctx, env.Config()) // keys fetched once (within ctx); tokens verified locally
	if err != nil {
		log.Fatal(err)
	}
	pool, err := db.NewPool(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	todos, err := rest.NewResource(ctx, db.New(pool, nil), "todos", &rest.Config{
		Select: []string{"id", "title", "done"},
		Hooks: rest.Hooks{BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
			data["done"] = false // business logic runs in the caller's transaction
			return data, nil
		}},
		Actions: map[string]*rest.Action{"complete": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.Row]{
			Method: "POST", Path: "/{id}/complete",
			Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.Row, error) {
				var title string // RLS applies here too: c.DB is bound to the caller
				err := c.DB.QueryRow(c, "update todos set done = true where id = $1 returning title", in.ID).Scan(&title)
				return rest.Row{"id": in.ID, "title": title, "done": true}, err
			}}),
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	// Both /api/todos and /api/todos/ serve the list (no redirect); the
	// second pattern also routes /api/todos/{id} and /{id}/complete.
	api := http.StripPrefix("/api/todos", authctx.Guard(authctx.AllowUser)(todos))
	mux.Handle("/api/todos", api)
	mux.Handle("/api/todos/", api)
	addr := cmp.Or(os.Getenv("ADDR"), "127.0.0.1:8081") // BASE_URL's port in init's .env
	srv := &http.Server{Addr: addr, Handler: callers.Middleware(callers.CrossSite(mux)),
		// Bound every connection (tablegate serve and demo use these).
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 60 * time.Second, IdleTimeout: 2 * time.Minute}
	log.Printf("serving http://%s/api/todos", addr)
	log.Fatal(srv.ListenAndServe())
}
