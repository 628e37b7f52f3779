package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/dataapi"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/spec/reference"
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
	var flagTimeouts httpTimeouts
	flagTimeouts.flags(fs)
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
	cfg, err := loadServeConfig(*configPath)
	if err != nil {
		return err
	}
	budget.merge(cfg.Database)
	if *addr == "" {
		*addr = cfg.Addr
	}
	timeouts := cfg.Timeouts
	for i, f := range flagTimeouts.fields() {
		if *f.p != 0 {
			*timeouts.fields()[i].p = *f.p
		}
	}
	if *addr == "" {
		*addr = "127.0.0.1:8080"
	}
	if f := cfg.Auth.Flows; f != nil {
		// A flow still waiting on the auth server when the write deadline
		// passes would answer nothing at all.
		if w := time.Duration(timeouts.withDefaults().Write); w > 0 && flowsTimeout(f) >= w {
			return usagef("auth.flows.timeout (%s) must be shorter than the write timeout (%s)", flowsTimeout(f), w)
		}
	}
	dbURL, err := databaseURL(e.getenv, *dbFlag, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	// Configuration mistakes first, before the database is touched.
	acfg, err := authConfigFor(cfg, e.getenv)
	if err != nil {
		return err
	}
	out := e.stderr
	of.fromConfig(fs, cfg)
	obs, err := setupObservability(ctx, e.getenv, of.observeOpts(e))
	if err != nil {
		return err
	}
	defer obs.close()
	pool, err := connectPool(ctx, dbURL, int32(budget.maxConns), obs.tel)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := checkMigrated(ctx, out, pool); err != nil {
		return err
	}
	acfg.Telemetry = obs.tel
	rv, err := authctx.New(ctx, &acfg)
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer rv.Close()
	var flows *authflow.Flows // authflow.New checks redirect_urls and timeout
	if f := cfg.Auth.Flows; f != nil {
		flows, err = authflow.New(&authflow.Config{
			ProjectURL: acfg.ProjectURL, PublishableKey: acfg.PublishableKeys[0], CookieName: rv.CookieName(),
			CookieOptions: acfg.CookieOptions, SiteURL: cfg.flowsSite(), RedirectURLs: f.RedirectURLs,
			TokensOnly: f.TokensOnly, Timeout: flowsTimeout(f), Sessions: rv,
			AttemptsPerAccount: f.AttemptsPerAccount, AttemptsPerAddress: f.AttemptsPerAddress,
			AttemptWindow: time.Duration(f.AttemptWindow), TrustedProxyHeader: f.TrustedProxyHeader,
		})
		if err != nil {
			return fmt.Errorf("auth.flows: %w", err)
		}
	}
	replicaList, err := replicaURLs(e.getenv, cfg.ReadReplicas)
	if err != nil {
		return err
	}
	replicaPools, closeReplicas, err := connectReplicas(ctx, out, replicaList, int32(budget.maxConns), obs.tel)
	if err != nil {
		return err
	}
	defer closeReplicas()
	d := db.New(pool, withReplicas(budget.dbConfig(), replicaPools))
	defer d.Close()
	if err := db.RecordReplicaStats(d, obs.tel); err != nil {
		return err
	}
	if *mcpStdio {
		return serveMCPStdio(ctx, e, cfg, d, rv)
	}
	if of.adminAddr != "" {
		_, stop, err := startAdmin(ctx, out, of.adminAddr, adminHandler(readinessChecks(pool, rv), obs.metrics))
		if err != nil {
			return err
		}
		defer stop()
	}
	// Listen first: the MCP endpoint's metadata names the real address.
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is the port in use?)", *addr, err)
	}
	base := "http://" + hostPort(ln.Addr())
	public := cfg.PublicURL
	if public == "" {
		public = base
	}
	app, closeStreams, err := buildServeHandler(ctx, cfg, d, rv, public, authServerOf(acfg), slog.New(slog.NewTextHandler(out, nil)))
	if err != nil {
		ln.Close()
		return err
	}
	// Event streams never end by themselves: end them when the shutdown
	// starts (subscribers resume with Last-Event-ID), so that it waits
	// only for ordinary requests.
	defer closeStreams()
	defer context.AfterFunc(ctx, closeStreams)()
	mux := http.NewServeMux()
	health(mux, pool, rv)
	if cfg.CORS != nil {
		app = refuseBrowserServices(app)
	}
	mux.Handle("/", rv.Middleware(rv.CrossSite(app)))
	if flows != nil {
		mountFlows(mux, flows)
	}
	fmt.Fprintf(out, "✓ serving %d table(s) on %s%s (description %s%s/openapi.json, docs %s%s/docs)%s\n", len(cfg.Tables), base, cfg.base(), base, cfg.base(), base, cfg.base(), everywhere(ln.Addr()))
	for _, n := range cfg.tableNames() {
		t := cfg.Tables[n]
		fmt.Fprintf(out, "  %s%s/%s → %s (%s; guard %s)\n", base, cfg.base(), n, t.Table, strings.Join(t.Operations, ", "), strings.Join(t.Guard, ", "))
		if t.Events {
			fmt.Fprintf(out, "  %s%s/%s/events → events of %s (Server-Sent Events)\n", base, cfg.base(), n, t.Table)
		}
	}
	if n := len(replicaPools); n > 0 {
		fmt.Fprintf(out, "  reads (get, list, read-only actions) → %d read replica(s) in rotation, else the primary; writes answer Tablegate-Position for read-your-writes\n", n)
	}
	if dc := cfg.DataAPI; dc != nil {
		fmt.Fprintf(out, "  %s%s/{table}, %s%s/rpc/{function} → PostgREST-compatible data API over %s\n", base, dc.Path, base, dc.Path, strings.Join(dc.Schemas, ", "))
	}
	if cfg.Auth.Flows != nil {
		fmt.Fprintf(out, "  %s/auth/{sign-in,otp,verify,oauth,callback,sign-out} → sessions of %s (cookie %s)\n", base, acfg.ProjectURL, rv.CookieName())
	}
	var h http.Handler = problemFallback(mux)
	if cfg.CORS != nil {
		h = corsHandler(cfg.CORS, h)
		fmt.Fprintf(out, "  cross-origin calls (Bearer or apikey, no cookies) from %s\n", strings.Join(cfg.CORS.AllowedOrigins, ", "))
	}
	return serveUntilDone(ctx, out, ln, obs.tel.Handler(h), timeouts, budget.shutdownTimeout)
}

