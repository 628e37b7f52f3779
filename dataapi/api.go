package dataapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
)

// Defaults of [Config].
const (
	// DefaultPath is where tablegate serve mounts the data API.
	DefaultPath = "/rest/v1"
	// DefaultMaxRows caps the rows of one read.
	DefaultMaxRows = 1000
)

// ErrUnprotected is returned by [New] when a table of an exposed schema
// that anon or authenticated hold privileges on has no row-level
// security and Config.AllowWithoutRLS is off.
var ErrUnprotected = errors.New("dataapi: tables without row-level security are exposed")

// Config configures the data API.
type Config struct {
	// DB runs every statement bound to the caller. Required.
	DB *db.DB
	// Schemas are the exposed schemas; the first is the default one
	// (Accept-Profile / Content-Profile pick another). Default ["public"].
	Schemas []string
	// MaxRows caps the rows of one read (PostgREST's db-max-rows).
	// Default [DefaultMaxRows].
	MaxRows int
	// AllowWithoutRLS serves tables that row-level security does not
	// protect, for databases that rely on grants alone. Off, [New]
	// refuses to start while anon or authenticated hold privileges on
	// such a table.
	AllowWithoutRLS bool
	// Tables are the tables declared as rest resources, keyed by their
	// qualified name ("public.todos"; a bare name means the first
	// schema). Their reads keep the resource's select columns and guard;
	// writes check the operation's permission and run the resource's
	// hooks (see [Table]).
	Tables map[string]*Table
	// Caller returns the caller of a request; nil reads what the authctx
	// middleware stored (anon without it). An invalid caller answers 401.
	Caller func(*http.Request) (authctx.Auth, error)
	// CacheControl is the Cache-Control of responses to requests with
	// credentials; default rest.DefaultCacheControl.
	CacheControl string
	// Logger receives unexpected errors; nil uses slog.Default().
	Logger *slog.Logger
	// Aggregates allows count(), sum(), avg(), min() and max() in select
	// (PostgREST's db-aggregates-enabled); off, they answer 400 PGRST123,
	// since an aggregate over a large table is an expensive request any
	// caller could send.
	Aggregates bool
}

// Table is a declared table: a rest resource served through the data API
// too.
type Table struct {
	// Resource is the table's rest resource (its select, operations,
	// permissions and hooks apply).
	Resource *rest.Resource
	// Allow is the resource's guard: the callers it admits (nil admits
	// signed-in users only, as authctx.Guard does).
	Allow []authctx.Allow
}

// API serves PostgREST's wire format over the exposed schemas. It is an
// http.Handler serving paths relative to its mount point (mount it with
// http.StripPrefix): /{table} and /rpc/{function}. It is safe for
// concurrent use.
type API struct {
	d        *db.DB
	schemas  []string
	maxRows  int
	cat      atomic.Pointer[catalogue]
	allowRLS bool
	declared map[string]*Table // by qualified name
	caller   func(*http.Request) (authctx.Auth, error)
	aggs     bool
	cc       string
	log      *slog.Logger
	// listening and reloaded, when set (tests), are told that Listen
	// listens and that a notification's reload ended.
	listening func()
	reloaded  func(error)
}

