package spec

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
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
	// chosen by the integrator, not the OpenAPI version.
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

// Config configures DefineAPI: the document's info, where the API is
// mounted, the resources it serves and the guard in front of each.
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
	base     string
	jsonDoc  []byte
	yamlDoc  []byte
	html     []byte
	router   *rest.Router
	problems problem.Writer
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
	a := &API{base: base, problems: b.problems}
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
	if a.router, err = a.newRouter(opts, b.streamIDs); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrDefine, err)
	}
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
// sorted by path, then method: the routes of [API.Router].
func (a *API) Routes() []rest.Route { return a.router.Routes() }

// Router returns the [rest.Router] serving, below BasePath, every
// resource and handler (BasePath/<segment>/...), the event streams, the
// document (BasePath/openapi.json and BasePath/openapi.yaml) and the
// reference page (BasePath/docs).
func (a *API) Router() *rest.Router { return a.router }

// Handler returns [API.Router] as an http.Handler.
func (a *API) Handler() http.Handler { return a.router }

// newRouter builds the router of the resources, handlers and streams of
// opts, with the description's routes as mounts; streamIDs names each
// stream's operation id.
func (a *API) newRouter(opts *Config, streamIDs map[string]string) (*rest.Router, error) {
	var mounts []rest.Mount
	for n, es := range opts.Streams {
		// The stream admits callers itself (its own allow list) and
		// answers other methods 405: every method of this path is its
		// own, never the item routes of a key "events".
		p := "/" + n + PathEvents
		mounts = append(mounts, rest.Mount{Path: p, Handler: es,
			Routes: []rest.Route{{Method: http.MethodGet, Path: p, OperationID: streamIDs[n]}}})
	}
	meta := func(path, id string, h http.Handler, subtree bool) {
		mounts = append(mounts, rest.Mount{Path: path, Handler: h, Subtree: subtree,
			Routes: []rest.Route{{Method: http.MethodGet, Path: path, OperationID: id}}})
	}
	meta(PathJSON, metaJSONID, a.meta("application/json", a.jsonDoc), false)
	meta(PathYAML, metaYAMLID, a.meta("application/yaml", a.yamlDoc), false)
	if opts.Docs != nil {
		meta(PathDocs, metaDocsID, opts.Docs(DocsPage{Path: a.base + PathDocs, DocumentURL: a.base + PathJSON, Title: opts.Info.Title}), true)
	} else {
		meta(PathDocs, metaDocsID, a.meta("text/html; charset=utf-8", a.html), false)
	}
	allow := make(map[string][]authctx.Allow, len(opts.Resources)+len(opts.Handlers))
	for n := range opts.Resources {
		allow[n] = allowOf(opts, n)
	}
	for n := range opts.Handlers {
		allow[n] = allowOf(opts, n)
	}
	return rest.NewRouter(&rest.RouterConfig{BasePath: a.base, Resources: opts.Resources, Handlers: opts.Handlers,
		Allow: allow, Guard: opts.Guard, Mounts: mounts, Problems: a.problems})
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
			h.Set("Content-Security-Policy", rest.ContentSecurityPolicy)
		}
		h.Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	})
}

func allowOf(opts *Config, name string) []authctx.Allow {
	if a, ok := opts.Allow[name]; ok {
		return a
	}
	return DefaultAllow()
}
