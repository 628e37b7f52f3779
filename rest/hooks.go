package rest

import (
	"context"
	"net/http"
	"net/url"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// Row is one row or request body as decoded JSON: column name to value.
// Numbers are json.Number, so bigint and numeric values keep every digit.
type Row map[string]any

// Ctx is what hooks, authorizers and action handlers receive: the
// request's transaction, table, HTTP request, caller and operation. It is a context.Context, so it can be passed directly to
// sqlc-generated queries together with DB:
//
//	todo, err := queries.TodoGet(c, c.DB, id)
//
// A Ctx is valid only while the hook runs.
type Ctx struct {
	context.Context
	// DB runs statements in the request's transaction, bound to the
	// caller: row-level security applies.
	DB db.Querier
	// Table is the table the resource serves.
	Table string
	// Request is the HTTP request, nil outside HTTP (e.g. MCP).
	Request *http.Request
	// Auth is the verified caller ([authctx.Auth.Actor] for who acts). Its
	// claims are this request's own copy: changing them changes neither
	// other requests nor the claims the transaction runs with.
	Auth authctx.Auth
	// Operation is the operation or action running.
	Operation Operation
	// Action is the definition of the action running (its Emits,
	// Permission, ...); nil for CRUD operations. Packages that act on an
	// action's declarations, such as events, read it here.
	Action *Action
	// RequestID identifies the request in logs and unexpected-error bodies.
	RequestID string

	res *Resource // for Row and Rows
}

// Target is what an operation addresses: the key, the current row (item
// operations) and the request body.
type Target struct {
	// ID is the parsed key of an item operation or item action (int64 for
	// integer keys, string otherwise); nil for collection operations.
	ID any
	// Data is the request body (create, update, actions); nil otherwise.
	Data Row
	// Query holds the query parameters.
	Query url.Values
	// Row is the current row, fetched under RLS before the authorizer
	// runs, for get, update, delete and item actions; nil otherwise.
	Row Row
}

// Page is a list response: {"items": [...], "next_cursor": ..., "count": n}.
type Page struct {
	// Items are the rows of the page (the select columns).
	Items []Row `json:"items"`
	// NextCursor continues the list after the last row; nil on the last page.
	NextCursor *string `json:"next_cursor"`
	// Count is the number of rows matching the filters, with count=exact.
	Count *int64 `json:"count,omitempty"`
}

// Hooks are the business-logic hooks of a resource, run in the caller's
// transaction: AuthorizeFunc, then Before*, the statement, After*. Every field
// is optional. A hook ends the request by returning an error: a
// *problem.Problem is sent as is; any other error, or a panic, becomes a
// 500 of kind unexpected that reveals nothing internal (logged with its
// request id). A database error from a query a hook ran is "any other
// error" too: return [DBProblem](err) to answer it as the repository would
// (409 conflict, 403 policy refusal, 422 check violation, ...). Hooks run
// after the authorizer, in the request's transaction: an error in an After
// hook rolls the write back.
//
// For list, AuthorizeFunc runs before the query (target without a row) and
// the authorizer's batch check runs on the page it returned.
type Hooks struct {
	// AuthorizeFunc runs before every operation and action, after the
	// authorizer; return an error to deny.
	AuthorizeFunc func(c *Ctx, op Operation, t *Target) error
	// BeforeCreateFunc returns the values to insert.
	BeforeCreateFunc func(c *Ctx, data Row) (Row, error)
	// BeforeUpdateFunc returns the values to update; t.Row is the current row.
	BeforeUpdateFunc func(c *Ctx, data Row, t *Target) (Row, error)
	// BeforeDeleteFunc returns an error to stop the delete.
	BeforeDeleteFunc func(c *Ctx, t *Target) error
	// AfterListFunc returns the list response, e.g. the page with
	// transformed items (describe the item shape in Config.Output[OpList]).
	AfterListFunc func(c *Ctx, page *Page) (any, error)
	// AfterGetFunc returns the get response.
	AfterGetFunc func(c *Ctx, row Row) (any, error)
	// AfterCreateFunc returns the create response.
	AfterCreateFunc func(c *Ctx, row Row) (any, error)
	// AfterUpdateFunc returns the update response.
	AfterUpdateFunc func(c *Ctx, row Row) (any, error)
}

// run reports whether any hook runs for the CRUD operation op:
// AuthorizeFunc, or op's Before or After hook.
func (h *Hooks) run(op Operation) bool {
	if h.AuthorizeFunc != nil {
		return true
	}
	switch op {
	case OpList:
		return h.AfterListFunc != nil
	case OpGet:
		return h.AfterGetFunc != nil
	case OpCreate:
		return h.BeforeCreateFunc != nil || h.AfterCreateFunc != nil
	case OpUpdate:
		return h.BeforeUpdateFunc != nil || h.AfterUpdateFunc != nil
	case OpDelete:
		return h.BeforeDeleteFunc != nil
	}
	return false
}
