// Package server is the server "tablegate serve" runs, for Go programs that
// embed it: the tables of a config served as REST resources bound to the
// caller (row-level security applies), their OpenAPI description and
// docs, event streams, MCP tools, the PostgREST-compatible data API and
// the sign-in flows, behind the caller resolution of package authctx.
//
// A [Config] is the JSON config file of tablegate serve, key for key:
// [LoadConfig] and [ParseConfig] read one with the same defaults and the
// same errors (each with its line, column and key path, and the nearest
// known key for a misspelt one). A program may also fill a Config in Go,
// and set the fields the file cannot hold: the OpenTelemetry providers,
// the /metrics handler, the log, and [Config.Routes] to serve routes of
// its own behind the same caller resolution.
//
// [New] connects to the database (migrated with "tablegate migrate up"),
// loads the signing keys and builds every table, refusing one row-level
// security does not protect. [Server.Handler] serves the public routes;
// mount it on the program's own mux, or call [Server.Serve] for the
// listener, the admin listener ([Server.AdminHandler]: /livez, /readyz,
// /metrics) and the graceful shutdown tablegate serve has. [Server.Close]
// releases the pools and the resolver.
//
//	cfg, err := server.LoadConfig("tablegate.json")
//	if err != nil {
//		log.Fatal(err)
//	}
//	cfg.Getenv = os.Getenv // SUPABASE_URL, SUPABASE_SECRET_KEYS, ... as serve reads them
//	srv, err := server.New(ctx, cfg)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer srv.Close()
//	mux := http.NewServeMux()
//	mux.HandleFunc("GET /healthz", healthz)
//	mux.Handle("/", srv.Handler())
//
// See the package example, docs/cli.md for the config keys and
// docs/embedding.md.
package server
