package spec

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
)

// OpenAPIVersion is the OpenAPI version of every document DefineAPI builds.
const OpenAPIVersion = "3.1.0"

// DefaultAllow returns the allow list of a resource without an entry in
// Config.Allow: the guard's default ([authctx.Guard] with no arguments),
// signed-in users only (a new slice on every call).
func DefaultAllow() []authctx.Allow { return []authctx.Allow{authctx.AllowUser} }

// Names of the security schemes in components.securitySchemes.
const (
	SchemeBearer = "bearerAuth"
	SchemeCookie = "sessionCookie"
	SchemeAPIKey = "apikey"
)

// Paths of the meta routes, relative to the base path.
const (
	PathJSON = "/openapi.json"
	PathYAML = "/openapi.yaml"
	PathDocs = "/docs"
)

// ErrDefine wraps every error DefineAPI returns for invalid options.
var ErrDefine = errors.New("spec: invalid API definition")

// Info is the document's info object.
type Info struct {
	// Title and Version are required; Version is the API's version
	// chosen by the integrator (seed 9), not the OpenAPI version.
	Title, Version string
	// Description is optional CommonMark text.
	Description string
	// Contact and License, when set, are the info object's contact and
	// license (linters ask for both).
	Contact *Contact
	License *License
}

// Contact is the info object's contact: who answers for the API.
type Contact struct {
	Name, URL, Email string
}

// License is the info object's license: Name, and an SPDX Identifier or
// a URL.
type License struct {
	Name, Identifier, URL string
}

// PermissionDescriber is implemented by authorizers that can explain their
// permission keys. When Config.Authorizer implements it, every permission
// key used by an operation is listed with its text in the document's
// x-service-permissions object.
type PermissionDescriber interface {
	DescribePermission(key string) string
}

// Config configures DefineAPI (the seed's defineApi options).
type Config struct {
	// Info is the document's title and version.
	Info Info

	// BasePath is where the API is mounted ("/api"); "" or "/" for the
	// root. It is the document's server URL and the prefix of every route
	// the handler serves.
	BasePath string

	// Authorizer is the authorizer the resources were built with. The
	// resources already resolved their permission keys when they were
	// built (including rest.Config.PermissionsFromAuthorizer), so the
	// document reads the keys from them; an authorizer implementing
	// [PermissionDescriber] adds a text to each key.
	Authorizer rest.Authorizer

	// Resources maps a path segment (usually the table name) to the
	// resource served under BasePath/<segment>. The handler serves exactly
	// these resources and the document describes exactly their routes.
	Resources map[string]*rest.Resource

	// Allow maps a path segment to the allow list of the guard in front
	// of that resource. Segments without an entry use DefaultAllow. The
	// lists decide each operation's security requirements (user or
	// anonymous → bearerAuth or sessionCookie; service → apikey; anon →
	// none); the handler enforces them when Guard is set.
	Allow map[string][]authctx.Allow

	// Guard, when set, is the guard middleware constructor — normally
	// [authctx.Guard]. The handler wraps every resource with
	// Guard(its allow list...), so the guard and the document read the
	// same list. Nil leaves admission to the integrator's own middleware
	// (which should then use the same lists). The guard reads the caller
	// stored by the authctx resolver middleware, so mount the handler
	// behind it.
	Guard func(allow ...authctx.Allow) func(http.Handler) http.Handler

	// CookieName is the session cookie's name in the sessionCookie
	// security scheme. Empty derives it from ProjectURL with
	// [authctx.CookieNameFor] (sb-<first label of the host>-auth-token),
	// or writes the placeholder "sb-<ref>-auth-token" without one.
	CookieName string

	// ProjectURL is the project URL (SUPABASE_URL), for CookieName.
	ProjectURL string

	// ProblemBaseURL is the base of problem type URLs (as
	// problem.Writer.BaseURL); default problem.DefaultBaseURL.
	ProblemBaseURL string

	// Streams maps a resource's segment to its event stream (see
	// [EventStream]), described and served at BasePath/<segment>/events.
	Streams map[string]EventStream

	// Handlers maps a path segment to a handler that is not a resource
	// but describes its operations (package authz's approvals endpoint,
	// with rest.DescribeHandler and authz.ApprovalOperations): it is served
	// under BasePath/<segment> behind Guard(Allow[segment]...) like a
	// resource, and described from its Operations.
	Handlers map[string]rest.DescribedHandler

	// Docs, when set, builds the handler of the reference page at
	// BasePath/docs and of everything below it (its scripts) — normally
	// reference.Page from package spec/reference, an interactive page with
	// search and try-it. Nil serves the built-in static page ([API.HTML]).
	Docs func(DocsPage) http.Handler
}

// DocsPage tells an [Config].Docs constructor where its page lives.
type DocsPage struct {
	// Path is the page's URL path (BasePath/docs); the handler also
	// receives every request below Path+"/".
	Path string
	// DocumentURL is the URL path of the JSON document (BasePath/openapi.json).
	DocumentURL string
	// Title is the document's info.title.
	Title string
}

