package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/suggest"
	"github.com/tablegate/tablegate/spec"
)

// serveConfig is the JSON file of "tablegate serve" (and doctor/openapi
// --config): which tables to serve and how.
type serveConfig struct {
	// Addr is the listen address (flag --addr overrides).
	Addr string `json:"addr,omitempty"`
	// DatabaseURL is the Postgres URL; DATABASE_URL and --database-url win.
	// Prefer the environment: a config file is often committed.
	DatabaseURL string `json:"database_url,omitempty"`
	// ReadReplicas are Postgres URLs of read replicas of the database:
	// gets, lists and read-only actions run there, writes and events stay
	// on the primary (docs/scale-out.md). DATABASE_REPLICA_URLS
	// (comma-separated) wins.
	ReadReplicas []string `json:"read_replicas,omitempty"`
	// BasePath prefixes every resource route (default /api; "/" for the
	// root). Read it with base().
	BasePath string `json:"base_path,omitempty"`
	// Title and Version describe the API in its OpenAPI document.
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// Auth says where tokens are verified.
	Auth authConfig `json:"auth"`
	// Permissions grants permission keys to callers whose roles claim
	// holds one of the listed roles ("todos.delete": ["admin"]). A
	// permission named by a table but missing here denies every caller.
	Permissions map[string][]string `json:"permissions,omitempty"`
	// Tables maps a route name (/api/<name>) to a table.
	Tables map[string]*tableConfig `json:"tables"`
	// MCP serves the same operations as MCP tools at /mcp (Streamable
	// HTTP), each table's tools behind that table's guard.
	MCP bool `json:"mcp,omitempty"`
	// DataAPI serves PostgREST's wire format (supabase-js and the other
	// Supabase clients) over the exposed schemas. Off without it.
	DataAPI *dataAPIConfig `json:"data_api,omitempty"`
	// AdminAddr serves /livez, /readyz and /metrics on a separate
	// listener (flag --admin-addr overrides).
	AdminAddr string `json:"admin_addr,omitempty"`
	// AccessLog turns the JSON access log on stderr off with false
	// (default on; flag --access-log overrides).
	AccessLog *bool `json:"access_log,omitempty"`
	// LogSubject adds the caller's user id to the access log.
	LogSubject bool `json:"log_subject,omitempty"`
	// Database sizes the pool and sets the per-request time budget
	// (flags override it).
	Database databaseConfig `json:"database,omitempty"`
	// PublicURL is the URL clients reach this server at, when it differs
	// from http://{listen address} (behind a proxy): MCP's OAuth
	// discovery names {public_url}/.well-known/oauth-protected-resource/mcp.
	PublicURL string `json:"public_url,omitempty"`
	// Timeouts are the HTTP server's timeouts (read_header, read, write,
	// idle; Go durations such as "30s"); unset ones take the defaults,
	// and the --*-timeout flags win.
	Timeouts httpTimeouts `json:"timeouts,omitempty"`
	// CORS lets pages of other origins call the API (Bearer or apikey,
	// never the cookie). Off without it.
	CORS *corsConfig `json:"cors,omitempty"`
	// Events configures the event streams of the tables with "events":
	// true (their outbox retention and replay bound).
	Events *eventsConfig `json:"events,omitempty"`
}

// eventsConfig configures serve's events hub (the "events" section).
type eventsConfig struct {
	// Retention is how long events stay in the outbox: the window in
	// which a client resumes with Last-Event-ID without a gap (default
	// "1h", at least "1m"; events.Config.Retention).
	Retention duration `json:"retention,omitempty"`
	// MaxReplay bounds the events one resuming stream replays (default
	// 10000; events.Config.MaxReplay): a client further behind receives a
	// tablegate.gap event, then the latest MaxReplay events.
	MaxReplay int `json:"max_replay,omitempty"`
}

// minRetention is the shortest retention serve and demo accept: the hubs
// prune once a minute, and a shorter window would send a reconnecting
// client a gap after an ordinary network blip.
const minRetention = time.Minute

