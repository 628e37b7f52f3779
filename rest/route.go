package rest

import (
	"context"
	"net/http"
	"net/url"
	"strings"

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
