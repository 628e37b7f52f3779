package rest

import (
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
		h.Set("Content-Type", res.ContentType)
	}
	if call.Operation == OpCreate && res.Key != "" {
		h.Set("Location", collectionPath(req)+"/"+url.PathEscape(res.Key))
	}
	body := res.Body != nil && res.Status != http.StatusNoContent
	if body {
		// The whole body is at hand: saying its length spares net/http
		// the chunked encoding (and a write) of bodies over 2 KB.
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
	h.Add("Vary", "Authorization, Cookie")
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
		h.Set("Cache-Control", cc)
	}
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