func (e *eventsConfig) validate(tables map[string]*tableConfig) error {
	if r := time.Duration(e.Retention); r != 0 && r < minRetention {
		return fmt.Errorf("events.retention: %s is below %s: a client reconnecting after a short outage would miss events; use e.g. \"1h\"", r, minRetention)
	}
	if e.MaxReplay < 0 {
		return fmt.Errorf("events.max_replay: %d is negative; leave it out for the default (%d)", e.MaxReplay, events.DefaultMaxReplay)
	}
	for _, t := range tables {
		if t != nil && t.Events {
			return nil
		}
	}
	return errors.New(`events: no table streams events: add "events": true to a table, or remove the "events" section`)
}

// hubConfig is the events hub's configuration over d.
func (e *eventsConfig) hubConfig(d *db.DB) *events.Config {
	c := &events.Config{DB: d}
	if e != nil {
		c.Retention = time.Duration(e.Retention)
		c.MaxReplay = e.MaxReplay
	}
	return c
}

// authConfig locates the JWKS.
type authConfig struct {
	// URL is the Supabase project URL (SUPABASE_URL); the JWKS is
	// {URL}/auth/v1/.well-known/jwks.json and refresh goes to {URL}/auth/v1.
	URL string `json:"url,omitempty"`
	// JWKSURL overrides the JWKS location.
	JWKSURL string `json:"jwks_url,omitempty"`
	// Refresh enables cookie session refresh.
	Refresh bool `json:"refresh,omitempty"`
	// Issuer is the iss every token must carry (default {URL}/auth/v1,
	// else SUPABASE_JWT_ISSUER; "*" checks no issuer).
	Issuer string `json:"issuer,omitempty"`
	// Audience is an aud every token must carry (default
	// "authenticated", else SUPABASE_JWT_AUDIENCE; "*" checks none).
	Audience string `json:"audience,omitempty"`
	// MaxTokenLifetime refuses tokens living longer (exp - iat), e.g.
	// "168h"; unset: no limit.
	MaxTokenLifetime duration `json:"max_token_lifetime,omitempty"`
	// Flows, when present, serves the sign-in and sign-out routes of
	// package authflow under /auth (sessions written in the resolver's
	// cookie) and turns on Refresh (sessions outlive their access token).
	Flows *authFlowsConfig `json:"flows,omitempty"`
}

// flowsSite returns the origin of the sign-in flows: auth.flows.site_url,
// else public_url ("" without flows).
func (c *serveConfig) flowsSite() string {
	if c.Auth.Flows == nil {
		return ""
	}
	if c.Auth.Flows.SiteURL != "" {
		return c.Auth.Flows.SiteURL
	}
	return c.PublicURL
}

// authFlowsConfig configures the sign-in flows of serve (auth.flows).
type authFlowsConfig struct {
	// SiteURL is the origin browsers open this server at: OAuth and
	// magic links come back to {SiteURL}/auth/callback, and next may
	// point under it. Default public_url; one of them is required. An
	// https origin makes the session cookies Secure.
	SiteURL string `json:"site_url,omitempty"`
	// RedirectURLs are further absolute URLs (or prefixes) next and
	// redirect_to may point to.
	RedirectURLs []string `json:"redirect_urls,omitempty"`
	// TokensOnly writes sessions in @supabase/ssr's cookies.encode
	// "tokens-only" form (no user object in the cookie).
	TokensOnly bool `json:"tokens_only,omitempty"`
	// Timeout bounds each call to the auth server (default 10s).
	Timeout duration `json:"timeout,omitempty"`
	// AttemptsPerAccount bounds the sign-in attempts (passwords, codes
	// sent and verified) for one email address or phone number per
	// attempt_window, whether an account has it or not (default 10; -1:
	// no limit). Past it every attempt, the right password too, answers
	// 429 with Retry-After until the window ends.
	AttemptsPerAccount int `json:"attempts_per_account,omitempty"`
	// AttemptsPerAddress bounds them per client address (default 60; -1:
	// no limit).
	AttemptsPerAddress int `json:"attempts_per_address,omitempty"`
	// AttemptWindow is the window of both limits (default "1m").
	AttemptWindow duration `json:"attempt_window,omitempty"`
	// TrustedProxyHeader names the header the proxy in front of serve
	// sets to the client's address (X-Forwarded-For, X-Real-IP, …); the
	// limit per address then keys on its last entry. Unset: the
	// connection's address, and no header is read.
	TrustedProxyHeader string `json:"trusted_proxy_header,omitempty"`
}

