package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/dataapi"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/mcpdiscovery"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/spec/reference"
)

// flowsTimeout is the bound of each auth server call of the sign-in flows.
func flowsTimeout(f *AuthFlowsConfig) time.Duration {
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

// authConfigFor builds the resolver configuration: the config's auth
// section first (its Go-only keys included), then the Supabase
// environment variables getenv reads.
func authConfigFor(cfg *Config, getenv func(string) string) (authctx.Config, error) {
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
	if len(cfg.Auth.JWKS) > 0 {
		if !json.Valid(cfg.Auth.JWKS) {
			return ac, usagef("auth: JWKS is not JSON (want {\"keys\":[...]})")
		}
		ac.JWKS = cfg.Auth.JWKS
	} else if raw := strings.TrimSpace(getenv("SUPABASE_JWKS")); raw != "" {
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
	if cfg.Auth.SecretKeys != nil {
		ac.SecretKeys = cfg.Auth.SecretKeys
	} else if raw := strings.TrimSpace(getenv("SUPABASE_SECRET_KEYS")); raw != "" {
		var keys map[string]string
		if err := json.Unmarshal([]byte(raw), &keys); err != nil {
			return ac, usagef(`SUPABASE_SECRET_KEYS is not a JSON object of named keys ({"default":"sb_secret_..."})`)
		}
		ac.SecretKeys = keys
	} else if k := strings.TrimSpace(getenv("SUPABASE_SECRET_KEY")); k != "" {
		ac.SecretKeys = map[string]string{"default": k}
	}
	ac.Secret = len(ac.SecretKeys) > 0
	ac.PublishableKeys = append(ac.PublishableKeys, cfg.Auth.PublishableKeys...)
	for _, k := range []string{"SUPABASE_PUBLISHABLE_KEY", "SUPABASE_ANON_KEY"} {
		if len(cfg.Auth.PublishableKeys) > 0 {
			break
		}
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

// buildResources builds one rest resource per configured table. Their
// start-up warnings (a table served with allow_without_rls, an operation
// whose grant is missing) and unexpected errors go to log (nil:
// slog.Default()). A table row-level security does not protect is
// refused with the SQL that protects it, unless allow_without_rls.
func buildResources(ctx context.Context, cfg *Config, d *db.DB, authorizer *permissions, log *slog.Logger) (map[string]*rest.Resource, error) {
	out := map[string]*rest.Resource{}
	for _, name := range cfg.TableNames() {
		t := cfg.Tables[name]
		opts := &rest.Config{
			Select:          t.Select,
			Key:             t.Key,
			Authorizer:      authorizer,
			Caller:          callerOf,
			FilterColumns:   t.FilterColumns,
			AllowWithoutRLS: t.AllowWithoutRLS,
			GrantRoles:      t.GrantRoles(),
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

// GrantRoles lists the database roles the callers the table's guard
// admits run as, whose grants are checked at start: authenticated for
// users and anonymous sign-ins, anon for callers without a session
// (service_role, which bypasses RLS, is not checked).
func (t *TableConfig) GrantRoles() []string {
	roles := []string{}
	for _, g := range t.Guard {
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
func buildStreams(ctx context.Context, cfg *Config, d *db.DB, rv *authctx.Resolver, resources map[string]*rest.Resource) (map[string]spec.EventStream, *events.Hub, error) {
	var hub *events.Hub
	streams := map[string]spec.EventStream{}
	for _, name := range cfg.TableNames() {
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
func defineAPI(ctx context.Context, cfg *Config, d *db.DB, rv *authctx.Resolver, log *slog.Logger) (*spec.API, map[string]*rest.Resource, *events.Hub, error) {
	perms, err := newPermissions(cfg.Permissions)
	if err != nil {
		return nil, nil, nil, err
	}
	resources, err := buildResources(ctx, cfg, d, perms, log)
	if err != nil {
		return nil, nil, nil, err
	}
	allow := map[string][]authctx.Allow{}
	for _, name := range cfg.TableNames() {
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
		Authorizer: perms,
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
// metadata served at public+mcpdiscovery.Path (RFC 9728).
//
// It returns the tables' resources and a function that stops the tables' event streams (a no-op
// when none streams).
func buildServeHandler(ctx context.Context, cfg *Config, d *db.DB, rv *authctx.Resolver, public, authServer string, log *slog.Logger) (http.Handler, map[string]*rest.Resource, func(), error) {
	api, resources, hub, err := defineAPI(ctx, cfg, d, rv, log)
	if err != nil {
		return nil, nil, nil, err
	}
	closeHub := func() {}
	if hub != nil {
		closeHub = hub.Close
	}
	var data http.Handler
	if cfg.DataAPI != nil {
		var stopData func()
		if data, stopData, err = buildDataAPI(ctx, cfg, d, resources); err != nil {
			closeHub()
			return nil, nil, nil, err
		}
		closeStreams := closeHub
		closeHub = func() { stopData(); closeStreams() }
	}
	if !cfg.MCP && data == nil {
		return api.Handler(), resources, closeHub, nil
	}
	if !cfg.MCP {
		mux := http.NewServeMux()
		mux.Handle(cfg.DataAPI.Path+"/", data)
		mountAPI(mux, api.Router(), cfg.base(), cfg.DataAPI.Path)
		return reportPatterns(mux), resources, closeHub, nil
	}
	metadataURL, metadata := mcpdiscovery.Handler(public, authServer)
	h, err := mcpHandler(cfg, resources, rv, metadataURL)
	if err != nil {
		closeHub()
		return nil, nil, nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	mux.Handle(mcpdiscovery.Path, metadata)
	beside := []string{"/mcp", mcpdiscovery.Path}
	if data != nil {
		mux.Handle(cfg.DataAPI.Path+"/", data)
		beside = append(beside, cfg.DataAPI.Path)
	}
	mountAPI(mux, api.Router(), cfg.base(), beside...)
	return reportPatterns(mux), resources, closeHub, nil
}

// mountAPI serves rt, the API's router at base, from mux's "/", whose
// other patterns are at the paths beside (and, for a data API, below
// them). When none of those is at or below base, nor base below one of
// them, rt's patterns go on mux itself (with rt's 404 at "/"): ServeMux
// then gives every path the handler it gives it through rt, in one
// lookup. Otherwise mux's "/" is rt, so that mux's own patterns keep
// precedence.
func mountAPI(mux *http.ServeMux, rt *rest.Router, base string, beside ...string) {
	disjoint := base != ""
	for _, p := range beside {
		disjoint = disjoint && p != base && !strings.HasPrefix(p, base+"/") && !strings.HasPrefix(base, p+"/")
	}
	if !disjoint {
		mux.Handle("/", rt)
		return
	}
	rt.Register(mux)
	mux.Handle("/", rt.NotFound())
}

// buildDataAPI builds the PostgREST-compatible data API of "data_api",
// mounted under its path: the declared tables keep their select, guard,
// permissions and hooks. It reloads the schema on NOTIFY pgrst until the
// returned stop function is called.
func buildDataAPI(ctx context.Context, cfg *Config, d *db.DB, resources map[string]*rest.Resource) (http.Handler, func(), error) {
	dc := cfg.DataAPI
	tables := map[string]*dataapi.Table{}
	for _, name := range cfg.TableNames() {
		t := cfg.Tables[name]
		if _, dup := tables[t.Table]; !dup {
			tables[t.Table] = &dataapi.Table{Resource: resources[name], Allow: allowOf(t.Guard)}
		}
	}
	api, err := dataapi.New(ctx, &dataapi.Config{DB: d, Schemas: dc.Schemas, MaxRows: dc.MaxRows,
		AllowWithoutRLS: dc.AllowWithoutRLS, Aggregates: dc.Aggregates, Tables: tables, Caller: callerOf})
	if err != nil {
		return nil, nil, fmt.Errorf("data_api: %w", err)
	}
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = api.Listen(lctx) }()
	return http.StripPrefix(dc.Path, api), func() { stop(); <-done }, nil
}

// mcpTools builds the MCP tools of the resources, each table's tools behind
// that table's guard, and the allow list of the transport: every caller
// kind some table admits.
func mcpTools(cfg *Config, resources map[string]*rest.Resource) (*mcptools.Server, []authctx.Allow, error) {
	var list []*rest.Resource
	guards := map[*rest.Resource]func(authctx.Auth) *problem.Problem{}
	var union []authctx.Allow
	for _, name := range cfg.TableNames() {
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
func mcpHandler(cfg *Config, resources map[string]*rest.Resource, rv *authctx.Resolver, metadataURL string) (http.Handler, error) {
	tools, union, err := mcpTools(cfg, resources)
	if err != nil {
		return nil, err
	}
	return tools.Handler(&mcptools.HTTPConfig{Resolver: rv, Allow: union, ResourceMetadataURL: metadataURL})
}

// ServeMCPStdio serves the tables as MCP tools over stdin/stdout, one
// session, until the client hangs up or ctx ends. The caller is the
// user of the access token in getenv's TABLEGATE_ACCESS_TOKEN
// (mcptools.EnvAccessToken) or the secret key in its
// mcptools.EnvAPIKey; a caller no table admits is refused. Use it instead
// of Serve, not beside it.
func (s *Server) ServeMCPStdio(ctx context.Context, getenv func(string) string) error {
	tools, union, err := mcpTools(s.cfg, s.resources)
	if err != nil {
		return err
	}
	caller, err := mcptools.CallerFromEnv(ctx, getenv, mcptools.ResolverCaller(s.rv))
	if err != nil {
		return usagef("%v", err)
	}
	admit := mcptools.AllowList(union...)
	if p := admit(caller); p != nil {
		return fmt.Errorf("MCP caller refused: %s (set %s to a user's access token or %s to a secret key)", p.Detail, mcptools.EnvAccessToken, mcptools.EnvAPIKey)
	}
	fmt.Fprintf(s.log, "✓ serving %d table(s) as MCP tools on stdin/stdout (caller: %s)\n", len(s.cfg.Tables), caller.Kind)
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
