package rest

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// NewResources builds one resource per table of opts (table name → its
// options, nil for defaults), for [NewResourceSet]. It stops at the first
// error.
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

// ResourceSet serves many resources under one handler, each under its
// path segment: /{name}/... Build it with [NewResourceSet]. Safe for
// concurrent use.
type ResourceSet struct {
	byName   map[string]*Resource
	names    []string
	problems problem.Writer
}

// ResourceSetConfig configures a [ResourceSet]. Nil is valid.
type ResourceSetConfig struct {
	// Problems renders the 404 body of an unknown name (type URL base).
	// The resources render their own errors with their own Config.Problems.
	Problems problem.Writer
}

// NewResourceSet returns one handler serving every resource of m under
// /{name} (the map key, usually the table name). Mount it under any prefix
// with http.StripPrefix. An unknown name answers 404. It fails when a
// name is empty or holds a '/', or a resource is nil.
func NewResourceSet(m map[string]*Resource, cfg *ResourceSetConfig) (*ResourceSet, error) {
	if cfg == nil {
		cfg = &ResourceSetConfig{}
	}
	s := &ResourceSet{byName: make(map[string]*Resource, len(m)), problems: cfg.Problems}
	for n, r := range m {
		if r == nil || n == "" || strings.Contains(n, "/") {
			return nil, fmt.Errorf("%w: NewResourceSet: invalid entry %q", ErrBuild, n)
		}
		s.byName[n] = r
		s.names = append(s.names, n)
	}
	sort.Strings(s.names)
	return s, nil
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
	// Telemetry reads the mount point through this pattern too (after the
	// one that routed to the set): /v1/ then /todos/ is /v1/todos.
	telemetry.MountPattern(req.Context(), "/"+name+"/")
	http.StripPrefix("/"+name, r).ServeHTTP(w, req)
}
