package rest

import "github.com/google/jsonschema-go/jsonschema"

// Column describes one column of a resource's table, as introspected.
type Column struct {
	// Name is the column name.
	Name string
	// Type is the Postgres type as format_type prints it
	// ("uuid", "timestamp with time zone", "text[]").
	Type string
	// TypeName is pg_type.typname ("uuid", "timestamptz", "_text"),
	// schema-qualified for a type outside pg_catalog ("public.mood", and
	// "_public.mood" for an array of it), so that a type of yours named
	// like a built-in is never taken for it. For a domain it is the
	// domain's base type ("int4" for a domain over integer), and for an
	// array of domains "_" and their base type; Type keeps the domain's
	// name.
	TypeName string
	// NotNull reports a NOT NULL constraint.
	NotNull bool
	// HasDefault reports a default (or identity/generated value).
	HasDefault bool
	// ReadOnly reports a column a body may not set (generated, identity
	// ALWAYS, or listed in Config.ReadOnly).
	ReadOnly bool
	// Selected reports whether the column is in the resource's select list.
	Selected bool
	// Sortable reports whether a list may order by the column (its type
	// has a sort order, and it holds no composite).
	Sortable bool
}

// OperationInfo describes one served operation or action.
type OperationInfo struct {
	// Operation is the CRUD operation or the action name.
	Operation Operation
	// ID is the operation id shared by the OpenAPI and MCP adapters.
	ID string
	// Method is the HTTP method.
	Method string
	// Path is relative to the resource's mount point; the key appears as
	// {<key column>}: "/", "/{id}", "/{id}/complete", "/export".
	Path string
	// Item reports whether the operation addresses one row by key.
	Item bool
	// Status is the success status.
	Status int
	// Permission is the permission key checked by the authorizer, or "".
	Permission string
	// Hooked reports whether Go hooks decide or reshape this CRUD
	// operation's response: Hooks.AuthorizeFunc, or the operation's
	// Before or After hook. Tools that bypass the pipeline (event
	// streams) use it to refuse what they could not apply.
	Hooked bool
	// CustomRepository reports whether a [Config.Repository] answers this
	// operation instead of the table's own statements: its queries may
	// hide rows or columns that row-level security shows. Tools that
	// bypass the pipeline (event streams) use it like Hooked.
	CustomRepository bool
	// Input is the body schema (create, update, actions with input).
	Input *jsonschema.Schema
	// Query is the query parameter schema of an action, if any.
	Query *jsonschema.Schema
	// Output is the response schema: for list the item schema inside the
	// page; nil for 204 responses.
	Output *jsonschema.Schema
	// Action is the action definition; nil for CRUD operations.
	Action *Action
}

// Description is everything a documentation or tool generator needs to
// know about a resource. It is computed once when the resource is built;
// callers must not modify it.
type Description struct {
	// Table is the table name as given to NewResource; Schema is its
	// Postgres schema.
	Table, Schema string
	// Key is the key column.
	Key Column
	// Columns are the selected columns, in select order.
	Columns []Column
	// AllColumns are all columns of the table, in table order.
	AllColumns []Column
	// FilterColumns are the columns a list may filter and order by
	// (Config.FilterColumns; all of Columns by default). Read it with
	// [Description.Filterable].
	FilterColumns []Column
	// Row is the JSON Schema of a row (the selected columns).
	Row *jsonschema.Schema
	// Operations are the served CRUD operations (route order), then the
	// actions ordered by name.
	Operations []OperationInfo
	// DefaultLimit and MaxLimit are the list page size limits.
	DefaultLimit, MaxLimit int
	// MaxBodyBytes is the body limit.
	MaxBodyBytes int64
	// WithoutRLS reports a resource built with [Config.AllowWithoutRLS]
	// over a table or view that row-level security does not protect:
	// every caller its grants admit reads (and writes) every row.
	// WithoutRLSReason says why, in a sentence without a final period.
	WithoutRLS       bool
	WithoutRLSReason string
}

// Filterable returns the columns a list may filter and order by:
// FilterColumns, or Columns when FilterColumns is nil.
func (d *Description) Filterable() []Column {
	if d.FilterColumns != nil {
		return d.FilterColumns
	}
	return d.Columns
}

// Operation returns the info of an operation or action by name.
func (d *Description) Operation(op Operation) (OperationInfo, bool) {
	for _, o := range d.Operations {
		if o.Operation == op {
			return o, true
		}
	}
	return OperationInfo{}, false
}