// validate checks what serve asks of the flows beyond what authflow.New
// checks (redirect_urls, timeout): the site is an origin (serve mounts
// /auth at the root) and is given, and the /auth routes meet no table
// route of base (the config's base path without its trailing /).
// publicURL is the config's public_url, the site when site_url is unset.
func (f *authFlowsConfig) validate(base, publicURL string, tables map[string]*tableConfig) error {
	if f.SiteURL != "" {
		o, err := originOf("auth.flows.site_url", f.SiteURL)
		if err != nil {
			return err
		}
		f.SiteURL = o
	} else if publicURL == "" {
		// The listen address is not what browsers open (localhost vs
		// 127.0.0.1, a proxy): redirects and cookies would not meet.
		return errors.New(`auth.flows needs the origin browsers open this server at, for redirects and the OAuth and magic-link callback: set auth.flows.site_url (or public_url), e.g. "http://localhost:8080"`)
	}
	if f.AttemptsPerAccount < -1 {
		return fmt.Errorf("auth.flows.attempts_per_account must be a positive count, or -1 for no limit, got %d", f.AttemptsPerAccount)
	}
	if f.AttemptsPerAddress < -1 {
		return fmt.Errorf("auth.flows.attempts_per_address must be a positive count, or -1 for no limit, got %d", f.AttemptsPerAddress)
	}
	if f.TrustedProxyHeader != "" && !headerName.MatchString(f.TrustedProxyHeader) {
		return fmt.Errorf("auth.flows.trusted_proxy_header must be a header name such as X-Forwarded-For, got %q", f.TrustedProxyHeader)
	}
	if base == "/auth" || strings.HasPrefix(base, "/auth/") {
		return fmt.Errorf("base_path %q meets the sign-in routes of auth.flows under /auth: choose another base_path", base)
	}
	if _, ok := tables["auth"]; ok && base == "" {
		return errors.New(`tables.auth at the root meets the sign-in routes of auth.flows under /auth: rename the route or set a base_path`)
	}
	return nil
}

// originOf checks that the config key field holds an origin such as
// https://api.example.com (a trailing / allowed; no path, query,
// fragment or userinfo) and returns it without the trailing /.
func originOf(field, v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("%s must be an origin such as https://api.example.com, got %q", field, v)
	}
	return strings.TrimRight(v, "/"), nil
}

// tableConfig declares one served table.
type tableConfig struct {
	// Table is the table or view, optionally schema-qualified (default: the
	// route name in schema public).
	Table string `json:"table,omitempty"`
	// Operations lists the CRUD operations served (default all five).
	Operations []string `json:"operations,omitempty"`
	// Select lists the returned columns (default all).
	Select []string `json:"select,omitempty"`
	// Key names the key column (default the primary key).
	Key string `json:"key,omitempty"`
	// Permissions maps an operation to a permission key.
	Permissions map[string]string `json:"permissions,omitempty"`
	// Guard is the allow list: user, anon, anonymous, service (default [user]).
	Guard []string `json:"guard,omitempty"`
	// StatementTimeout overrides database.statement_timeout for this
	// table's operations ("1s").
	StatementTimeout string `json:"statement_timeout,omitempty"`
	// FilterColumns, when set, lists the only columns a list may filter
	// and order by (e.g. the indexed ones); others answer 400.
	FilterColumns []string `json:"filter_columns,omitempty"`
	// Events serves GET {base_path}/{name}/events: Server-Sent Events of
	// the rows written to the table, each delivered to the subscribers
	// whose row-level security shows the row. The table must be opted in
	// by a migration (select tablegate.enable_events('schema.table')).
	Events bool `json:"events,omitempty"`
	// AllowWithoutRLS serves a table or view that row-level security does
	// not protect (RLS disabled, a view without security_invoker), for the
	// rare table every caller may read. Without it serve refuses to start
	// with the SQL that protects the table; with it serve warns at every
	// start and the OpenAPI document says so (x-service-rls: false).
	AllowWithoutRLS bool `json:"allow_without_rls,omitempty"`
}