// API is a generated OpenAPI 3.1 document with the handler that serves it
// and the resources it describes. Build it with DefineAPI. An API is
// immutable and safe for concurrent use.
type API struct {
	base      string
	jsonDoc   []byte
	yamlDoc   []byte
	html      []byte
	ops       []Route
	handler   http.Handler
	problems  problem.Writer
	resources map[string]*rest.Resource
}

// Route is one documented operation: method, path (the full path below
// the server, i.e. starting with BasePath) and operation id.
type Route struct {
	Method      string
	Path        string
	OperationID string
}

// validate checks the definition before the document is built.
func (opts *Config) validate() error {
	if _, err := CleanBasePath(opts.BasePath); err != nil {
		return err
	}
	if opts.Info.Title == "" || opts.Info.Version == "" {
		return fmt.Errorf("%w: Info.Title and Info.Version are required", ErrDefine)
	}
	if len(opts.Resources) == 0 {
		return fmt.Errorf("%w: no resources", ErrDefine)
	}
	for name, r := range opts.Resources {
		switch {
		case r == nil:
			return fmt.Errorf("%w: resource %q is nil", ErrDefine, name)
		case name == "" || strings.ContainsAny(name, "/{}?#%") || name == "." || name == "..":
			return fmt.Errorf("%w: resource segment %q", ErrDefine, name)
		case "/"+name == PathJSON || "/"+name == PathYAML || "/"+name == PathDocs:
			return fmt.Errorf("%w: resource segment %q is reserved for the description", ErrDefine, name)
		}
	}
	for name, es := range opts.Streams {
		if _, ok := opts.Resources[name]; !ok || es == nil {
			return fmt.Errorf("%w: Streams names %q, which is not a resource (or the stream is nil)", ErrDefine, name)
		}
		if err := checkAllow(es.Allow()); err != nil {
			return fmt.Errorf("%w: Streams[%q]: %v", ErrDefine, name, err)
		}
	}
	for name, h := range opts.Handlers {
		switch {
		case h == nil:
			return fmt.Errorf("%w: handler %q is nil", ErrDefine, name)
		case name == "" || strings.ContainsAny(name, "/{}?#%") || name == "." || name == "..":
			return fmt.Errorf("%w: handler segment %q", ErrDefine, name)
		case "/"+name == PathJSON || "/"+name == PathYAML || "/"+name == PathDocs:
			return fmt.Errorf("%w: handler segment %q is reserved for the description", ErrDefine, name)
		}
		if _, dup := opts.Resources[name]; dup {
			return fmt.Errorf("%w: segment %q is both a resource and a handler", ErrDefine, name)
		}
	}
	for name, allow := range opts.Allow {
		_, isResource := opts.Resources[name]
		_, isHandler := opts.Handlers[name]
		if !isResource && !isHandler {
			return fmt.Errorf("%w: Allow names %q, which is not a resource or a handler", ErrDefine, name)
		}
		if err := checkAllow(allow); err != nil {
			return fmt.Errorf("%w: Allow[%q]: %v", ErrDefine, name, err)
		}
	}
	return nil
}

// DefineAPI builds the OpenAPI 3.1 description of opts.Resources and the
// handler serving both the resources and the description. Routes and
// description are derived from the same rest.Resource objects, so they
// cannot differ. It fails, with an error wrapping ErrDefine, for a
// missing title or version, an invalid base path or segment, an unknown
// allow value, or two operations with the same id.
func DefineAPI(opts *Config) (*API, error) {
	if opts == nil {
		return nil, fmt.Errorf("%w: nil Config", ErrDefine)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	base, _ := CleanBasePath(opts.BasePath) // validated
	b := newBuilder(opts, base)
	typed, err := b.document()
	if err != nil {
		return nil, err
	}
	a := &API{base: base, ops: b.routes, problems: b.problems, resources: opts.Resources}
	// The JSON, YAML and HTML renderers read the ordered tree of the
	// typed document.
	t, err := tree(typed)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDefine, err)
	}
	doc := t.(*omap)
	var jb bytes.Buffer
	if err := writeJSON(&jb, doc, "", "  "); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDefine, err)
	}
	jb.WriteByte('\n')
	a.jsonDoc = jb.Bytes()
	if a.yamlDoc, err = toYAML(doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDefine, err)
	}
	if a.html, err = renderHTML(doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDefine, err)
	}
	a.handler = a.newHandler(opts)
	return a, nil
}

// CleanBasePath returns p, a [Config.BasePath], without its trailing
// slash ("" for the root), or the error DefineAPI would give: p must start
// with "/" and be its own path.Clean (no "//", "." or ".." segments), with
// no ServeMux wildcard, query, fragment, escape or space.
func CleanBasePath(p string) (string, error) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	// Clean: a dot segment ("/v1/../api") would mount routes no request
	// reaches, since ServeMux redirects such paths to their clean form.
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p || strings.ContainsAny(p, "{}?#% ") {
		return "", fmt.Errorf("%w: BasePath %q must start with / and hold plain path segments (no //, . or .. segments, no {}?#%% or spaces)", ErrDefine, p)
	}
	return p, nil
}