// New reads the exposed schemas' tables, views and functions from the
// catalogue and returns the API. It fails when a schema does not exist,
// when a declared table is not in an exposed schema, and (unless
// AllowWithoutRLS) with [ErrUnprotected] naming the tables to protect.
// Tables created later are served after [API.Reload] (which [API.Listen]
// runs on NOTIFY pgrst).
func New(ctx context.Context, cfg *Config) (*API, error) {
	if cfg == nil || cfg.DB == nil {
		return nil, errors.New("dataapi: Config.DB is required")
	}
	a := &API{d: cfg.DB, schemas: cfg.Schemas, maxRows: cfg.MaxRows, declared: map[string]*Table{},
		caller: cfg.Caller, aggs: cfg.Aggregates, cc: cfg.CacheControl, log: cfg.Logger}
	if len(a.schemas) == 0 {
		a.schemas = []string{"public"}
	}
	if a.maxRows == 0 {
		a.maxRows = DefaultMaxRows
	}
	if a.maxRows < 0 {
		return nil, fmt.Errorf("dataapi: MaxRows %d is negative", a.maxRows)
	}
	if a.cc == "" {
		a.cc = rest.DefaultCacheControl
	}
	if a.log == nil {
		a.log = slog.Default()
	}
	pool := cfg.DB.Pool()
	var found []string
	rows, err := pool.Query(ctx, `select nspname from pg_namespace where nspname = any($1)`, a.schemas)
	if err != nil {
		return nil, fmt.Errorf("dataapi: read schemas: %w", err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, err
		}
		found = append(found, s)
	}
	rows.Close()
	for _, s := range a.schemas {
		if !slices.Contains(found, s) {
			return nil, fmt.Errorf("dataapi: schema %q does not exist (create it or remove it from schemas)", s)
		}
	}
	if !cfg.AllowWithoutRLS {
		bad, err := unprotected(ctx, pool, a.schemas)
		if err != nil {
			return nil, err
		}
		if len(bad) > 0 {
			return nil, fmt.Errorf("%w: %s (protect each as its fix says and write policies, or revoke anon's and authenticated's privileges, or set allow_without_rls to rely on grants alone)",
				ErrUnprotected, strings.Join(bad, ", "))
		}
	}
	cat, err := loadCatalogue(ctx, pool, a.schemas)
	if err != nil {
		return nil, err
	}
	a.cat.Store(cat)
	a.allowRLS = cfg.AllowWithoutRLS
	for name, t := range cfg.Tables {
		if t == nil || t.Resource == nil {
			return nil, fmt.Errorf("dataapi: Tables[%q] has no Resource", name)
		}
		q := name
		if !strings.Contains(q, ".") {
			q = a.schemas[0] + "." + q
		}
		if cat.rels[q] == nil {
			return nil, fmt.Errorf("dataapi: declared table %q is not a table of the exposed schemas %s", name, strings.Join(a.schemas, ", "))
		}
		a.declared[q] = t
	}
	return a, nil
}

// Reload reads the exposed schemas' tables, views, foreign keys and
// functions again (after a migration), with the checks of [New]: a
// declared table that is gone, or (unless AllowWithoutRLS) a table without
// row-level security, keeps the previous catalogue and returns the error.
// Requests already running finish with the catalogue they began with.
// Safe for concurrent use with serving.
func (a *API) Reload(ctx context.Context) error {
	pool := a.d.Pool()
	if !a.allowRLS {
		bad, err := unprotected(ctx, pool, a.schemas)
		if err != nil {
			return err
		}
		if len(bad) > 0 {
			return fmt.Errorf("%w: %s", ErrUnprotected, strings.Join(bad, ", "))
		}
	}
	cat, err := loadCatalogue(ctx, pool, a.schemas)
	if err != nil {
		return err
	}
	for q := range a.declared {
		if cat.rels[q] == nil {
			return fmt.Errorf("dataapi: declared table %q is gone", q)
		}
	}
	a.cat.Store(cat)
	return nil
}

