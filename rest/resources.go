package rest

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// NewResources builds one resource per table of opts (table name → its
// options, nil for defaults), for [Resources]. It stops at the first
// error.
func NewResources(ctx context.Context, d *db.DB, opts map[string]*Options) (map[string]*Resource, error) {
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

// ResourceSet serves many resources under one handler, each under its
// path segment: /{name}/... It is the Go counterpart of the seed's
// resources(map, options) adapters. Safe for concurrent use.
type ResourceSet struct {
	byName   map[string]*Resource
	names    []string
	problems problem.Writer
}

// Resources returns one handler serving every resource of m under /{name}
// (the map key, usually the table name). Mount it under any prefix with
// http.StripPrefix. An unknown name answers 404.
func Resources(m map[string]*Resource) *ResourceSet {
	s := &ResourceSet{byName: make(map[string]*Resource, len(m))}
	for n, r := range m {
		if r == nil || n == "" || strings.Contains(n, "/") {
			panic(fmt.Sprintf("rest: Resources: invalid entry %q", n))
		}
		s.byName[n] = r
		s.names = append(s.names, n)
		s.problems = r.opts.Problems
	}
	sort.Strings(s.names)
	return s
}

// Names returns the path segments served, sorted.
func (s *ResourceSet) Names() []string { return append([]string(nil), s.names...) }

// Resource returns the resource served under name.
func (s *ResourceSet) Resource(name string) (*Resource, bool) {
	r, ok := s.byName[name]
	return r, ok
}

// ServeHTTP dispatches to the resource named by the first path segment.
func (s *ResourceSet) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p := strings.TrimPrefix(req.URL.Path, "/")
	name, _, _ := strings.Cut(p, "/")
	r, ok := s.byName[name]
	if !ok {
		s.problems.Write(w, routeNotFound())
		return
	}
	http.StripPrefix("/"+name, r).ServeHTTP(w, req)
}
