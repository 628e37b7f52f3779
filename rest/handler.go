package rest

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// ServeHTTP serves the resource's routes relative to its mount point
// (mount with http.StripPrefix, or use [NewResourceSet]): it parses the route,
// key, body and caller, runs [Resource.Do] and writes the result or the
// problem. HEAD is served like GET without a body.
//
// The collection is the mount point itself and the mount point with a
// slash: register both patterns on an [http.ServeMux], so that /api/todos
// answers the list without the mux's redirect to /api/todos/:
//
//	h := http.StripPrefix("/api/todos", todos)
//	mux.Handle("/api/todos", h)
//	mux.Handle("/api/todos/", h)
//
// A nil *Resource (the result of a failed [NewResource] whose error was not
// checked) answers every request with a 500 problem instead of panicking.
func (r *Resource) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r == nil {
		problem.Write(w, problem.New(problem.KindUnexpected, "This resource is not available."))
		return
	}
	segs, ok := splitPath(req.URL.EscapedPath())
	if !ok {
		r.opts.Problems.Write(w, routeNotFound())
		return
	}
	method := req.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	call := &Call{Request: req}
	if ids := req.Header.Values(telemetry.RequestIDHeader); len(ids) == 1 && telemetry.ValidRequestID(ids[0]) {
		call.RequestID = ids[0]
	}
	r.cacheHeaders(w, req)
	// Do recovers the pipeline's panics; this covers what runs before it
	// (Config.Caller, reading the body).
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			r.opts.Problems.Write(w, r.unexpected(call, fmt.Errorf("panic: %v\n%s", p, debug.Stack())))
		}
	}()
	ba, key, actionAllow, concrete := r.matchAction(method, segs)
	takesBody := false
	switch {
	case ba != nil:
		call.Operation, call.Key = Operation(ba.name), key
		takesBody = ba.Input != nil || method != http.MethodGet
	case concrete && len(segs) > 0:
		// An action's own path (/purge) asked with another method: its
		// methods only, never the item routes of a key "purge".
		r.opts.Problems.Write(w, methodNotAllowed(allowHeader(nil, actionAllow)))
		return
	case len(segs) == 0 && method == http.MethodGet && r.ops[OpList]:
		call.Operation = OpList
	case len(segs) == 0 && method == http.MethodPost && r.ops[OpCreate]:
		call.Operation, takesBody = OpCreate, true
	case len(segs) == 1 && method == http.MethodGet && r.ops[OpGet]:
		call.Operation, call.Key = OpGet, segs[0]
	case len(segs) == 1 && method == http.MethodPatch && r.ops[OpUpdate]:
		call.Operation, call.Key, takesBody = OpUpdate, segs[0], true
	case len(segs) == 1 && method == http.MethodDelete && r.ops[OpDelete]:
		call.Operation, call.Key = OpDelete, segs[0]
	default:
		var crud []string
		switch len(segs) {
		case 0:
			crud = append(crud, r.allowCRUD[0])
		case 1:
			crud = append(crud, r.allowCRUD[1])
		}
		a := allowHeader(crud, actionAllow)
		if a == "" {
			r.opts.Problems.Write(w, routeNotFound())
			return
		}
		r.opts.Problems.Write(w, methodNotAllowed(a))
		return
	}
	r.reportRoute(req, call.Operation, ba)
	// Parse the query once, where it is read (list, actions, hooks through
	// Target.Query) or present (item routes and creates refuse filters).
	// Not URL.Query(): it drops pairs it cannot decode (and every pair past
	// Go's parameter limit), which would silently ignore filters.
	reads := call.Operation == OpList || ba != nil || r.hasHooks
	if reads || req.URL.RawQuery != "" {
		q, err := url.ParseQuery(req.URL.RawQuery)
		if err != nil {
			r.opts.Problems.Write(w, badQuery("The query string is malformed (bad escape, ';' separator or too many parameters)."))
			return
		}
		if p := r.refuseItemFilters(call.Operation, ba, q); p != nil {
			r.opts.Problems.Write(w, p)
			return
		}
		if reads {
			call.Query = q
		}
	}
	if takesBody {
		body, p := r.readBody(w, req)
		if p != nil {
			r.opts.Problems.Write(w, p)
			return
		}
		call.Body = body
	}
	auth, err := r.caller(req)
	if err != nil {
		r.opts.Problems.Write(w, r.toProblem(call, err))
		return
	}
	call.Auth = auth
	if r.d.HasReplicas() {
		var p *problem.Problem
		if call.Position, p = requestPosition(req); p != nil {
			r.opts.Problems.Write(w, p)
			return
		}
	}
	res, err := r.Do(req.Context(), call)
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
	// The ServeMux pattern that routed here (kept through http.StripPrefix)
	// names the mount point's wildcards in the route.
	telemetry.MountPattern(req.Context(), req.Pattern)
	telemetry.SetRoute(req.Context(), req.URL.EscapedPath(), pattern, string(op), r.table)
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

// splitPath splits an escaped path relative to the mount point into
// unescaped segments; "" and "/" give none. A trailing slash is ignored.
func splitPath(p string) ([]string, bool) {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return nil, true
	}
	parts := strings.Split(p, "/")
	for i, s := range parts {
		u, err := url.PathUnescape(s)
		if err != nil || u == "" {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
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
