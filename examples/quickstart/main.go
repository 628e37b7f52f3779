// Command quickstart is the README's quick start: caller resolution, one
// table served as a REST resource, one hook and one action.
package main

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

func main() {
	ctx := context.Background()
	env, err := authctx.LoadEnv(nil) // SUPABASE_URL, SUPABASE_JWKS, DATABASE_URL, ...
	if err != nil {
		log.Fatal(err)
	}
	callers, err := authctx.New(env.Config()) // JWKS fetched once; tokens verified locally
	if err != nil {
		log.Fatal(err)
	}
	pool, err := db.NewPool(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	todos, err := rest.NewResource(ctx, db.New(pool, nil), "todos", &rest.Options{
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
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", authctx.Guard(authctx.AllowUser)(todos)))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", callers.Middleware(callers.CrossSite(mux))))
}
