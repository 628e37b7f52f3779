package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/tablegate/tablegate/internal/hostport"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/server"
)

const serveUsage = `Usage:
  tablegate serve --config FILE [--addr HOST:PORT] [--database-url URL]
                  [--read-header-timeout D] [--read-timeout D]
                  [--write-timeout D] [--idle-timeout D]

Serves the tables declared in a JSON config file as REST resources bound to
the caller (row-level security applies), PostgREST-style, without writing
Go. See docs/cli.md for the file format; in short:

  {
    "base_path": "/api",
    "auth": {"url": "https://<project>.supabase.co"},
    "permissions": {"todos.delete": ["admin"]},
    "tables": {
      "todos": {"table": "public.todos", "operations": ["list","get","create","update","delete"],
                "select": ["id","title","done"], "permissions": {"delete": "todos.delete"},
                "guard": ["user","anonymous"]}
    }
  }

Row-level security must protect every table: serve refuses to start for a
table whose RLS is disabled or a view without security_invoker, naming the
SQL that fixes it. "allow_without_rls": true on a table serves it anyway
(a public table): a warning at every start, and the OpenAPI document says
so. A served operation whose grant is missing is a warning at start.

Routes: {base_path}/{name}[/{key}], {base_path}/openapi.json, {base_path}/docs,
/mcp (with "mcp": true: the same operations as MCP tools), /livez (process)
and /readyz (the database answers — a busy pool is not down — and the
signing keys are loaded). SIGINT/SIGTERM stop taking connections and let
running requests finish for up to --shutdown-timeout (10 s), then cancel
them (they answer 503) and exit 0.

Database time budget: each statement of a request runs under
--statement-timeout (5 s), set in its transaction; waiting for a pooled
connection is bounded by --acquire-timeout (2 s); both answer 503 with
Retry-After. The pool holds --db-max-conns connections (8 per CPU, 16..64).
The config's "database" object sets the same ({"max_conns": 16,
"statement_timeout": "5s", "acquire_timeout": "2s"}); a table's
"statement_timeout" overrides it for that table, and "filter_columns"
limits list filters and order to the listed (indexed) columns.
See docs/operations.md.

--admin-addr serves /livez, /readyz and /metrics (Prometheus) on a separate
listener; one JSON access log line per request goes to stderr; traces and
metrics export over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (see
docs/observability.md).

Tokens must carry iss {auth.url}/auth/v1 (when the project URL is known)
and aud "authenticated"; auth.issuer and auth.audience change them ("*"
checks none), auth.max_token_lifetime (e.g. "168h") refuses longer-lived
tokens. The server's timeouts ("timeouts": {"read_header": "10s", "read":
"30s", "write": "60s", "idle": "2m"}, the defaults) bound every connection;
the --*-timeout flags win over the file.

Environment: DATABASE_URL (unless --database-url or the config's
database_url), DATABASE_REPLICA_URLS (comma-separated read replica URLs;
unless set, the config's "read_replicas": [...]; docs/scale-out.md), SUPABASE_URL (unless auth.url), SUPABASE_JWKS (inline JWKS),
SUPABASE_JWT_ISSUER and SUPABASE_JWT_AUDIENCE (unless auth.issuer/audience),
SUPABASE_SECRET_KEYS ({"name":"sb_secret_…"}: apikey callers become service),
SUPABASE_PUBLISHABLE_KEY (needed by auth.refresh and auth.flows).

"auth": {"flows": {"site_url": "http://localhost:8080"}} also serves the
sign-in flows of the project under /auth (POST /auth/sign-in, /auth/otp,
/auth/verify, /auth/sign-out; GET /auth/oauth, /auth/callback), writing
sessions in the @supabase/ssr cookie the resolver reads (and refreshes:
flows turn auth.refresh on). flows.site_url (or public_url) is the origin
browsers open, where OAuth and magic links return (https makes the cookies
Secure); flows.redirect_urls further allowed next targets;
flows.tokens_only the cookie encoding; flows.timeout each auth call's
bound (10s, below the write timeout). Sign-in attempts are limited per
email or phone (flows.attempts_per_account, 10) and per client address
(flows.attempts_per_address, 60) in each flows.attempt_window (1m; -1
turns a limit off): past a limit, 429 with Retry-After.
flows.trusted_proxy_header (e.g. X-Forwarded-For) names the header a
proxy in front sets to the client's address; unset, the connection's
address counts. See docs/auth-flows.md.

"data_api": {"path": "/rest/v1", "schemas": ["public"], "max_rows": 1000}
(the defaults) also serves PostgREST's wire format for supabase-js and the
other Supabase clients: every table, view and function of the schemas, as
the caller (row-level security decides; tables without it stop the start
unless "allow_without_rls": true), declared tables with their select,
guard, operations and permissions. See docs/data-api.md.

"cors": {"allowed_origins": ["https://app.example.com"]} (or ["*"]) lets
pages of those origins call every route with the user's Bearer token or
the publishable key (a secret key or service token from a page is
refused): preflights are answered before authentication, and credentials
are never allowed across origins, so the session cookie stays same-site
("max_age" caches preflights, 10m by default).
`

func runServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "serve", serveUsage)
	configPath := fs.String("config", "", "config `file` (JSON)")
	addr := fs.String("addr", "", "listen address `HOST:PORT` (default the config's addr, else 127.0.0.1:8080)")
	dbFlag := fs.String("database-url", "", "Postgres `URL` (default $DATABASE_URL, else the config's database_url)")
	var budget budgetFlags
	budget.register(fs)
	var of opsFlags
	of.register(fs)
	var flagTimeouts timeoutFlags
	flagTimeouts.register(fs)
	mcpStdio := fs.Bool("mcp-stdio", false, "serve the tables as MCP tools over stdin/stdout instead of HTTP; the caller is "+mcptools.EnvAccessToken+" (a user's JWT) or "+mcptools.EnvAPIKey+" (a secret key)")
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	tuneGC(e.getenv)
	if *configPath == "" {
		return usagef("--config is required (a JSON file declaring the tables; see docs/cli.md)")
	}
	if err := budget.validate(); err != nil {
		return err
	}
	cfg, err := server.LoadConfig(*configPath)
	if err != nil {
		return err
	}
	budget.apply(&cfg.Database)
	flagTimeouts.apply(&cfg.Timeouts)
	of.apply(fs, cfg)
	if *addr == "" {
		*addr = cfg.Addr
	}
	if *addr == "" {
		*addr = server.DefaultAddr
	}
	if cfg.DatabaseURL, err = databaseURL(e.getenv, *dbFlag, cfg.DatabaseURL); err != nil {
		return err
	}
	obs, err := setupObservability(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer obs.close()
	obs.apply(cfg)
	cfg.Log, cfg.Getenv, cfg.ShutdownTimeout = e.stderr, e.getenv, budget.shutdownTimeout
	if *mcpStdio {
		srv, err := newServer(ctx, cfg)
		if err != nil {
			return err
		}
		defer srv.Close()
		return usage(srv.ServeMCPStdio(ctx, e.getenv))
	}
	// Listen first: the MCP endpoint's metadata names the real address.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is the port in use?)", *addr, err)
	}
	cfg.Addr = ln.Addr().String()
	srv, err := newServer(ctx, cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	printServing(e.stderr, cfg, srv, ln.Addr(), e.getenv)
	// The shutdown starts with the signal; Serve's own context outlives
	// it so that this line comes first.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	defer context.AfterFunc(ctx, func() {
		fmt.Fprintf(e.stderr, "▸ shutting down (running requests may finish for up to %s)\n", budget.shutdownTimeout)
		stop()
	})()
	return srv.Serve(sctx, ln)
}

// newServer is server.New with its usage errors exiting 2.
func newServer(ctx context.Context, cfg *server.Config) (*server.Server, error) {
	srv, err := server.New(ctx, cfg)
	return srv, usage(err)
}

// usage turns a server.UsageError into a usage error of the command.
func usage(err error) error {
	var ue *server.UsageError
	if errors.As(err, &ue) {
		return usagef("%s", ue.Error())
	}
	return err
}

// printServing prints the routes serve answers on at a.
func printServing(out io.Writer, cfg *server.Config, srv *server.Server, a net.Addr, getenv func(string) string) {
	base := "http://" + hostport.Of(a)
	bp := strings.TrimRight(cfg.BasePath, "/")
	fmt.Fprintf(out, "✓ serving %d table(s) on %s%s (description %s%s/openapi.json, docs %s%s/docs)%s\n", len(cfg.Tables), base, bp, base, bp, base, bp, hostport.Everywhere(a))
	for _, n := range cfg.TableNames() {
		t := cfg.Tables[n]
		fmt.Fprintf(out, "  %s%s/%s → %s (%s; guard %s)\n", base, bp, n, t.Table, strings.Join(t.Operations, ", "), strings.Join(t.Guard, ", "))
		if t.Events {
			fmt.Fprintf(out, "  %s%s/%s/events → events of %s (Server-Sent Events)\n", base, bp, n, t.Table)
		}
	}
	if n := len(srv.DB().ReplicaStats().Replicas); n > 0 {
		fmt.Fprintf(out, "  reads (get, list, read-only actions) → %d read replica(s) in rotation, else the primary; writes answer Tablegate-Position for read-your-writes\n", n)
	}
	if dc := cfg.DataAPI; dc != nil {
		fmt.Fprintf(out, "  %s%s/{table}, %s%s/rpc/{function} → PostgREST-compatible data API over %s\n", base, dc.Path, base, dc.Path, strings.Join(dc.Schemas, ", "))
	}
	if cfg.Auth.Flows != nil {
		project := cfg.Auth.URL
		if project == "" {
			project = strings.TrimSpace(getenv("SUPABASE_URL"))
		}
		fmt.Fprintf(out, "  %s/auth/{sign-in,otp,verify,oauth,callback,sign-out} → sessions of %s (cookie %s)\n", base, project, srv.Resolver().CookieName())
	}
	if cfg.CORS != nil {
		fmt.Fprintf(out, "  cross-origin calls (Bearer or apikey, no cookies) from %s\n", strings.Join(cfg.CORS.AllowedOrigins, ", "))
	}
}
