package rest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// NewResources builds one resource per table of opts (table name → its
// options, nil for defaults), for [RouterConfig].Resources. It stops at
// the first error.
func NewResources(ctx context.Context, d *db.DB, opts map[string]*Config) (map[string]*Resource, error) {
	out := make(map[string]*Resource, len(opts))
	names := make([]string, 0, len(opts))
	for n := range opts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		r, err := NewResource(ctx, d, n, opts[n])
		if err != nil {
			return nil, err
		}
		out[n] = r
	}
	return out, nil
}

// ContentSecurityPolicy is the Content-Security-Policy a [Router] sets on
// every response of its resources and handlers: a browser that is led to
// open one as a page runs nothing, loads nothing and frames nothing.
const ContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'"

// Route is one operation a [Router] serves: method, path (the full path
// below the server, starting with [RouterConfig].BasePath, parameters in
// braces) and operation id.
type Route struct {
	Method      string
	Path        string
	OperationID string
}

// Mount is a handler a [Router] serves beside its resources, as is (no
// guard, no Content-Security-Policy of the Router's): an event stream, the
// API's description.
type Mount struct {
	// Path is the mount's path below BasePath ("/openapi.json",
	// "/todos/events"). Every method of it is the handler's.
	Path string
	// Subtree also gives the handler every path below Path+"/".
	Subtree bool
	// Handler serves the mount.
	Handler http.Handler
	// Routes are the mount's operations, paths below BasePath, for
	// [Router.Routes].
	Routes []Route
}

// RouterConfig configures [NewRouter].
type RouterConfig struct {
	// BasePath is where the Router is mounted ("/api"); "" or "/" for
	// the root. Its routes are BasePath/<segment>/...: mount the Router at
	// the root of a server's mux (mux.Handle("/", router), or
	// mux.Handle("/api/", router), or its patterns with
	// [Router.Register]), never below http.StripPrefix, so that its routes
	// are the request's paths.
	BasePath string
	// Resources maps a path segment (usually the table name) to the
	// resource served under BasePath/<segment>.
	Resources map[string]*Resource
	// Handlers maps a path segment to a handler that is not a resource
	// but describes its operations (package authz's approvals endpoint),
	// served under BasePath/<segment> like a resource.
	Handlers map[string]DescribedHandler
	// Allow maps a segment of Resources or Handlers to the allow list of
	// its guard; a segment without an entry allows signed-in users only
	// (authctx.AllowUser, as [authctx.Guard] with no arguments).
	Allow map[string][]authctx.Allow
	// Guard, when set, is the guard middleware constructor — normally
	// [authctx.Guard]. Every resource and handler is wrapped with
	// Guard(its allow list...). Nil leaves admission to the integrator's
	// own middleware.
	Guard func(allow ...authctx.Allow) func(http.Handler) http.Handler
	// Mounts are the other handlers served below BasePath.
	Mounts []Mount
	// Problems renders the 404 of an unknown path (type URL base). The
	// resources render their own errors with their own Config.Problems.
	Problems problem.Writer
}

// Router serves many resources and described handlers under one base
// path, each under its segment: BasePath/<segment>/..., and its mounts.
// Build it with [NewRouter]. A Router is immutable and safe for concurrent
// use.
type Router struct {
	mux      *http.ServeMux
	patterns []routerPattern // what Register registers, in order
	byName   map[string]*Resource
	names    []string
	routes   []Route
	problems problem.Writer
}

// NewRouter builds a Router. It fails, with an error wrapping [ErrBuild],
// for a base path that is not a plain path, a nil resource, handler or
// mount handler, a segment that is empty, holds one of "/{}?#%" or is
// "." or "..", a segment used twice, or two mounts at one path.
func NewRouter(cfg *RouterConfig) (*Router, error) {
	if cfg == nil {
		cfg = &RouterConfig{}
	}
	base := strings.TrimSuffix(cfg.BasePath, "/")
	if base != "" && (!strings.HasPrefix(base, "/") || strings.ContainsAny(base, "{}?#% ") || strings.Contains(base, "//")) {
		return nil, fmt.Errorf("%w: NewRouter: BasePath %q must start with / and hold plain path segments", ErrBuild, cfg.BasePath)
	}
	rt := &Router{mux: http.NewServeMux(), byName: map[string]*Resource{}, problems: cfg.Problems}
	badSegment := func(n string) bool {
		return n == "" || strings.ContainsAny(n, "/{}?#%") || n == "." || n == ".."
	}
	for n, r := range cfg.Resources {
		if r == nil || badSegment(n) {
			return nil, fmt.Errorf("%w: NewRouter: invalid resource %q", ErrBuild, n)
		}
		rt.byName[n] = r
		rt.names = append(rt.names, n)
	}
	sort.Strings(rt.names)
	var hnames []string
	for n, h := range cfg.Handlers {
		if h == nil || badSegment(n) {
			return nil, fmt.Errorf("%w: NewRouter: invalid handler %q", ErrBuild, n)
		}
		if _, dup := rt.byName[n]; dup {
			return nil, fmt.Errorf("%w: NewRouter: segment %q is both a resource and a handler", ErrBuild, n)
		}
		hnames = append(hnames, n)
	}
	sort.Strings(hnames)
	seen := map[string]bool{}
	for _, m := range cfg.Mounts {
		p := strings.TrimSuffix(m.Path, "/")
		if m.Handler == nil || !strings.HasPrefix(p, "/") || strings.ContainsAny(p, "{}?#% ") || seen[p] {
			return nil, fmt.Errorf("%w: NewRouter: invalid or repeated mount %q", ErrBuild, m.Path)
		}
		seen[p] = true
	}

	// handle registers h at pattern and reports route for it to
	// telemetry.Handler (see routeAs).
	handle := func(pattern, route string, h http.Handler) {
		rt.patterns = append(rt.patterns, routerPattern{pattern, routeAs(route, h)})
	}
	segment := func(n string, h http.Handler) {
		h = withCSP(stripPrefix(base+"/"+n, h))
		if cfg.Guard != nil {
			allow, ok := cfg.Allow[n]
			if !ok {
				allow = []authctx.Allow{authctx.AllowUser}
			}
			h = cfg.Guard(allow...)(h)
		}
		handle(base+"/"+n, base+"/"+n, h)
		handle(base+"/"+n+"/", base+"/"+n+"/{path...}", h)
	}
	for _, n := range rt.names {
		segment(n, rt.byName[n])
		for _, oi := range rt.byName[n].Describe().Operations {
			rt.routes = append(rt.routes, Route{Method: oi.Method, Path: base + subPath(n, oi.Path), OperationID: oi.ID})
		}
	}
	for _, n := range hnames {
		segment(n, cfg.Handlers[n])
		for _, ho := range cfg.Handlers[n].Operations() {
			rt.routes = append(rt.routes, Route{Method: ho.Method, Path: base + subPath(n, ho.Path), OperationID: ho.ID})
		}
	}
	for _, m := range cfg.Mounts {
		p := base + strings.TrimSuffix(m.Path, "/")
		handle(p, p, m.Handler)
		if m.Subtree {
			handle(p+"/", p+"/{path...}", m.Handler)
		}
		for _, r := range m.Routes {
			r.Path = base + r.Path
			rt.routes = append(rt.routes, r)
		}
	}
	rt.Register(rt.mux)
	rt.mux.Handle("/", rt.NotFound())
	sort.Slice(rt.routes, func(i, j int) bool {
		if rt.routes[i].Path != rt.routes[j].Path {
			return rt.routes[i].Path < rt.routes[j].Path
		}
		return rt.routes[i].Method < rt.routes[j].Method
	})
	return rt, nil
}