// ServeHTTP serves /{table} (GET, HEAD, POST, PATCH, DELETE) and
// /rpc/{function} (GET, HEAD, POST) relative to the mount point.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			a.log.Error("dataapi: panic", "panic", fmt.Sprint(p))
			writeError(w, apiErr(http.StatusInternalServerError, "PGRST000", "The server could not complete the request."))
		}
	}()
	a.cacheHeaders(w, r)
	path := strings.Trim(r.URL.Path, "/")
	var segs []string
	if path != "" {
		segs = strings.Split(path, "/")
	}
	auth, err := a.callerOf(r)
	if err != nil {
		writeError(w, toError(err, true))
		return
	}
	if auth.Kind == authctx.KindInvalid {
		if errors.Is(auth.Err, authctx.ErrKeysNotLoaded) {
			e := apiErr(http.StatusServiceUnavailable, "PGRST002", "The signing keys are not loaded yet; try again shortly.")
			e.header = http.Header{"Retry-After": {"1"}}
			writeError(w, e)
			return
		}
		writeError(w, apiErr(http.StatusUnauthorized, "PGRST301", "The token is invalid or expired."))
		return
	}
	schema, perr := a.schemaOf(r)
	if perr != nil {
		writeError(w, perr)
		return
	}
	q, qerr := url.ParseQuery(r.URL.RawQuery)
	if qerr != nil {
		writeError(w, parseErr("the query string", "a malformed escape or separator"))
		return
	}
	req := &request{api: a, cat: a.cat.Load(), w: w, r: r, auth: auth, query: q, schema: schema, prefer: parsePrefer(r.Header.Values("Prefer"))}
	if a.d.HasReplicas() {
		var e *Error
		if req.pos, e = requestPosition(r); e != nil {
			writeError(w, e)
			return
		}
	}
	if req.prefer["handling"] == "strict" {
		for k := range req.prefer {
			if !knownPreferences[k] {
				writeError(w, apiErr(http.StatusBadRequest, "PGRST122", "Invalid preferences given with handling=strict").
					withDetails("Invalid preferences: "+k))
				return
			}
		}
	}
	switch {
	case len(segs) == 0:
		telemetry.SetRoute(r.Context(), r.URL.EscapedPath(), "/", "describe", schema)
		req.serveDescription()
	case len(segs) == 1:
		req.relName = segs[0]
		telemetry.SetRoute(r.Context(), r.URL.EscapedPath(), "/{table}", strings.ToLower(r.Method), schema+"."+segs[0])
		req.serveTable()
	case len(segs) == 2 && segs[0] == "rpc":
		telemetry.SetRoute(r.Context(), r.URL.EscapedPath(), "/rpc/{function}", "rpc", schema+"."+segs[1])
		req.serveRPC(segs[1])
	default:
		writeError(w, apiErr(http.StatusNotFound, "PGRST125", "Invalid path specified in request URL"))
	}
}

func (a *API) callerOf(r *http.Request) (authctx.Auth, error) {
	if a.caller != nil {
		au, err := a.caller(r)
		if err == nil && au.Kind == "" {
			au = authctx.Anon(authctx.ReasonNone)
		}
		return au, err
	}
	au := authctx.AuthFrom(r.Context())
	if au.Kind == "" {
		au = authctx.Anon(authctx.ReasonNone)
	}
	return au, nil
}

// schemaOf picks the schema from Accept-Profile (GET, HEAD) or
// Content-Profile (other methods).
func (a *API) schemaOf(r *http.Request) (string, *Error) {
	h := "Content-Profile"
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		h = "Accept-Profile"
	}
	s := strings.TrimSpace(r.Header.Get(h))
	if s == "" {
		return a.schemas[0], nil
	}
	if !slices.Contains(a.schemas, s) {
		return "", apiErr(http.StatusNotAcceptable, "PGRST106", "Invalid schema: "+s).
			withHint("Only the following schemas are exposed: " + strings.Join(a.schemas, ", "))
	}
	return s, nil
}

// cacheHeaders marks responses as varying on credentials and private when
// the request carries any, as the native routes do.
func (a *API) cacheHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Add("Vary", "Authorization, Cookie")
	if h.Get("Cache-Control") != "" {
		return
	}
	cred := r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != "" || r.Header.Get("Apikey") != ""
	if !cred {
		au := authctx.AuthFrom(r.Context())
		cred = au.Kind != "" && au.Kind != authctx.KindAnon
	}
	if cred {
		h.Set("Cache-Control", a.cc)
	}
}

// knownPreferences are the Prefer keys the data API reads.
var knownPreferences = map[string]bool{"return": true, "count": true, "resolution": true, "missing": true,
	"tx": true, "handling": true, "max-affected": true, "params": true}

// parsePrefer reads Prefer headers into key → value ("return" →
// "representation").
func parsePrefer(vals []string) map[string]string {
	out := map[string]string{}
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
			k = strings.ToLower(strings.TrimSpace(k))
			if k != "" {
				out[k] = strings.TrimSpace(val)
			}
		}
	}
	return out
}
