package rest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// RowJSON is one row exactly as the resource renders it for get, create
// and update: the select columns in select order, values in Postgres's
// JSON formats, compact (timestamps with the session's offset, "+00:00"
// in UTC). Read one inside an action with
// [Ctx.Row].
//
// As an action's output type (ActionDef[I, Q, RowJSON]) it is described by
// the resource's row schema, with no schema to write: the OpenAPI document
// references the row component and generated clients type the result like
// a CRUD row.
type RowJSON json.RawMessage

// MarshalJSON returns the row's bytes ("null" for an empty RowJSON).
func (r RowJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of the bytes.
func (r *RowJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// Rows is an action output of rows rendered like list items:
// {"items": [...]}. As an action's output type it is described as an
// array of the resource's row schema. Read rows inside an action with
// [Ctx.Rows].
type Rows struct {
	// Items are the rows, never nil once read by Ctx.Rows.
	Items []RowJSON `json:"items"`
}

var (
	rowJSONType = reflect.TypeFor[RowJSON]()
	rowsType    = reflect.TypeFor[Rows]()
)

// rowsSchema is the output schema of an action returning [Rows].
func rowsSchema(row *jsonschema.Schema) *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:                 "object",
		Required:             []string{"items"},
		Properties:           map[string]*jsonschema.Schema{"items": {Type: "array", Items: row}},
		PropertyOrder:        []string{"items"},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}

// Row reads the row with the given key as the caller sees it (row-level
// security applies: it runs in the action's transaction), rendered exactly
// like GET /{key}. A missing or hidden row is [ErrNotFound], which answers
// 404 when returned from the handler.
func (c *Ctx) Row(key any) (RowJSON, error) {
	if c.res == nil {
		return nil, fmt.Errorf("rest: Ctx.Row outside a resource's request")
	}
	raw, err := c.res.repo.Get(c, c.DB, key)
	if err != nil {
		return nil, err
	}
	return RowJSON(raw), nil
}

// Rows reads one page of rows as the caller sees them, rendered exactly
// like the items of GET /: query is a list query in the same grammar
// ("done=eq.true&order=id.desc&limit=100"; filters name selected columns;
// limit defaults to Config.DefaultLimit and is capped by MaxLimit). A
// malformed query is a 400 problem naming the parameter.
func (c *Ctx) Rows(query string) (Rows, error) {
	if c.res == nil {
		return Rows{}, fmt.Errorf("rest: Ctx.Rows outside a resource's request")
	}
	vals, err := url.ParseQuery(query)
	if err != nil {
		return Rows{}, badQuery("The list query is not URL-encoded.")
	}
	lq, err := c.res.parseList(vals)
	if err != nil {
		return Rows{}, err
	}
	rp, err := c.res.repo.List(c, c.DB, lq)
	if err != nil {
		return Rows{}, err
	}
	out := Rows{Items: make([]RowJSON, 0, len(rp.Items))}
	if rp.ItemsJSON != nil {
		var items []json.RawMessage
		if err := json.Unmarshal(rp.ItemsJSON, &items); err != nil {
			return Rows{}, fmt.Errorf("decode page: %w", err)
		}
		for _, it := range items {
			out.Items = append(out.Items, RowJSON(it))
		}
		return out, nil
	}
	for _, it := range rp.Items {
		out.Items = append(out.Items, RowJSON(it))
	}
	return out, nil
}