func checkAllow(allow []authctx.Allow) error {
	if len(allow) == 0 {
		return errors.New("empty allow list")
	}
	for _, a := range allow {
		switch a {
		case authctx.AllowUser, authctx.AllowAnon, authctx.AllowAnonymous, authctx.AllowService:
		default:
			return fmt.Errorf("unknown allow value %q (want user, anon, anonymous or service)", a)
		}
	}
	return nil
}

// JSON returns the document as indented JSON. The slice is shared: do not
// modify it.
func (a *API) JSON() []byte { return a.jsonDoc }

// YAML returns the same document as YAML. The slice is shared: do not
// modify it.
func (a *API) YAML() []byte { return a.yamlDoc }

// HTML returns the self-contained API reference page (no scripts, no
// external resources). The slice is shared: do not modify it.
func (a *API) HTML() []byte { return a.html }

// Routes returns every documented operation (meta routes included),
// sorted by path, then method.
func (a *API) Routes() []Route { return slices.Clone(a.ops) }

// Handler returns the handler serving, below BasePath, every resource
// (BasePath/<segment>/...), the document (BasePath/openapi.json and
// BasePath/openapi.yaml) and the reference page (BasePath/docs).
func (a *API) Handler() http.Handler { return a.handler }

func (a *API) newHandler(opts *Config) http.Handler {
	mux := http.NewServeMux()
	// handle registers h at pattern and reports route for it to
	// telemetry.Handler (see routeAs).
	handle := func(pattern, route string, h http.Handler) { mux.Handle(pattern, routeAs(route, h)) }
	names := make([]string, 0, len(opts.Resources))
	for n := range opts.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		var h http.Handler = apiCSP(http.StripPrefix(a.base+"/"+n, opts.Resources[n]))
		if opts.Guard != nil {
			h = opts.Guard(allowOf(opts, n)...)(h)
		}
		handle(a.base+"/"+n, a.base+"/"+n, h)
		handle(a.base+"/"+n+"/", a.base+"/"+n+"/{path...}", h)
		if es := opts.Streams[n]; es != nil {
			// The stream admits callers itself (its own allow list) and
			// answers other methods 405: every method of this path is its
			// own, never the item routes of a key "events".
			p := a.base + "/" + n + PathEvents
			handle(p, p, es)
		}
	}
	for name, dh := range opts.Handlers {
		var h http.Handler = apiCSP(http.StripPrefix(a.base+"/"+name, dh))
		if opts.Guard != nil {
			h = opts.Guard(allowOf(opts, name)...)(h)
		}
		handle(a.base+"/"+name, a.base+"/"+name, h)
		handle(a.base+"/"+name+"/", a.base+"/"+name+"/{path...}", h)
	}
	handle(a.base+PathJSON, a.base+PathJSON, a.meta("application/json", a.jsonDoc))
	handle(a.base+PathYAML, a.base+PathYAML, a.meta("application/yaml", a.yamlDoc))
	if opts.Docs != nil {
		docs := opts.Docs(DocsPage{Path: a.base + PathDocs, DocumentURL: a.base + PathJSON, Title: opts.Info.Title})
		handle(a.base+PathDocs, a.base+PathDocs, docs)
		handle(a.base+PathDocs+"/", a.base+PathDocs+"/{path...}", docs)
	} else {
		handle(a.base+PathDocs, a.base+PathDocs, a.meta("text/html; charset=utf-8", a.html))
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.problems.Write(w, problem.New(problem.KindNotFound, "No such route."))
	}))
	return mux
}

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

func (a *API) meta(contentType string, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			a.problems.Write(w, problem.New(problem.KindMethodNotAllowed, "The method is not served here.").WithHeader("Allow", "GET, HEAD"))
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("X-Content-Type-Options", "nosniff")
		if strings.HasPrefix(contentType, "text/html") {
			h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		} else {
			h.Set("Content-Security-Policy", APIContentSecurityPolicy)
		}
		h.Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	})
}

// APIContentSecurityPolicy is the Content-Security-Policy of every
// resource response and of the JSON and YAML documents: a browser that is
// led to open one as a page runs nothing, loads nothing and frames nothing.
// Only the reference page at BasePath/docs gets a policy of its own.
const APIContentSecurityPolicy = "default-src 'none'; frame-ancestors 'none'"

// apiCSP sets [APIContentSecurityPolicy] on every response of next.
// apiCSPValue is the Content-Security-Policy value list of every API
// response, shared: net/http only reads it, and Header.Set and Header.Add
// replace rather than write into a list whose capacity is its length.
var apiCSPValue = []string{APIContentSecurityPolicy}

func apiCSP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Security-Policy"] = apiCSPValue[:1:1]
		next.ServeHTTP(w, r)
	})
}

func allowOf(opts *Config, name string) []authctx.Allow {
	if a, ok := opts.Allow[name]; ok {
		return a
	}
	return DefaultAllow()
}