// serveUntilDone serves until ctx ends, then shuts down within limit (see
// graceful.shutdown): running requests finish or are cancelled, and the
// exit is normal either way.
func serveUntilDone(ctx context.Context, out io.Writer, ln net.Listener, h http.Handler, timeouts httpTimeouts, limit time.Duration) error {
	srv := timeouts.server(h)
	g := newGraceful(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintf(out, "▸ shutting down (running requests may finish for up to %s)\n", limit)
	g.shutdown(out, srv, limit)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// flowsTimeout is the bound of each auth server call of the sign-in flows.
func flowsTimeout(f *authFlowsConfig) time.Duration {
	if f.Timeout > 0 {
		return time.Duration(f.Timeout)
	}
	return 10 * time.Second
}

// authServerOf is the authorization server of a resolver configuration,
// for the MCP metadata: the checked issuer, else {project URL}/auth/v1;
// "" when neither is known (keys given inline only).
func authServerOf(ac authctx.Config) string {
	if ac.Issuer != "" {
		return ac.Issuer
	}
	if ac.ProjectURL != "" {
		return strings.TrimRight(ac.ProjectURL, "/") + "/auth/v1"
	}
	return ""
}

// authConfigFor builds the resolver configuration of serve: the config's
// auth section first, then the Supabase environment variables.
func authConfigFor(cfg *serveConfig, getenv func(string) string) (authctx.Config, error) {
	ac := authctx.Config{
		ProjectURL:     cfg.Auth.URL,
		VerifierConfig: authctx.VerifierConfig{JWKSURL: cfg.Auth.JWKSURL, MaxTokenLifetime: time.Duration(cfg.Auth.MaxTokenLifetime)},
		Refresh:        cfg.Auth.Refresh,
	}
	iss, aud := cfg.Auth.Issuer, cfg.Auth.Audience
	if iss == "" {
		iss = strings.TrimSpace(getenv("SUPABASE_JWT_ISSUER"))
	}
	if aud == "" {
		aud = strings.TrimSpace(getenv("SUPABASE_JWT_AUDIENCE"))
	}
	if iss == "*" {
		ac.AnyIssuer = true
	} else {
		ac.Issuer = iss
	}
	if aud == "*" {
		ac.AnyAudience = true
	} else {
		ac.Audience = aud
	}
	if ac.ProjectURL == "" {
		ac.ProjectURL = strings.TrimSpace(getenv("SUPABASE_URL"))
	}
	if ac.JWKSURL == "" {
		ac.JWKSURL = strings.TrimSpace(getenv("SUPABASE_JWKS_URL"))
	}
	if raw := strings.TrimSpace(getenv("SUPABASE_JWKS")); raw != "" {
		if !json.Valid([]byte(raw)) {
			return ac, usagef("SUPABASE_JWKS is not JSON (want {\"keys\":[...]})")
		}
		ac.JWKS = json.RawMessage(raw)
	}
	if ac.ProjectURL == "" && ac.JWKSURL == "" && len(ac.JWKS) == 0 {
		if strings.TrimSpace(getenv("SUPABASE_JWT_SECRET")) != "" {
			return ac, usagef("no JWKS, only SUPABASE_JWT_SECRET: %s; then set auth.url (or auth.jwks_url) in the config, or SUPABASE_URL", authctx.LegacySecretHelp)
		}
		return ac, usagef("no JWKS: set auth.url (or auth.jwks_url) in the config, or SUPABASE_URL")
	}
	if raw := strings.TrimSpace(getenv("SUPABASE_SECRET_KEYS")); raw != "" {
		var keys map[string]string
		if err := json.Unmarshal([]byte(raw), &keys); err != nil {
			return ac, usagef(`SUPABASE_SECRET_KEYS is not a JSON object of named keys ({"default":"sb_secret_..."})`)
		}
		ac.SecretKeys = keys
	} else if k := strings.TrimSpace(getenv("SUPABASE_SECRET_KEY")); k != "" {
		ac.SecretKeys = map[string]string{"default": k}
	}
	ac.Secret = len(ac.SecretKeys) > 0
	for _, k := range []string{"SUPABASE_PUBLISHABLE_KEY", "SUPABASE_ANON_KEY"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			ac.PublishableKeys = append(ac.PublishableKeys, v)
		}
	}
	if cfg.Auth.Flows != nil {
		// Sessions the flows write must outlive their first access token,
		// and travel only over https when the site is served so.
		ac.Refresh = true
		if strings.HasPrefix(cfg.flowsSite(), "https://") {
			ac.CookieOptions.Secure = true
		}
		if ac.ProjectURL == "" {
			return ac, usagef("auth.flows needs the Supabase project URL: set auth.url in the config, or SUPABASE_URL")
		}
		if len(ac.PublishableKeys) == 0 {
			return ac, usagef("auth.flows needs the project's publishable key: set SUPABASE_PUBLISHABLE_KEY (or SUPABASE_ANON_KEY)")
		}
	}
	return ac, nil
}

// roleAuthorizer grants a permission key to callers whose roles claim
// holds one of the roles the config lists for it ("service" matches service
// callers). Any other permission is denied. It is safe for concurrent use.
type roleAuthorizer map[string][]string

// Authorize implements rest.Authorizer.
func (g roleAuthorizer) Authorize(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	allowed := g[req.Permission]
	if req.Caller.Actor().Type == authctx.KindService {
		if slices.Contains(allowed, "service") {
			return rest.Allowed(), nil
		}
		return rest.Denied(), nil
	}
	for _, r := range claimRoles(req.Caller.Claims()) {
		if slices.Contains(allowed, r) {
			return rest.Allowed(), nil
		}
	}
	return rest.Denied(), nil
}

// AuthorizeRows implements rest.Authorizer: the decision depends on the
// caller only, so every row gets the same one.
func (g roleAuthorizer) AuthorizeRows(ctx context.Context, req *rest.AuthzRequest, rows []rest.Row) ([]rest.Decision, error) {
	d, err := g.Authorize(ctx, req)
	if err != nil {
		return nil, err
	}
	out := make([]rest.Decision, len(rows))
	for i := range out {
		out[i] = d
	}
	return out, nil
}

// DescribePermission implements spec.PermissionDescriber.
func (g roleAuthorizer) DescribePermission(key string) string {
	roles := g[key]
	if len(roles) == 0 {
		return "Granted to nobody (no roles listed in the config)."
	}
	return "Granted to callers whose roles claim holds " + strings.Join(roles, " or ") + "."
}

// buildResources builds one rest resource per configured table. Their
// start-up warnings (a table served with allow_without_rls, an operation
// whose grant is missing) and unexpected errors go to log (nil:
// slog.Default()). A table row-level security does not protect is
// refused with the SQL that protects it, unless allow_without_rls.
func buildResources(ctx context.Context, cfg *serveConfig, d *db.DB, log *slog.Logger) (map[string]*rest.Resource, error) {
	authorizer := roleAuthorizer(cfg.Permissions)
	out := map[string]*rest.Resource{}
	for _, name := range cfg.tableNames() {
		t := cfg.Tables[name]
		opts := &rest.Config{
			Select:          t.Select,
			Key:             t.Key,
			Authorizer:      authorizer,
			Caller:          callerOf,
			FilterColumns:   t.FilterColumns,
			AllowWithoutRLS: t.AllowWithoutRLS,
			GrantRoles:      grantRolesOf(t.Guard),
			Logger:          log,
		}
		opts.StatementTimeout, _ = parseDurationField("", t.StatementTimeout) // validated with the config
		for _, op := range t.Operations {
			opts.Operations = append(opts.Operations, rest.Operation(op))
		}
		if len(t.Permissions) > 0 {
			opts.Permissions = map[rest.Operation]string{}
			for op, key := range t.Permissions {
				opts.Permissions[rest.Operation(op)] = key
			}
		}
		res, err := rest.NewResource(ctx, d, t.Table, opts)
		var rlsErr *db.RLSError
		if errors.As(err, &rlsErr) {
			return nil, fmt.Errorf("tables.%s: %s is not protected by row-level security: %s.\n  Fix: %s\n  Or, for a table every caller may read, set \"allow_without_rls\": true in tables.%s (serve then warns at every start)",
				name, rlsErr.Table, rlsErr.Reason, rlsErr.Fix, name)
		}
		if err != nil {
			return nil, fmt.Errorf("tables.%s (%s): %w", name, t.Table, err)
		}
		out[name] = res
	}
	return out, nil
}

// grantRolesOf lists the database roles the callers a guard admits run
// as, whose grants are checked at start: authenticated for users and
// anonymous sign-ins, anon for callers without a session (service_role,
// which bypasses RLS, is not checked).
func grantRolesOf(guard []string) []string {
	roles := []string{}
	for _, g := range guard {
		role := "authenticated"
		switch g {
		case "anon":
			role = "anon"
		case "service":
			continue
		}
		if !slices.Contains(roles, role) {
			roles = append(roles, role)
		}
	}
	return roles
}

// allowOf converts a config guard list.
func allowOf(guard []string) []authctx.Allow {
	out := make([]authctx.Allow, len(guard))
	for i, g := range guard {
		out[i] = authctx.Allow(g)
	}
	return out
}

// buildStreams builds the event streams of the tables with "events": true,
// each behind its table's guard, over one hub; hub is nil when no table
// streams. The caller closes the hub.
func buildStreams(ctx context.Context, cfg *serveConfig, d *db.DB, rv *authctx.Resolver, resources map[string]*rest.Resource) (map[string]spec.EventStream, *events.Hub, error) {
	var hub *events.Hub
	streams := map[string]spec.EventStream{}
	for _, name := range cfg.tableNames() {
		t := cfg.Tables[name]
		if !t.Events {
			continue
		}
		if hub == nil {
			var err error
			if hub, err = events.New(ctx, cfg.Events.hubConfig(d)); err != nil {
				return nil, nil, fmt.Errorf("events: %w", err)
			}
		}
		st, err := hub.Stream(ctx, resources[name], &events.StreamOpts{Table: true, Resolver: rv, Allow: allowOf(t.Guard)})
		if err != nil {
			hub.Close()
			return nil, nil, fmt.Errorf("tables.%s.events: %w", name, err)
		}
		streams[name] = st
	}
	return streams, hub, nil
}

// defineAPI builds the tables' resources, their event streams and their
// description; the API's handler serves them under base_path, each table
// behind its guard. rv may be nil (the description alone: no cookie
// name). The caller closes the hub when it is not nil.
func defineAPI(ctx context.Context, cfg *serveConfig, d *db.DB, rv *authctx.Resolver, log *slog.Logger) (*spec.API, map[string]*rest.Resource, *events.Hub, error) {
	resources, err := buildResources(ctx, cfg, d, log)
	if err != nil {
		return nil, nil, nil, err
	}
	allow := map[string][]authctx.Allow{}
	for _, name := range cfg.tableNames() {
		allow[name] = allowOf(cfg.Tables[name].Guard)
	}
	streams, hub, err := buildStreams(ctx, cfg, d, rv, resources)
	if err != nil {
		return nil, nil, nil, err
	}
	cookieName := ""
	if rv != nil {
		cookieName = rv.CookieName()
	}
	api, err := spec.DefineAPI(&spec.Config{
		Info:       spec.Info{Title: cfg.Title, Version: cfg.Version},
		BasePath:   cfg.base(),
		Docs:       reference.Page,
		Authorizer: roleAuthorizer(cfg.Permissions),
		Resources:  resources,
		Allow:      allow,
		Guard:      authctx.Guard,
		CookieName: cookieName,
		ProjectURL: cfg.Auth.URL,
		Streams:    streams,
	})
	if err != nil {
		if hub != nil {
			hub.Close()
		}
		return nil, nil, nil, fmt.Errorf("API description: %w", err)
	}
	return api, resources, hub, nil
}

// buildServeHandler serves every table under base_path behind its guard,
// with the description at {base_path}/openapi.json and {base_path}/docs,
// and with "mcp": true the same operations as MCP tools at /mcp.
//
// public is the URL clients reach the server at and authServer the auth
// server issuing tokens: MCP's 401 challenges name the protected resource
// metadata served at public+mcpMetadataPath (RFC 9728).
//
// The returned close function stops the tables' event streams (a no-op
// when none streams).
func buildServeHandler(ctx context.Context, cfg *serveConfig, d *db.DB, rv *authctx.Resolver, public, authServer string, log *slog.Logger) (http.Handler, func(), error) {
	api, resources, hub, err := defineAPI(ctx, cfg, d, rv, log)
	if err != nil {
		return nil, nil, err
	}
	closeHub := func() {}
	if hub != nil {
		closeHub = hub.Close
	}
	var data http.Handler
	if cfg.DataAPI != nil {
		if data, err = buildDataAPI(ctx, cfg, d, resources); err != nil {
			closeHub()
			return nil, nil, err
		}
	}
	if !cfg.MCP && data == nil {
		return api.Handler(), closeHub, nil
	}
	if !cfg.MCP {
		mux := http.NewServeMux()
		mux.Handle(cfg.DataAPI.Path+"/", data)
		mux.Handle("/", api.Handler())
		return reportPatterns(mux), closeHub, nil
	}
	metadataURL, metadata := mcpDiscovery(public, authServer)
	h, err := mcpHandler(cfg, resources, rv, metadataURL)
	if err != nil {
		closeHub()
		return nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle(mcpMetadataPath, metadata)
	if data != nil {
		mux.Handle(cfg.DataAPI.Path+"/", data)
	}
	mux.Handle("/", api.Handler())
	return reportPatterns(mux), closeHub, nil
}

// buildDataAPI builds the PostgREST-compatible data API of "data_api",
// mounted under its path: the declared tables keep their select, guard,
// permissions and hooks.
func buildDataAPI(ctx context.Context, cfg *serveConfig, d *db.DB, resources map[string]*rest.Resource) (http.Handler, error) {
	dc := cfg.DataAPI
	tables := map[string]*dataapi.Table{}
	for _, name := range cfg.tableNames() {
		t := cfg.Tables[name]
		if _, dup := tables[t.Table]; !dup {
			tables[t.Table] = &dataapi.Table{Resource: resources[name], Allow: allowOf(t.Guard)}
		}
	}
	api, err := dataapi.New(ctx, &dataapi.Config{DB: d, Schemas: dc.Schemas, MaxRows: dc.MaxRows,
		AllowWithoutRLS: dc.AllowWithoutRLS, Aggregates: dc.Aggregates, Tables: tables, Caller: callerOf})
	if err != nil {
		return nil, fmt.Errorf("data_api: %w", err)
	}
	return http.StripPrefix(dc.Path, api), nil
}

// mcpTools builds the MCP tools of the resources, each table's tools behind
// that table's guard, and the allow list of the transport: every caller
// kind some table admits.
func mcpTools(cfg *serveConfig, resources map[string]*rest.Resource) (*mcptools.Server, []authctx.Allow, error) {
	var list []*rest.Resource
	guards := map[*rest.Resource]func(authctx.Auth) *problem.Problem{}
	var union []authctx.Allow
	for _, name := range cfg.tableNames() {
		r := resources[name]
		list = append(list, r)
		allow := allowOf(cfg.Tables[name].Guard)
		guards[r] = mcptools.AllowList(allow...)
		for _, a := range allow {
			if !slices.Contains(union, a) {
				union = append(union, a)
			}
		}
	}
	tools, err := mcptools.New(&mcptools.Config{Resources: list, Guards: guards, Title: cfg.Title, Version: cfg.Version})
	if err != nil {
		return nil, nil, fmt.Errorf("MCP tools: %w", err)
	}
	return tools, union, nil
}

// mcpHandler serves the resources as MCP tools over Streamable HTTP.
func mcpHandler(cfg *serveConfig, resources map[string]*rest.Resource, rv *authctx.Resolver, metadataURL string) (http.Handler, error) {
	tools, union, err := mcpTools(cfg, resources)
	if err != nil {
		return nil, err
	}
	return tools.Handler(&mcptools.HTTPConfig{Resolver: rv, Allow: union, ResourceMetadataURL: metadataURL})
}

// serveMCPStdio serves one MCP session over stdin/stdout, as the caller of
// the token or secret key in the environment, until the client hangs up.
func serveMCPStdio(ctx context.Context, e *env, cfg *serveConfig, d *db.DB, rv *authctx.Resolver) error {
	resources, err := buildResources(ctx, cfg, d, slog.New(slog.NewTextHandler(e.stderr, nil)))
	if err != nil {
		return err
	}
	tools, union, err := mcpTools(cfg, resources)
	if err != nil {
		return err
	}
	caller, err := mcptools.CallerFromEnv(ctx, e.getenv, mcptools.ResolverCaller(rv))
	if err != nil {
		return usagef("%v", err)
	}
	admit := mcptools.AllowList(union...)
	if p := admit(caller); p != nil {
		return fmt.Errorf("MCP caller refused: %s (set %s to a user's access token or %s to a secret key)", p.Detail, mcptools.EnvAccessToken, mcptools.EnvAPIKey)
	}
	fmt.Fprintf(e.stderr, "✓ serving %d table(s) as MCP tools on stdin/stdout (caller: %s)\n", len(cfg.Tables), caller.Kind)
	err = mcptools.ServeStdio(ctx, tools, caller, admit)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// checkMigrated refuses a database tablegate's migrations were never
// applied to (no version, no tablegate schema), and warns when some are
// pending: the policies, auth.uid() and the API roles come from them. It
// reads the version table without creating it (goose's own reading
// would).
func checkMigrated(ctx context.Context, out io.Writer, pool *pgxpool.Pool) error {
	var table, schema bool
	if err := pool.QueryRow(ctx, `select to_regclass($1) is not null, to_regnamespace('tablegate') is not null`,
		db.MigrationTable).Scan(&table, &schema); err != nil {
		return fmt.Errorf("read tablegate's migration version: %w", err)
	}
	var cur int64
	if table {
		if err := pool.QueryRow(ctx, `select coalesce(max(version_id), 0) from `+pgx.Identifier{db.MigrationTable}.Sanitize()).Scan(&cur); err != nil {
			return fmt.Errorf("read tablegate's migration version: %w", err)
		}
	}
	switch {
	case cur == 0 && !schema:
		return errors.New(`the database is not migrated (no tablegate migrations applied): run "tablegate migrate up", then your own migrations ("tablegate migrate up --dir migrations")`)
	case cur == 0:
		return nil // the schema came another way (a copy of the SQL in the project's own migrations)
	}
	p, err := db.NewMigrator(pool)
	if err != nil {
		return err
	}
	defer p.Close()
	if srcs := p.ListSources(); len(srcs) > 0 && cur < srcs[len(srcs)-1].Version {
		fmt.Fprintf(out, "! tablegate migrations at version %d, %d available: run \"tablegate migrate up\"\n", cur, srcs[len(srcs)-1].Version)
	}
	return nil
}
