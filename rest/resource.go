package rest

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jackc/pgx/v5"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/suggest"
)

// ErrBuild wraps every error [NewResource] returns for a bad table name,
// unknown column, operation or action, or an authorizer that cannot name
// permissions.
var ErrBuild = errors.New("rest: invalid resource")

// keyKind classifies the key column for parsing /{key}.
type keyKind uint8

const (
	keyOther keyKind = iota
	keyInt
	keyUUID
)

// column is the introspected form of a column with its SQL pieces.
type column struct {
	Column
	ident string // quoted identifier
	cast  string // "::text::<type without typmod>" applied to text parameters
	expr  string // the column in comparisons and order: t."col" (json: ::jsonb)

	typeOID uint32 // pg_type.oid of the column's type (a domain's own)
	domain  bool   // a domain, or an array of one: TypeName is its base type's
	// comparable: eq, gt, in, order and cursors work on the column (its
	// type has btree operators, and values the caller sends cannot fail
	// to parse in ways only the database reports as its own error).
	comparable bool
	// composite: its values are composites, or arrays of them; filtered
	// when comparable, never ordered.
	composite bool
	// textIn: a body gives its value as the type's text form only (a type
	// whose rows carry the JSON of its cast to json, such as hstore:
	// json_populate_record would hand an object's JSON to its parser).
	textIn     bool
	textArrays int    // textIn inside this many levels of arrays
	key        string // its JSON object key with the colon: "col":

	ndims           int                // declared array dimensions (int[][]: 2)
	outForm, inForm *jsonschema.Schema // the JSON forms of its values in rows and in bodies (json_form.go)
	fit             uint8              // JSON kinds a body may give it without an input schema; 0: any (json_fit.go)
}

// Resource serves one table as REST routes; it is an [http.Handler].
// Build it with [NewResource]. A Resource is safe for concurrent use.
type Resource struct {
	d      *db.DB
	table  string
	schema string

	constraints constraintCache // columns of violated constraints (error path)

	cols    []*column          // all columns, table order
	byName  map[string]*column // all columns
	sel     []*column          // selected, select order
	selName map[string]*column // selected
	selFold map[string]bool    // selected column names in lower case
	key     *column
	keyKind keyKind
	// itemRoute is the item route pattern, "/{<key>}", for telemetry.
	itemRoute string

	routes, paths *http.ServeMux // handler.go
	maxSegs       int            // segments of the longest route

	ops         map[Operation]bool
	allowCRUD   [2]string // Allow header values: collection, item
	perms       map[Operation]string
	authz       Authorizer
	hooks       Hooks
	hasHooks    bool
	repo        Repository
	actions     map[string]*boundAction
	actionNames []string

	input map[Operation]*validator

	scopeDefault db.RunOpts               // resource-wide budget; zero: the DB's
	scopes       map[Operation]db.RunOpts // per operation or action
	filterable   map[string]bool          // nil: every selected column

	defaultLimit, maxLimit int
	maxBody                int64
	cursorAEAD             cipher.AEAD // seals list cursors (cursor.go)
	log                    *slog.Logger
	opts                   Config

	desc Description
}

// validate checks what can be checked without the table.
func (o *Config) validate() error {
	maxLimit, defLimit := o.MaxLimit, o.DefaultLimit
	if maxLimit <= 0 {
		maxLimit = DefaultMaxLimit
	}
	if defLimit > maxLimit {
		return fmt.Errorf("DefaultLimit %d exceeds MaxLimit %d", defLimit, maxLimit)
	}
	for _, role := range o.GrantRoles {
		if !slices.Contains(db.RequestRoles, role) {
			return fmt.Errorf("GrantRoles: %q is not checked (list anon or authenticated)", role)
		}
	}
	return nil
}

