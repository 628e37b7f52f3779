package rest

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// A resource routes with two [http.ServeMux]es built once by
// [NewResource], relative to its mount point:
//
//   - routes holds one pattern per served method and path: "GET /{$}"
//     (list), "POST /{$}" (create), "GET /{key}" (get), "PATCH /{key}"
//     (update), "DELETE /{key}" (delete) and one per action ("POST
//     /{key}/complete"); the key is r.PathValue("key"). A path with a
//     literal segment belongs to its actions for every method, so the
//     methods of GET, POST, PUT, PATCH and DELETE it does not serve are
//     registered there too, answering 405 (otherwise PATCH /export would
//     update the row with the key "export"). The catch-all "/" takes
//     everything else.
//   - paths, read on the catch-all only, holds one method-less pattern
//     per path, answering 405 with the path's Allow header, or 404 where
//     no method is served; its own catch-all answers 404.
//
// Neither mux ever answers in its own words: a request reaches them with a
// clean path (see [Resource.ServeHTTP]), so they never redirect, and the
// catch-alls leave no request unmatched.

// keyParam is the wildcard of the key in every pattern.
const keyParam = "key"

// route is the handler of one served method and path.
type route struct {
	r         *Resource
	op        Operation
	ba        *boundAction // nil for CRUD
	item      bool         // the path has the key
	takesBody bool
}

func (rt *route) ServeHTTP(w http.ResponseWriter, req *http.Request) { rt.r.serve(w, req, rt) }

// refusal answers 405 with allow, or 404 for an empty allow.
type refusal struct {
	r     *Resource
	allow string
}

func (f *refusal) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if f.allow == "" {
		f.r.opts.Problems.Write(w, routeNotFound())
		return
	}
	f.r.opts.Problems.Write(w, methodNotAllowed(f.allow))
}

// unrouted is the catch-all of routes: it finds the path in paths.
type unrouted struct{ r *Resource }

func (u unrouted) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	h, _ := u.r.paths.Handler(req)
	if _, ok := h.(*refusal); !ok { // cannot happen: paths has a catch-all
		h = &refusal{r: u.r}
	}
	h.ServeHTTP(w, req)
}

// pathShape is one path of the resource with what is served there.
type pathShape struct {
	pattern string   // ServeMux path: "/{$}", "/{key}", "/export", "/{key}/complete"
	literal bool     // has a literal segment
	methods []string // served methods: CRUD first, then actions by name
	crud    string   // the CRUD part of Allow (allowCRUD), "" for none
}

// buildRoutes builds r.routes and r.paths (after checkRouteClashes).
func (r *Resource) buildRoutes() {
	r.routes, r.paths = http.NewServeMux(), http.NewServeMux()
	var shapes []*pathShape
	shape := func(pattern string, literal bool) *pathShape {
		for _, s := range shapes {
			if s.pattern == pattern {
				return s
			}
		}
		s := &pathShape{pattern: pattern, literal: literal}
		shapes = append(shapes, s)
		return s
	}
	coll, item := shape("/{$}", false), shape("/{"+keyParam+"}", false)
	coll.crud, item.crud = r.allowCRUD[0], r.allowCRUD[1]
	for _, op := range crud {
		if !r.ops[op] {
			continue
		}
		s := coll
		if op.Item() {
			s = item
		}
		r.routes.Handle(op.Method()+" "+s.pattern, &route{r: r, op: op, item: op.Item(),
			takesBody: op == OpCreate || op == OpUpdate})
	}
	for _, name := range r.actionNames {
		ba := r.actions[name]
		s := shape(ba.pattern())
		s.methods = append(s.methods, ba.Method)
		r.routes.Handle(ba.Method+" "+s.pattern, &route{r: r, op: Operation(name), ba: ba, item: ba.item,
			takesBody: ba.Input != nil || ba.Method != http.MethodGet})
	}
	r.maxSegs = 1
	for _, s := range shapes {
		r.maxSegs = max(r.maxSegs, strings.Count(s.pattern, "/"))
		var crud []string
		if s.crud != "" {
			crud = []string{s.crud}
		}
		refuse := &refusal{r: r, allow: allowHeader(crud, s.methods)}
		r.paths.Handle(s.pattern, refuse)
		if !s.literal {
			continue
		}
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			served := false
			for _, sm := range s.methods {
				served = served || sm == m
			}
			if !served {
				r.routes.Handle(m+" "+s.pattern, refuse)
			}
		}
	}
	r.routes.Handle("/", unrouted{r})
	r.paths.Handle("/", &refusal{r: r})
}

