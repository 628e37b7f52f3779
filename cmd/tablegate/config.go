package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// serveConfig is the JSON file of "tablegate serve" (and doctor/openapi
// --config): which tables to serve and how.
type serveConfig struct {
	// Addr is the listen address (flag --addr overrides).
	Addr string `json:"addr,omitempty"`
	// DatabaseURL is the Postgres URL; DATABASE_URL and --database-url win.
	// Prefer the environment: a config file is often committed.
	DatabaseURL string `json:"database_url,omitempty"`
	// BasePath prefixes every resource route (default /api).
	BasePath string `json:"base_path,omitempty"`
	// Title and Version describe the API in its OpenAPI document.
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// Auth says where tokens are verified.
	Auth authConfig `json:"auth"`
	// Permissions grants permission keys to callers whose roles claim
	// holds one of the listed roles ("todos.delete": ["admin"]). A
	// permission named by a table but missing here denies every caller.
	Permissions map[string][]string `json:"permissions,omitempty"`
	// Tables maps a route name (/api/<name>) to a table.
	Tables map[string]*tableConfig `json:"tables"`
	// MCP serves the same operations as MCP tools at /mcp (Streamable
	// HTTP), each table's tools behind that table's guard.
	MCP bool `json:"mcp,omitempty"`
}

// authConfig locates the JWKS.
type authConfig struct {
	// URL is the Supabase project URL (SUPABASE_URL); the JWKS is
	// {URL}/auth/v1/.well-known/jwks.json and refresh goes to {URL}/auth/v1.
	URL string `json:"url,omitempty"`
	// JWKSURL overrides the JWKS location.
	JWKSURL string `json:"jwks_url,omitempty"`
	// Refresh enables cookie session refresh.
	Refresh bool `json:"refresh,omitempty"`
}

// tableConfig declares one served table.
type tableConfig struct {
	// Table is the table or view, optionally schema-qualified (default: the
	// route name in schema public).
	Table string `json:"table,omitempty"`
	// Operations lists the CRUD operations served (default all five).
	Operations []string `json:"operations,omitempty"`
	// Select lists the returned columns (default all).
	Select []string `json:"select,omitempty"`
	// Key names the key column (default the primary key).
	Key string `json:"key,omitempty"`
	// Permissions maps an operation to a permission key.
	Permissions map[string]string `json:"permissions,omitempty"`
	// Guard is the allow list: user, anon, anonymous, service (default [user]).
	Guard []string `json:"guard,omitempty"`
}

var (
	crudOps    = []string{"list", "get", "create", "update", "delete"}
	guardKinds = []string{"user", "anon", "anonymous", "service"}
	routeName  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	tableName  = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_$]*\.)?[A-Za-z_][A-Za-z0-9_$]*$`)
)

// loadServeConfig reads, parses and validates a config file. Unknown keys
// are errors, so that a typo does not silently serve something else.
func loadServeConfig(path string) (*serveConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("config file %s does not exist", path)
		}
		return nil, fmt.Errorf("read config: %w", err)
	}
	return parseServeConfig(data, path)
}

func parseServeConfig(data []byte, name string) (*serveConfig, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c serveConfig
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return &c, nil
}

func (c *serveConfig) validate() error {
	if c.BasePath == "" {
		c.BasePath = "/api"
	}
	if !strings.HasPrefix(c.BasePath, "/") {
		return fmt.Errorf("base_path must start with /, got %q", c.BasePath)
	}
	c.BasePath = strings.TrimRight(c.BasePath, "/")
	if c.Title == "" {
		c.Title = "tablegate API"
	}
	if c.Version == "" {
		c.Version = "0.1.0"
	}
	if len(c.Tables) == 0 {
		return errors.New(`no tables: add "tables": {"todos": {"table": "public.todos"}}`)
	}
	for _, name := range c.tableNames() {
		t := c.Tables[name]
		if t == nil {
			return fmt.Errorf("tables.%s is null", name)
		}
		if !routeName.MatchString(name) {
			return fmt.Errorf("tables.%s: the route name must start with a letter and hold letters, digits, _ or -", name)
		}
		if t.Table == "" {
			t.Table = "public." + name
		}
		if !tableName.MatchString(t.Table) {
			return fmt.Errorf("tables.%s.table: %q is not a [schema.]table name", name, t.Table)
		}
		if !strings.Contains(t.Table, ".") {
			t.Table = "public." + t.Table
		}
		if len(t.Operations) == 0 {
			t.Operations = slices.Clone(crudOps)
		}
		for _, op := range t.Operations {
			if !slices.Contains(crudOps, op) {
				return fmt.Errorf("tables.%s.operations: unknown operation %q (want %s)", name, op, strings.Join(crudOps, ", "))
			}
		}
		for op, key := range t.Permissions {
			if !slices.Contains(t.Operations, op) {
				return fmt.Errorf("tables.%s.permissions: %q is not a served operation", name, op)
			}
			if key == "" {
				return fmt.Errorf("tables.%s.permissions.%s: empty permission key", name, op)
			}
		}
		if len(t.Guard) == 0 {
			t.Guard = []string{"user"}
		}
		for _, g := range t.Guard {
			if !slices.Contains(guardKinds, g) {
				return fmt.Errorf("tables.%s.guard: unknown caller kind %q (want %s)", name, g, strings.Join(guardKinds, ", "))
			}
		}
	}
	return nil
}

// tableNames returns the route names in a stable order.
func (c *serveConfig) tableNames() []string {
	names := make([]string, 0, len(c.Tables))
	for n := range c.Tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// jwksURL is where the config's tokens verify, or "".
func (a authConfig) jwksURL() string {
	if a.JWKSURL != "" {
		return a.JWKSURL
	}
	if a.URL != "" {
		return strings.TrimRight(a.URL, "/") + "/auth/v1/.well-known/jwks.json"
	}
	return ""
}