// NewResource introspects table (a name, optionally schema-qualified;
// default schema public) once and builds its resource. It fails, with an
// error wrapping [ErrBuild], for an unknown table, column or operation, a
// table without a single-column primary key and no Config.Key, an invalid
// action, or permissions the authorizer cannot name; and, wrapping
// [db.ErrNoRLS] too, for a table or view that row-level security does not
// protect ([db.CheckRLS]: RLS disabled, a view without security_invoker),
// unless Config.AllowWithoutRLS. It logs a warning (Config.Logger) for
// each served operation whose privilege the authenticated role lacks.
// opts may be nil.
func NewResource(ctx context.Context, d *db.DB, table string, opts *Config) (*Resource, error) {
	if d == nil {
		return nil, fmt.Errorf("%w: nil *db.DB", ErrBuild)
	}
	var o Config
	if opts != nil {
		o = *opts
	}
	schema, name := "public", table
	if i := strings.IndexByte(table, '.'); i >= 0 {
		schema, name = table[:i], table[i+1:]
	}
	if name == "" || schema == "" {
		return nil, fmt.Errorf("%w: table name %q", ErrBuild, table)
	}
	if err := o.validate(); err != nil {
		return nil, fmt.Errorf("%w: table %q: %v", ErrBuild, table, err)
	}
	cols, pk, err := introspect(ctx, d, schema, name)
	if err != nil {
		return nil, fmt.Errorf("%w: table %q: %v", ErrBuild, table, err)
	}
	r := &Resource{d: d, table: table, schema: schema, cols: cols, opts: o}
	r.byName = make(map[string]*column, len(cols))
	for _, c := range cols {
		r.byName[c.Name] = c
	}
	if err := r.build(&o, pk, pgx.Identifier{schema, name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("%w: table %q: %v", ErrBuild, table, err)
	}
	if tr, ok := r.repo.(*tableRepository); ok {
		if err := tr.checkZone(ctx, d); err != nil {
			return nil, fmt.Errorf("%w: table %q: %v", ErrBuild, table, err)
		}
	}
	if err := r.checkProtection(ctx, d, pgx.Identifier{schema, name}.Sanitize(), &o); err != nil {
		return nil, fmt.Errorf("%w: table %q: %w", ErrBuild, table, err)
	}
	return r, nil
}

func (r *Resource) build(o *Config, pk []string, qualified string) error {
	// Key column.
	switch {
	case o.Key != "":
		c, ok := r.byName[o.Key]
		if !ok {
			return r.unknownColumn("key column", o.Key)
		}
		r.key = c
	case len(pk) == 1:
		r.key = r.byName[pk[0]]
	case len(pk) > 1:
		return fmt.Errorf("composite primary key (%s) is not supported; set Config.Key to a unique column", strings.Join(pk, ", "))
	default:
		return errors.New("no primary key; set Config.Key")
	}
	r.itemRoute = "/{" + r.key.Name + "}"
	switch r.key.TypeName {
	case "int2", "int4", "int8":
		r.keyKind = keyInt
	case "uuid":
		r.keyKind = keyUUID
	}

	// Read-only columns.
	for _, n := range o.ReadOnly {
		c, ok := r.byName[n]
		if !ok {
			return r.unknownColumn("read-only column", n)
		}
		c.ReadOnly = true
	}

	// Select list.
	r.selName = map[string]*column{}
	r.selFold = map[string]bool{}
	if o.Select == nil {
		r.sel = r.cols
	} else {
		if len(o.Select) == 0 {
			return errors.New("select lists no column")
		}
		for _, n := range o.Select {
			c, ok := r.byName[n]
			if !ok {
				return r.unknownColumn("select column", n)
			}
			if _, dup := r.selName[n]; dup {
				return fmt.Errorf("select column %q listed twice", n)
			}
			r.sel = append(r.sel, c)
			r.selName[n] = c
		}
	}
	for _, c := range r.sel {
		c.Selected = true
		r.selName[c.Name] = c
		r.selFold[strings.ToLower(c.Name)] = true
	}

	// Operations.
	r.ops = map[Operation]bool{}
	ops := o.Operations
	if ops == nil {
		ops = crud
	}
	for _, op := range ops {
		if !op.IsCRUD() {
			return fmt.Errorf("unknown operation %q (want list, get, create, update or delete)", op)
		}
		r.ops[op] = true
	}

	// Schemas.
	r.input = map[Operation]*validator{}
	tightened := make(map[Operation]*jsonschema.Schema, len(o.Input))
	for op, s := range o.Input {
		if op != OpCreate && op != OpUpdate {
			return fmt.Errorf("input schema for %q: only create and update take a body (actions declare their own)", op)
		}
		if !r.ops[op] {
			return fmt.Errorf("input schema for %q, which is not served", op)
		}
		s = r.followNullability(s)
		tightened[op] = s
		r.opts.Input = tightened
		v, err := newValidator(s)
		if err != nil {
			return fmt.Errorf("input schema for %q: %v", op, err)
		}
		r.input[op] = v
	}
	for op := range o.Output {
		if !op.IsCRUD() {
			return fmt.Errorf("output schema for %q: actions declare their own", op)
		}
		if !r.ops[op] {
			return fmt.Errorf("output schema for %q, which is not served", op)
		}
	}

	// Limits and keys.
	r.defaultLimit, r.maxLimit, r.maxBody = o.DefaultLimit, o.MaxLimit, o.MaxBodyBytes
	if r.maxLimit <= 0 {
		r.maxLimit = DefaultMaxLimit
	}
	if r.defaultLimit <= 0 {
		r.defaultLimit = min(DefaultLimit, r.maxLimit)
	}
	if r.maxBody <= 0 {
		r.maxBody = DefaultMaxBodyBytes
	}
	key := o.CursorKey
	if len(key) == 0 {
		key = make([]byte, 32)
		_, _ = rand.Read(key)
	}
	r.cursorAEAD = newCursorAEAD(key)
	r.log = o.Logger
	if r.log == nil {
		r.log = slog.Default()
	}
	r.hooks = tracedHooks(o.Hooks)
	h := &o.Hooks
	r.hasHooks = h.AuthorizeFunc != nil || h.BeforeCreateFunc != nil || h.BeforeUpdateFunc != nil ||
		h.BeforeDeleteFunc != nil || h.AfterListFunc != nil || h.AfterGetFunc != nil ||
		h.AfterCreateFunc != nil || h.AfterUpdateFunc != nil
	r.authz = o.Authorizer

	// Permissions.
	r.perms = map[Operation]string{}
	for op, key := range o.Permissions {
		if !op.IsCRUD() {
			return fmt.Errorf("permission for %q: actions declare their own permission", op)
		}
		if !r.ops[op] {
			return fmt.Errorf("permission for %q, which is not served", op)
		}
		if key == "" {
			return fmt.Errorf("empty permission key for %q", op)
		}
		r.perms[op] = key
	}
	if o.PermissionsFromAuthorizer {
		fo, ok := o.Authorizer.(OperationPermissions)
		if !ok {
			return errors.New("PermissionsFromAuthorizer needs an Authorizer implementing ForOperation (rest.OperationPermissions)")
		}
		for _, op := range crud {
			if !r.ops[op] || r.perms[op] != "" {
				continue
			}
			key, err := fo.ForOperation(r.table, op)
			if err != nil {
				return fmt.Errorf("authorizer ForOperation(%q, %q): %v", r.table, op, err)
			}
			if key != "" {
				r.perms[op] = key
			}
		}
	}

	// Filterable columns.
	if o.FilterColumns != nil {
		r.filterable = map[string]bool{}
		for _, n := range o.FilterColumns {
			if _, ok := r.selName[n]; !ok {
				var sel []string
				for _, c := range r.sel {
					sel = append(sel, c.Name)
				}
				return fmt.Errorf("filter column %q is not a selected column%s; the selected columns are %s", n, suggest.DidYouMean(n, sel), strings.Join(sel, ", "))
			}
			r.filterable[n] = true
		}
	}

	// Repository.
	r.repo = o.Repository
	if r.repo == nil {
		r.repo = newTableRepository(qualified, r.sel, r.key, r.byName)
	}

	// Actions.
	r.actions = map[string]*boundAction{}
	for name, a := range o.Actions {
		ba, err := r.bindAction(name, a)
		if err != nil {
			return err
		}
		r.actions[name] = ba
		r.actionNames = append(r.actionNames, name)
	}
	sort.Strings(r.actionNames)
	if err := r.checkRouteClashes(); err != nil {
		return err
	}

	// Time budgets.
	if o.StatementTimeout != 0 {
		r.scopeDefault = db.RunOpts{StatementTimeout: o.StatementTimeout}.Prepare()
	}
	for op, d := range o.StatementTimeouts {
		if op.IsCRUD() && !r.ops[op] || !op.IsCRUD() && r.actions[string(op)] == nil {
			return fmt.Errorf("statement timeout for %q, which is neither a served operation nor an action", op)
		}
		if d == 0 {
			continue
		}
		if r.scopes == nil {
			r.scopes = map[Operation]db.RunOpts{}
		}
		r.scopes[op] = db.RunOpts{StatementTimeout: d}.Prepare()
	}

	r.allowCRUD = [2]string{r.allowed(false), r.allowed(true)}
	r.buildRoutes()
	r.describe()
	return nil
}

// unknownColumn is the error for a configured column the table lacks: it
// names the nearest column and lists the real ones.
func (r *Resource) unknownColumn(what, name string) error {
	names := make([]string, len(r.cols))
	for i, c := range r.cols {
		names[i] = c.Name
	}
	return fmt.Errorf("%s %q does not exist%s; the columns are %s", what, name, suggest.DidYouMean(name, names), strings.Join(names, ", "))
}

// scope returns the database options of an operation or action.
func (r *Resource) scope(op Operation) db.RunOpts {
	if s, ok := r.scopes[op]; ok {
		return s
	}
	return r.scopeDefault
}

// allowed lists the CRUD methods of the collection or item route.
func (r *Resource) allowed(item bool) string {
	var m []string
	for _, op := range crud {
		if r.ops[op] && op.Item() == item {
			if !slices.Contains(m, op.Method()) {
				m = append(m, op.Method())
			}
		}
	}
	if slices.Contains(m, http.MethodGet) {
		m = append(m, http.MethodHead)
	}
	return strings.Join(m, ", ")
}

// Table returns the table name as given to [NewResource].
func (r *Resource) Table() string { return r.table }

// OperationID returns the operation id of a CRUD operation or action of
// this resource (see the package function [OperationID]).
func (r *Resource) OperationID(op Operation) string { return OperationID(r.table, op) }

// Describe returns the resource's description for the OpenAPI generator
// and the MCP adapter. The returned value is shared: do not modify it.
func (r *Resource) Describe() *Description { return &r.desc }

func (r *Resource) describe() {
	d := &r.desc
	d.Table, d.Schema = r.table, r.schema
	described := func(c *column) Column {
		dc := c.Column
		dc.Sortable = orderable(c)
		return dc
	}
	d.Key = described(r.key)
	for _, c := range r.sel {
		d.Columns = append(d.Columns, described(c))
		if r.filterable == nil || r.filterable[c.Name] {
			d.FilterColumns = append(d.FilterColumns, described(c))
		}
	}
	for _, c := range r.cols {
		d.AllColumns = append(d.AllColumns, described(c))
	}
	d.Row = rowSchema(r.sel, false)
	d.DefaultLimit, d.MaxLimit, d.MaxBodyBytes = r.defaultLimit, r.maxLimit, r.maxBody
	itemPath := "/{" + r.key.Name + "}"
	for _, op := range crud {
		if !r.ops[op] {
			continue
		}
		oi := OperationInfo{Operation: op, ID: r.OperationID(op), Method: op.Method(), Item: op.Item(),
			Path: "/", Permission: r.perms[op], Status: http.StatusOK, Output: d.Row}
		if op.Item() {
			oi.Path = itemPath
		}
		oi.Hooked = r.hooks.run(op)
		oi.CustomRepository = r.opts.Repository != nil
		switch op {
		case OpCreate:
			oi.Status = http.StatusCreated
			oi.Input = r.bodySchema(op)
		case OpUpdate:
			oi.Input = r.bodySchema(op)
		case OpDelete:
			oi.Status, oi.Output = http.StatusNoContent, nil
		}
		if s, ok := r.opts.Output[op]; ok {
			oi.Output = s
		}
		d.Operations = append(d.Operations, oi)
	}
	for _, name := range r.actionNames {
		ba := r.actions[name]
		a := ba.Action
		out := a.Output
		switch a.rowOutput {
		case rowJSONType:
			out = d.Row
		case rowsType:
			out = rowsSchema(d.Row)
		}
		d.Operations = append(d.Operations, OperationInfo{Operation: Operation(name), ID: r.OperationID(Operation(name)),
			Method: a.Method, Path: ba.docPath, Item: ba.item, Status: a.Status, Permission: a.Permission,
			Input: a.Input, Query: a.Query, Output: out, Action: a})
	}
}

// followNullability returns a copy of a body schema in which no property
// naming a NOT NULL column admits null: a schema built from a Go struct of
// pointers (optional fields) would otherwise let {"done": null} pass
// validation only for Postgres to refuse it. Omitting the property stays
// allowed where the schema allows it.
func (r *Resource) followNullability(s *jsonschema.Schema) *jsonschema.Schema {
	if s == nil || len(s.Properties) == 0 {
		return s
	}
	s = s.CloneSchemas()
	for name, p := range s.Properties {
		c, ok := r.byName[name]
		if !ok || !c.NotNull || p == nil {
			continue
		}
		if p.Type == "null" {
			p.Type = ""
			p.Not = &jsonschema.Schema{} // only null was allowed: nothing is
			continue
		}
		if len(p.Types) > 0 {
			var keep []string
			for _, t := range p.Types {
				if t != "null" {
					keep = append(keep, t)
				}
			}
			if len(keep) == 1 {
				p.Type, p.Types = keep[0], nil
			} else {
				p.Types = keep
			}
		}
		for _, alts := range [][]*jsonschema.Schema{p.AnyOf, p.OneOf} {
			for i, a := range alts {
				if a != nil && a.Type == "null" && len(a.Types) == 0 {
					alts[i] = &jsonschema.Schema{Not: &jsonschema.Schema{}}
				}
			}
		}
	}
	return s
}

// bodySchema is the documented body schema of create or update: the
// configured input schema, else one derived from the writable columns.
func (r *Resource) bodySchema(op Operation) *jsonschema.Schema {
	if s, ok := r.opts.Input[op]; ok {
		return s
	}
	var w []*column
	for _, c := range r.cols {
		if c.ReadOnly || (op == OpUpdate && c == r.key) {
			continue
		}
		w = append(w, c)
	}
	s := rowSchema(w, true)
	if op == OpCreate {
		s.Required = nil
		for _, c := range w {
			if c.NotNull && !c.HasDefault {
				s.Required = append(s.Required, c.Name)
			}
		}
	} else {
		s.Required = nil
	}
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return s
}
