package rest

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/tablegate/tablegate/db"
)

// ErrNotFound is returned by a [Repository] when the addressed row does not
// exist or row-level security hides it. The resource answers 404.
var ErrNotFound = errors.New("rest: row not found")

// Repository is the data access of a resource. The table repository built
// by [NewResource] implements it with SQL generated from the introspected
// table; set [Config.Repository] to back a resource with sqlc-generated
// queries instead.
//
// Every method runs on q, the caller-bound transaction or read scope of the
// request: run every statement on it so row-level security applies. Rows
// are returned as JSON objects holding the resource's select columns.
// Errors from Postgres are translated by the resource (DBProblem); return
// [ErrNotFound] for a missing or hidden row. Implementations must be safe
// for concurrent use.
type Repository interface {
	// List returns one page of rows matching lq.
	List(ctx context.Context, q db.Querier, lq *ListQuery) (*RawPage, error)
	// Get returns the row with the key.
	Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error)
	// Create inserts values and returns the new row.
	Create(ctx context.Context, q db.Querier, values Row) (json.RawMessage, error)
	// Update sets values on the row with the key and returns it.
	Update(ctx context.Context, q db.Querier, key any, values Row) (json.RawMessage, error)
	// Delete deletes the row with the key.
	Delete(ctx context.Context, q db.Querier, key any) error
}

// RawPage is one page as a [Repository] returns it.
type RawPage struct {
	// Items are the rows as JSON objects, in order.
	Items []json.RawMessage
	// ItemsJSON, when not nil, holds all items as one JSON array instead
	// of Items (the table repository aggregates the page in Postgres).
	ItemsJSON json.RawMessage
	// Next holds, when more rows follow, the values of the list's order
	// columns in the last item (ListQuery.Order, in order); the resource
	// signs them into next_cursor. Nil on the last page. Values must be
	// JSON-encodable; the table repository uses their text form.
	Next []any
	// Count is the number of rows matching the filters, when ListQuery.Count.
	Count *int64
}

// FilterOp is a PostgREST-style filter operator.
type FilterOp string

// The filter operators of a list query.
const (
	FilterEq    FilterOp = "eq"
	FilterNeq   FilterOp = "neq"
	FilterGt    FilterOp = "gt"
	FilterGte   FilterOp = "gte"
	FilterLt    FilterOp = "lt"
	FilterLte   FilterOp = "lte"
	FilterIn    FilterOp = "in"
	FilterIs    FilterOp = "is"
	FilterLike  FilterOp = "like"
	FilterIlike FilterOp = "ilike"
)

// Filter is one condition of a list query: col=[not.]op.value.
type Filter struct {
	// Column is a selected column.
	Column string
	// Op is the operator.
	Op FilterOp
	// Not negates the condition.
	Not bool
	// Value is the operand (text form; "*" in like patterns already
	// translated to "%"). For is: "null", "true", "false" or "unknown".
	Value string
	// Values are the operands of in.
	Values []string
}

// Nulls places NULLs in an order term.
type Nulls uint8

// NULL placements; NullsDefault follows Postgres (last for asc, first for desc).
const (
	NullsDefault Nulls = iota
	NullsFirst
	NullsLast
)

// OrderTerm is one term of a list order.
type OrderTerm struct {
	Column string
	Desc   bool
	Nulls  Nulls
}

// nullsFirst reports where NULLs sort for this term.
func (o OrderTerm) nullsFirst() bool {
	switch o.Nulls {
	case NullsFirst:
		return true
	case NullsLast:
		return false
	}
	return o.Desc
}

// ListQuery is a parsed, validated list request.
type ListQuery struct {
	// Filters are ANDed.
	Filters []Filter
	// Order always ends with the key column (ascending unless the
	// request ordered by it), so the order is total and keyset
	// pagination is exact.
	Order []OrderTerm
	// Limit is the page size (1..MaxLimit).
	Limit int
	// After holds the order values of the last row of the previous page
	// (from the cursor); nil for the first page.
	After []any
	// Count asks for the number of rows matching Filters (count=exact).
	Count bool

	canon string // filters and order in canonical form; binds cursors
	bind  string // the caller a cursor is sealed to (cursorBinding)
}
