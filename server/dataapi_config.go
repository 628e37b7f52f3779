package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tablegate/tablegate/dataapi"
)

// DataAPIConfig is the "data_api" object: {"path": "/rest/v1",
// "schemas": ["public"], "max_rows": 1000} by default.
type DataAPIConfig struct {
	// Path is the mount point (default /rest/v1, as Supabase's).
	Path string `json:"path,omitempty"`
	// Schemas are the exposed schemas; the first is the default.
	Schemas []string `json:"schemas,omitempty"`
	// MaxRows caps the rows of one read (default 1000).
	MaxRows int `json:"max_rows,omitempty"`
	// AllowWithoutRLS serves tables that row-level security does not
	// protect (grants alone decide); off, serve refuses to start while
	// anon or authenticated may reach such a table.
	AllowWithoutRLS bool `json:"allow_without_rls,omitempty"`
	// Aggregates allows count(), sum(), avg(), min() and max() in select
	// (off by default, as PostgREST's db-aggregates-enabled).
	Aggregates bool `json:"aggregates,omitempty"`
}

func (d *DataAPIConfig) validate(base string, tables map[string]*TableConfig, mcp bool) error {
	if d.Path == "" {
		d.Path = dataapi.DefaultPath
	}
	d.Path = strings.TrimRight(d.Path, "/")
	if !strings.HasPrefix(d.Path, "/") || d.Path == "" || strings.ContainsAny(d.Path, " {}?#") {
		return fmt.Errorf("data_api.path must be a path such as /rest/v1, got %q", d.Path)
	}
	if len(d.Schemas) == 0 {
		d.Schemas = []string{"public"}
	}
	for _, s := range d.Schemas {
		if s == "" {
			return errors.New("data_api.schemas holds an empty name")
		}
	}
	if d.MaxRows < 0 {
		return fmt.Errorf("data_api.max_rows must be positive, got %d", d.MaxRows)
	}
	taken := []string{"/livez", "/readyz", "/auth"}
	if mcp {
		taken = append(taken, "/mcp")
	}
	if base != "" {
		taken = append(taken, base)
	} else {
		for name := range tables {
			taken = append(taken, "/"+name)
		}
	}
	for _, p := range taken {
		if d.Path == p || strings.HasPrefix(d.Path+"/", p+"/") || strings.HasPrefix(p+"/", d.Path+"/") {
			return fmt.Errorf("data_api.path %s meets the route %s: choose another path", d.Path, p)
		}
	}
	return nil
}