// pattern returns the ServeMux path of an action and whether it has a
// literal segment.
func (ba *boundAction) pattern() (string, bool) {
	if len(ba.segs) == 0 {
		return "/{$}", false
	}
	var b strings.Builder
	literal := false
	for _, s := range ba.segs {
		b.WriteByte('/')
		if s == "" {
			b.WriteString("{" + keyParam + "}")
			continue
		}
		literal = true
		b.WriteString(url.PathEscape(s))
	}
	return b.String(), literal
}

// ServeHTTP serves the resource's routes relative to its mount point
// (mount with http.StripPrefix, or use [NewRouter]): it routes the
// request, parses the key, body and caller, runs [Resource.Do] and writes
// the result or the problem. HEAD is served like GET without a body.
// Inside the resource's hooks and actions, the request's
// r.PathValue("key") is the raw key of an item route (the wildcards of a
// ServeMux in front are replaced, as by any nested ServeMux).
//
// The collection is the mount point itself and the mount point with a
// slash: register both patterns on an [http.ServeMux], so that /api/todos
// answers the list without the mux's redirect to /api/todos/:
//
//	h := http.StripPrefix("/api/todos", todos)
//	mux.Handle("/api/todos", h)
//	mux.Handle("/api/todos/", h)
//
// One trailing slash is ignored (/api/todos/5/ is /api/todos/5). A path
// with an empty segment answers 404; "." and ".." segments are keys like
// any other, never resolved. Unknown paths answer 404 and known paths
// asked with a method they do not serve 405 with an Allow header, both as
// problems.
//
// A nil *Resource (the result of a failed [NewResource] whose error was not
// checked) answers every request with a 500 problem instead of panicking.
func (r *Resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r == nil {
		writeUnavailable(w)
		return
	}
	r.cacheHeaders(w, req)
	if telemetry.FromContext(req.Context()) != nil {
		// The ServeMux pattern that routed here (kept through
		// http.StripPrefix) names the mount point's wildcards in the route.
		telemetry.MountPattern(req.Context(), req.Pattern)
	}
	if p := req.URL.EscapedPath(); !cleanPath(p) {
		req2, slashKey, ok := cleanRequest(req, p)
		if !ok {
			r.opts.Problems.Write(w, routeNotFound())
			return
		}
		if telemetry.FromContext(req.Context()) != nil {
			// Telemetry finds the mount point before the path as received.
			req2 = req2.WithContext(context.WithValue(req2.Context(), localPathKey{}, p))
		}
		if slashKey {
			r.serveSlashKey(w, req2)
			return
		}
		req = req2
	}
	if strings.Count(req.URL.EscapedPath(), "/") > r.maxSegs {
		// Deeper than any route: spare the muxes the search.
		r.opts.Problems.Write(w, routeNotFound())
		return
	}
	outer := req.Pattern
	r.routes.ServeHTTP(w, req)
	req.Pattern = outer
}

// localPathKey keys the path a resource received, in the context of a
// request whose path it cleaned, for telemetry.
type localPathKey struct{}

// localPath is the escaped path the resource received.
func localPath(req *http.Request) string {
	if p, ok := req.Context().Value(localPathKey{}).(string); ok {
		return p
	}
	return req.URL.EscapedPath()
}

// serveSlashKey serves a request whose key, the first segment, is "/"
// (%2F), which ServeMux takes for a trailing slash: cleanRequest routed it
// with the key "%" (%25, which no literal segment holds).
func (r *Resource) serveSlashKey(w http.ResponseWriter, req *http.Request) {
	h, _ := r.routes.Handler(req)
	if rt, ok := h.(*route); ok && rt.item {
		req.SetPathValue(keyParam, "/")
	}
	h.ServeHTTP(w, req)
}

