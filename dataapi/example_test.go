package dataapi_test

import (
	"context"
	"log"
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/dataapi"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// Mount the data API where supabase-js looks for it, behind the resolver
// that verifies its tokens, beside a table declared with Go hooks.
func ExampleNew() {
	ctx := context.Background()
	pool, err := db.NewPool(ctx, "postgres://app@127.0.0.1/app")
	if err != nil {
		log.Fatal(err)
	}
	d := db.New(pool, nil)
	rv, err := authctx.New(ctx, &authctx.Config{ProjectURL: "https://project.supabase.co"})
	if err != nil {
		log.Fatal(err)
	}
	todos, err := rest.NewResource(ctx, d, "public.todos", &rest.Config{
		Hooks: rest.Hooks{BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
			data["title"] = "[new] " + data["title"].(string)
			return data, nil
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	api, err := dataapi.New(ctx, &dataapi.Config{DB: d, Tables: map[string]*dataapi.Table{
		"public.todos": {Resource: todos, Allow: []authctx.Allow{authctx.AllowUser}},
	}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/rest/v1/", http.StripPrefix("/rest/v1", rv.Middleware(rv.CrossSite(api))))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