var (
	crudOps    = []string{"list", "get", "create", "update", "delete"}
	guardKinds = []string{"user", "anon", "anonymous", "service"}
	routeName  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	tableName  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*$`)
)

// loadServeConfig reads, parses and validates a config file. Unknown keys
// are errors, so that a typo does not silently serve something else.
func loadServeConfig(path string) (*serveConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("config file %s does not exist", path)
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	return parseServeConfig(data, path)
}

func parseServeConfig(data []byte, name string) (*serveConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c serveConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, explainJSONError(data, err, reflect.TypeOf(c)))
	}
	// A second object or trailing text (a file merged twice) is an error:
	// serving the first object would silently drop the rest.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("config %s: %s: content after the first JSON value", name, position(data, dec.InputOffset()))
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return &c, nil
}

func (c *serveConfig) validate() error {
	if c.BasePath == "" {
		c.BasePath = "/api"
	}
	if !strings.HasPrefix(c.BasePath, "/") {
		return fmt.Errorf("base_path must start with /, got %q", c.BasePath)
	}
	if _, err := spec.CleanBasePath(c.BasePath); err != nil {
		return fmt.Errorf("base_path: %w", err) // checked before connecting
	}
	if c.Title == "" {
		c.Title = "tablegate API"
	}
	if c.Version == "" {
		c.Version = "0.1.0"
	}
	if c.PublicURL != "" {
		o, err := originOf("public_url", c.PublicURL)
		if err != nil {
			return err
		}
		c.PublicURL = o
	}
	if len(c.Tables) == 0 {
		return errors.New(`no tables: add "tables": {"todos": {"table": "public.todos"}}`)
	}
	if c.DataAPI != nil {
		if err := c.DataAPI.validate(c.base(), c.Tables, c.MCP); err != nil {
			return err
		}
	}
	if err := c.Database.validate(); err != nil {
		return err
	}
	if c.CORS != nil {
		if err := c.CORS.validate(); err != nil {
			return err
		}
	}
	if c.Events != nil {
		if err := c.Events.validate(c.Tables); err != nil {
			return err
		}
	}
	if c.Auth.Flows != nil {
		if err := c.Auth.Flows.validate(c.base(), c.PublicURL, c.Tables); err != nil {
			return err
		}
	}
	for _, name := range c.tableNames() {
		t := c.Tables[name]
		if t == nil {
			return fmt.Errorf("tables.%s is null", name)
		}
		if !routeName.MatchString(name) {
			return fmt.Errorf("tables.%s: the route name must start with a letter and hold letters, digits, _ or -", name)
		}
		if c.base() == "" && (name == "livez" || name == "readyz" || name == "mcp" && c.MCP) {
			return fmt.Errorf("tables.%s at the root meets serve's own /%s: rename the route or set a base_path", name, name)
		}
		if t.Table == "" {
			t.Table = "public." + name
		}
		if !tableName.MatchString(t.Table) {
			return fmt.Errorf("tables.%s.table: %q is not a [schema.]table name", name, t.Table)
		}
		if !strings.Contains(t.Table, ".") {
			t.Table = "public." + t.Table
		}
		if len(t.Operations) == 0 {
			t.Operations = slices.Clone(crudOps)
		}
		for _, op := range t.Operations {
			if !slices.Contains(crudOps, op) {
				return fmt.Errorf("tables.%s.operations: unknown operation %q%s (want %s)", name, op, suggest.DidYouMean(op, crudOps), strings.Join(crudOps, ", "))
			}
		}
		for op, key := range t.Permissions {
			if !slices.Contains(t.Operations, op) {
				return fmt.Errorf("tables.%s.permissions: %q is not a served operation", name, op)
			}
			if key == "" {
				return fmt.Errorf("tables.%s.permissions.%s: empty permission key", name, op)
			}
		}
		if len(t.Guard) == 0 {
			t.Guard = []string{"user"}
		}
		if _, err := parseDurationField("tables."+name+".statement_timeout", t.StatementTimeout); err != nil {
			return err
		}
		for _, g := range t.Guard {
			if !slices.Contains(guardKinds, g) {
				return fmt.Errorf("tables.%s.guard: unknown caller kind %q%s (want %s)", name, g, suggest.DidYouMean(g, guardKinds), strings.Join(guardKinds, ", "))
			}
		}
	}
	return nil
}

// base returns the base path without a trailing slash ("" for the root).
func (c *serveConfig) base() string { return strings.TrimRight(c.BasePath, "/") }

// tableNames returns the route names in a stable order.
func (c *serveConfig) tableNames() []string {
	names := make([]string, 0, len(c.Tables))
	for n := range c.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