// cleanPath reports whether ServeMux would route an escaped path as is:
// not empty, no trailing slash but the root's, no empty, "." or ".."
// segment, and a first segment other than %2F.
func cleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if len(p) > 1 && p[len(p)-1] == '/' {
		return false
	}
	if len(p) >= 4 && (p[4:] == "" || p[4] == '/') && strings.EqualFold(p[1:4], "%2F") {
		return false
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		seg := p[i+1:]
		if j := strings.IndexByte(seg, '/'); j >= 0 {
			seg = seg[:j]
		}
		if (seg == "" && i+1 < len(p)) || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// cleanRequest returns a copy of req whose escaped path p has the form
// ServeMux routes without a redirect: one trailing slash and the leading
// one dropped (the collection is "/"), "." and ".." segments escaped so
// that they are keys, and a first segment %2F replaced with %25 (slashKey).
// It reports false for a path with an empty segment.
func cleanRequest(req *http.Request, p string) (_ *http.Request, slashKey, ok bool) {
	s := strings.TrimSuffix(strings.TrimPrefix(p, "/"), "/")
	segs := strings.Split(s, "/")
	if s == "" {
		segs = nil
	}
	for i, seg := range segs {
		switch seg {
		case "":
			return nil, false, false
		case ".":
			segs[i] = "%2E"
		case "..":
			segs[i] = "%2E%2E"
		default:
			if i == 0 && strings.EqualFold(seg, "%2F") {
				segs[i], slashKey = "%25", true
			}
		}
	}
	np := "/" + strings.Join(segs, "/")
	path, err := url.PathUnescape(np)
	if err != nil {
		return nil, false, false
	}
	r2 := new(http.Request)
	*r2 = *req
	u := *req.URL
	u.Path, u.RawPath = path, np
	r2.URL = &u
	return r2, slashKey, true
}

// writeUnavailable is the answer of a nil *Resource.
func writeUnavailable(w http.ResponseWriter) {
	problem.Write(w, problem.New(problem.KindUnexpected, "This resource is not available."))
}

// serve serves one routed request (see [Resource.ServeHTTP]).
func (r *Resource) serve(w http.ResponseWriter, req *http.Request, rt *route) {
	call := &Call{Request: req, Operation: rt.op}
	if rt.item {
		call.Key = req.PathValue(keyParam)
	}
	if ids := req.Header.Values(telemetry.RequestIDHeader); len(ids) == 1 && telemetry.ValidRequestID(ids[0]) {
		call.RequestID = ids[0]
	}
	ba, takesBody := rt.ba, rt.takesBody
	r.reportRoute(req, call.Operation, ba)
	// run recovers the panics of prepare too (Config.Caller, reading the
	// body).
	prepare := func(call *Call) error {
		// Parse the query once, where it is read (list, actions, hooks through
		// Target.Query) or present (item routes and creates refuse filters).
		// Not URL.Query(): it drops pairs it cannot decode (and every pair past
		// Go's parameter limit), which would silently ignore filters.
		reads := call.Operation == OpList || ba != nil || r.hasHooks
		if reads || req.URL.RawQuery != "" {
			q, err := url.ParseQuery(req.URL.RawQuery)
			if err != nil {
				return badQuery("The query string is malformed (bad escape, ';' separator or too many parameters).")
			}
			if p := r.refuseItemFilters(call.Operation, ba, q); p != nil {
				return p
			}
			if reads {
				call.Query = q
			}
		}
		if takesBody {
			body, p := r.readBody(w, req)
			if p != nil {
				return p
			}
			call.Body = body
		}
		auth, err := r.caller(req)
		if err != nil {
			return err
		}
		call.Auth = auth
		if r.d.HasReplicas() {
			var p *problem.Problem
			if call.Position, p = requestPosition(req); p != nil {
				return p
			}
		}
		return nil
	}
	res, err := r.run(req.Context(), call, prepare)
	if err != nil {
		p, _ := problem.As(err)
		r.opts.Problems.Write(w, p)
		return
	}
	h := w.Header()
	if res.Position != 0 {
		writePosition(w, req, res.Position)
	}
	for k, vs := range res.Header {
		h[k] = vs
	}
	if res.ContentType != "" && res.Body != nil {
		setHeader(h, "Content-Type", res.ContentType)
	}
	if call.Operation == OpCreate && res.Key != "" {
		h.Set("Location", collectionPath(req)+"/"+url.PathEscape(res.Key))
	}
	body := res.Body != nil && res.Status != http.StatusNoContent
	if _, own := h["Content-Length"]; body && (len(res.Body) >= autoLengthMax || own || req.Method == http.MethodHead) {
		// The whole body is at hand: saying its length spares net/http
		// the chunked encoding (and a write) of bodies over 2 KB. net/http
		// says the length of a smaller body itself, without allocating,
		// since the handler has returned before it writes the header; a
		// length a handler set is replaced by the body's.
		h.Set("Content-Length", strconv.Itoa(len(res.Body)))
	}
	w.WriteHeader(res.Status)
	if body {
		_, _ = w.Write(res.Body)
	}
}

// refuseItemFilters refuses a get, create, update or delete whose query
// reads as a filter: a parameter named as a selected column, a logical
// filter (or, and) or PostgREST's select, columns or on_conflict (also
// behind a table prefix: todos.or), a JSON path or cast (data->>s,
// title::text), or a parameter that names a selected column in another
// spelling (Version, version%20, todos.version) with a value of the form
// operator.value. Those routes address one row by its key and take no
// filter, so a client expecting a conditional update (PATCH
// /todos/1?version=eq.3) would otherwise change the row unconditionally.
// (A query that does not parse is refused before.) Other parameters, whatever
// their values (?next=in.example.com), are left to hooks. Only selected
// columns are named, so the refusal tells nothing the API's description
// does not.
func (r *Resource) refuseItemFilters(op Operation, ba *boundAction, q url.Values) *problem.Problem {
	if op == OpList || ba != nil {
		return nil
	}
	for k, vs := range q {
		// The key as a filter's column would be read: trimmed, any
		// not. prefixes and table prefix dropped, in any case.
		norm := strings.ToLower(strings.Trim(k, " \t\x00"))
		for strings.HasPrefix(norm, "not.") {
			norm = norm[len("not."):]
		}
		norm = norm[strings.LastIndexByte(norm, '.')+1:]
		_, isCol := r.selName[k]
		filter := isCol || listParams[norm] || strings.Contains(k, "->") || strings.Contains(k, "::")
		if !filter && r.selFold[norm] {
			for _, v := range vs {
				filter = filter || looksLikeFilter(v)
			}
		}
		if filter {
			return badParam(k, "reads as a filter, which a "+string(op)+" does not take (only a list filters)")
		}
	}
	return nil
}

// listParams are PostgREST parameters that a single-row route would
// silently ignore: logical filters, and select, columns and on_conflict.
var listParams = map[string]bool{"or": true, "and": true, "select": true, "columns": true, "on_conflict": true}

// filterOps are the operators of PostgREST's filters (tablegate's lists
// take some of them): a value "op.x" with one of them reads as a filter.
var filterOps = map[string]bool{
	"eq": true, "neq": true, "gt": true, "gte": true, "lt": true, "lte": true, "like": true, "ilike": true,
	"match": true, "imatch": true, "in": true, "is": true, "isdistinct": true, "fts": true, "plfts": true,
	"phfts": true, "wfts": true, "cs": true, "cd": true, "ov": true, "sl": true, "sr": true, "nxr": true,
	"nxl": true, "adj": true, "not": true,
}

// looksLikeFilter reports a value of the form [not.]op[(any|all)].x.
func looksLikeFilter(v string) bool {
	op, _, ok := strings.Cut(strings.TrimSpace(v), ".")
	if !ok {
		return false
	}
	op = strings.ToLower(op)
	if i := strings.IndexByte(op, '('); i > 0 {
		op = op[:i]
	}
	return filterOps[op]
}

// reportRoute tells telemetry (when a telemetry.Handler serves the
// request) the route pattern, operation and table.
func (r *Resource) reportRoute(req *http.Request, op Operation, ba *boundAction) {
	if telemetry.FromContext(req.Context()) == nil {
		return
	}
	pattern := "" // the collection: the mount itself, /api/todos
	switch {
	case ba != nil:
		pattern = ba.docPath
	case op == OpGet || op == OpUpdate || op == OpDelete:
		pattern = r.itemRoute
	}
	telemetry.SetRoute(req.Context(), localPath(req), pattern, string(op), r.table)
}

// cacheHeaders marks every response as depending on the credentials, and
// a response to a request with credentials as private (Config.CacheControl).
func (r *Resource) cacheHeaders(w http.ResponseWriter, req *http.Request) {
	h := w.Header()
	if vs, ok := h["Vary"]; ok {
		h["Vary"] = append(vs, varyCredentials)
	} else {
		setHeader(h, "Vary", varyCredentials)
	}
	if h.Get("Cache-Control") != "" {
		return // e.g. the refreshed session's no-store, already stricter
	}
	credentialed := req.Header.Get("Authorization") != "" || req.Header.Get("Cookie") != "" ||
		req.Header.Get("Apikey") != ""
	if !credentialed {
		a := authctx.AuthFrom(req.Context())
		credentialed = a.Kind != "" && a.Kind != authctx.KindAnon
	}
	if credentialed {
		cc := r.opts.CacheControl
		if cc == "" {
			cc = DefaultCacheControl
		}
		setHeader(h, "Cache-Control", cc)
	}
}

// varyCredentials is the Vary of every response: it depends on the
// credentials.
const varyCredentials = "Authorization, Cookie"

// autoLengthMax is the body size below which net/http, which buffers that
// much of a response before it writes the header, sets Content-Length
// itself (bufferBeforeChunkingSize in net/http).
const autoLengthMax = 2048

// sharedValues are the one-element value lists of the header values most
// responses carry, shared by every response: net/http only reads them,
// and Header.Set and Header.Add replace rather than write into a list (its
// capacity is its length), so sharing spares an allocation per header per
// response.
var sharedValues = map[string][]string{
	jsonType:            {jsonType},
	varyCredentials:     {varyCredentials},
	DefaultCacheControl: {DefaultCacheControl},
}

// setHeader is h.Set(key, v) for a canonical key, sharing the value list
// of a common value.
func setHeader(h http.Header, key, v string) {
	if vs, ok := sharedValues[v]; ok {
		h[key] = vs[:1:1]
		return
	}
	h[key] = []string{v}
}

func (r *Resource) caller(req *http.Request) (authctx.Auth, error) {
	if r.opts.Caller != nil {
		return r.opts.Caller(req)
	}
	return defaultCaller(req)
}

// ResolveCaller returns the caller of req as the resource's own routes
// resolve it: [Config.Caller]'s answer when one is set (its Source is
// [authctx.SourceResolver]), else the result authctx middleware stored in
// the request context ([authctx.FromContext]; anon with
// [authctx.SourceNone] without one). A handler serving the resource's
// rows on a route of its own, such as an events stream, calls it so that
// it admits exactly the callers the resource admits.
func (r *Resource) ResolveCaller(req *http.Request) (authctx.Result, error) {
	if r.opts.Caller != nil {
		a, err := r.opts.Caller(req)
		if err != nil {
			return authctx.Result{}, err
		}
		if a.Kind == "" { // the zero Auth: anon, as the resource's routes take it
			a = authctx.Anon(authctx.ReasonNone)
		}
		return authctx.Result{Auth: a, Source: authctx.SourceResolver}, nil
	}
	if res, ok := authctx.FromContext(req.Context()); ok {
		return res, nil
	}
	return authctx.Result{Auth: authctx.Anon(authctx.ReasonNone), Source: authctx.SourceNone}, nil
}

// defaultCaller is the caller when Config.Caller is nil: the state the
// authctx middleware stored in the request context, anon without one.
func defaultCaller(r *http.Request) (authctx.Auth, error) {
	return authctx.AuthFrom(r.Context()), nil
}

// readBody enforces the media type (415) and the size limit (413).
func (r *Resource) readBody(w http.ResponseWriter, req *http.Request) ([]byte, *problem.Problem) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, r.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, problem.Newf(problem.KindPayloadTooLarge, "The body exceeds %d bytes.", r.maxBody)
		}
		return nil, badBody("The body could not be read.")
	}
	if len(body) == 0 {
		return nil, nil
	}
	ct := req.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || !(mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
		return nil, problem.New(problem.KindUnsupportedMediaType, "The body must be application/json.")
	}
	return body, nil
}

// collectionPath is the request's original path without a trailing slash
// (the resource's mount point for create).
func collectionPath(req *http.Request) string {
	p := req.URL.Path
	if req.RequestURI != "" {
		if u, err := url.ParseRequestURI(req.RequestURI); err == nil {
			p = u.EscapedPath()
		}
	}
	return strings.TrimSuffix(p, "/")
}

func compact(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		for _, m := range strings.Split(s, ", ") {
			if m != "" && !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// allowHeader is the Allow header of a path: the CRUD methods served
// there (as rendered in allowCRUD) and the actions' methods, GET implying
// HEAD.
func allowHeader(crud, actionMethods []string) string {
	allow := crud
	for _, m := range actionMethods {
		allow = append(allow, m)
		if m == http.MethodGet {
			allow = append(allow, http.MethodHead)
		}
	}
	return strings.Join(compact(allow), ", ")
}