// routerPattern is one ServeMux pattern of a [Router] and its handler.
type routerPattern struct {
	pattern string
	handler http.Handler
}

// Register adds the Router's ServeMux patterns to mux: one per resource
// and handler segment (BasePath/<segment> and BasePath/<segment>/) and per
// mount, each with the handler [Router.ServeHTTP] routes it to, so that
// mux serves them without a second ServeMux below it. It adds no
// catch-all: mount [Router.NotFound] where the Router's 404 should answer
// (mux.Handle("/api/", rt.NotFound()) for BasePath /api). Every pattern
// lies below BasePath; register on a mux none of whose own patterns
// matches a path below BasePath, so that ServeMux's precedence gives each
// path the handler the Router gives it (ServeMux panics on a pattern that
// conflicts with one it holds).
func (rt *Router) Register(mux *http.ServeMux) {
	for _, p := range rt.patterns {
		mux.Handle(p.pattern, p.handler)
	}
}

// NotFound returns the handler of the paths no pattern of the Router
// matches: a 404 problem written with [RouterConfig].Problems.
func (rt *Router) NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.problems.Write(w, routeNotFound())
	})
}

// subPath is the path of an operation at path below segment n.
func subPath(n, path string) string {
	if path == "/" {
		return "/" + n
	}
	return "/" + n + path
}

// ServeHTTP serves the resources, handlers and mounts; any other path
// answers a 404 problem.
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.mux.ServeHTTP(w, r) }

// Names returns the segments of the resources, sorted.
func (rt *Router) Names() []string { return append([]string(nil), rt.names...) }

// Resource returns the resource served under the segment name.
func (rt *Router) Resource(name string) (*Resource, bool) {
	r, ok := rt.byName[name]
	return r, ok
}

// Routes returns every operation served (the mounts' documented ones
// included), sorted by path, then method.
func (rt *Router) Routes() []Route { return append([]Route(nil), rt.routes...) }

// routeAs reports route to telemetry.Handler before h runs, so that a
// route is named also when the mux sits below middleware that copies the
// request: an event stream's or a document's, and, for a request the
// guard refuses before it reaches its resource, the resource's mount (a
// resource that runs reports its own, precise route over it).
func routeAs(route string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		telemetry.SetPattern(r.Context(), route)
		h.ServeHTTP(w, r)
	})
}

// strippedRequest is a request and its URL, allocated together by
// stripPrefix.
type strippedRequest struct {
	req http.Request
	url url.URL
}

// stripPrefix is http.StripPrefix(prefix, h) for a prefix that is not
// empty, with one allocation for the copies of the request and its URL.
func stripPrefix(prefix string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := strings.TrimPrefix(r.URL.Path, prefix)
		rp := strings.TrimPrefix(r.URL.RawPath, prefix)
		if len(p) < len(r.URL.Path) && (r.URL.RawPath == "" || len(rp) < len(r.URL.RawPath)) {
			s := &strippedRequest{req: *r, url: *r.URL}
			s.url.Path, s.url.RawPath = p, rp
			s.req.URL = &s.url
			h.ServeHTTP(w, &s.req)
			return
		}
		http.NotFound(w, r)
	})
}

// cspValue is the Content-Security-Policy value list of every response,
// shared: net/http only reads it, and Header.Set and Header.Add replace
// rather than write into a list whose capacity is its length.
var cspValue = []string{ContentSecurityPolicy}

// withCSP sets [ContentSecurityPolicy] on every response of next.
func withCSP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Security-Policy"] = cspValue[:1:1]
		next.ServeHTTP(w, r)
	})
}
