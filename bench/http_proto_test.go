package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// protoRepo is a measurement prototype, not finished code: rest's table
// repository for the items table with the list statement changed, to size
// two fixes (see BENCHMARKS.http.md) without touching package rest.
//
//   - protoTGLiteral: tablegate's own list statement with the page size
//     written into the SQL as an integer literal instead of $1. With $1 in
//     LIMIT, Postgres judges the generic plan worse than a custom one and
//     plans the statement again on every execution (pg_prepared_statements
//     shows custom_plans only).
//   - protoAgg: instead of row_number() over the page, row_to_json per row
//     through a LATERAL, json_agg(... ORDER BY rn) (a sort) and
//     json_build_array of the key,
//     SELECT coalesce(json_agg(t), '[]') FROM (SELECT cols ... LIMIT n + 1) t
//     and the extra row is dropped in Go by one scan of the array for its
//     top-level commas; the cursor values come from the last kept item.
//   - protoAggLiteral: both.
//
// It serves only what the benchmark asks: pages ordered by id, no filters.
type protoRepo struct{ mode protoMode }

type protoMode int

const (
	protoTGLiteral protoMode = iota
	protoAgg
	protoAggLiteral
)

var errPrototype = errors.New("protoRepo: not supported by the prototype")

// listSQL returns the statement and its arguments for a page.
func (p protoRepo) listSQL(lq *rest.ListQuery) (string, []any) {
	var args []any
	limit := strconv.Itoa(lq.Limit)
	if p.mode == protoAgg {
		args = append(args, int64(lq.Limit))
		limit = "$1"
	}
	where := ""
	if lq.After != nil {
		args = append(args, fmt.Sprint(lq.After[0]))
		where = ` WHERE (t."id") > ($` + strconv.Itoa(len(args)) + `::text::bigint)`
	}
	if p.mode == protoTGLiteral {
		return `SELECT coalesce(json_agg(_tg_p._tg_json ORDER BY _tg_p._tg_rn) FILTER (WHERE _tg_p._tg_rn <= ` + limit +
			`), '[]'), (json_agg(_tg_p._tg_key) FILTER (WHERE _tg_p._tg_rn = ` + limit + `))->0, count(*) ` +
			`FROM (SELECT row_number() OVER (ORDER BY t."id" ASC NULLS LAST) AS _tg_rn, row_to_json(_tg_row.*) AS _tg_json, ` +
			`json_build_array(t."id"::text) AS _tg_key FROM (SELECT t."id",t."owner",t."title",t."done" FROM "public"."items" t` +
			where + ` ORDER BY t."id" ASC NULLS LAST LIMIT ` + limit + ` + 1) t, ` +
			`LATERAL (SELECT t."id",t."owner",t."title",t."done") _tg_row) _tg_p`, args
	}
	return `SELECT coalesce(json_agg(t), '[]') FROM (SELECT t."id",t."owner",t."title",t."done" FROM "public"."items" t` +
		where + ` ORDER BY t."id" ASC LIMIT ` + limit + ` + 1) t`, args
}

func (p protoRepo) List(ctx context.Context, q db.Querier, lq *rest.ListQuery) (*rest.RawPage, error) {
	if len(lq.Filters) > 0 || lq.Count || len(lq.Order) != 1 || lq.Order[0].Column != "id" || lq.Order[0].Desc {
		return nil, errPrototype
	}
	sql, args := p.listSQL(lq)
	if p.mode == protoTGLiteral { // as rest/table_repository.go reads it
		var items, last []byte
		var n int64
		if err := q.QueryRow(ctx, sql, args...).Scan(&items, &last, &n); err != nil {
			return nil, err
		}
		page := &rest.RawPage{ItemsJSON: items}
		if n > int64(lq.Limit) && last != nil {
			if err := json.Unmarshal(last, &page.Next); err != nil {
				return nil, fmt.Errorf("decode cursor values: %w", err)
			}
		}
		return page, nil
	}
	var raw []byte
	if err := q.QueryRow(ctx, sql, args...).Scan(&raw); err != nil {
		return nil, err
	}
	page := &rest.RawPage{ItemsJSON: raw}
	start, cut := arrayElement(raw, lq.Limit)
	if cut < 0 { // no extra row: the last page
		return page, nil
	}
	// Keep the first Limit items; the cursor holds the last one's order
	// values in text form, as the table repository's cursors do.
	var last map[string]json.RawMessage
	if err := json.Unmarshal(raw[start:cut], &last); err != nil {
		return nil, fmt.Errorf("decode last item: %w", err)
	}
	page.ItemsJSON = append(raw[:cut], ']')
	page.Next = make([]any, len(lq.Order))
	for i, o := range lq.Order {
		v := last[o.Column]
		if s, err := strconv.Unquote(string(v)); err == nil {
			page.Next[i] = s
		} else {
			page.Next[i] = string(v)
		}
	}
	return page, nil
}

// arrayElement returns the bounds of the n-th element (1-based) of a JSON
// array when an (n+1)-th follows: start of the element and the offset of
// the comma after it. cut is -1 when the array has n elements or fewer.
func arrayElement(a []byte, n int) (start, cut int) {
	depth, k := 0, 1
	inStr, esc := false, false
	start = 1
	for i, c := range a {
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == ',' && depth == 1:
			if k == n {
				return start, i
			}
			k++
			start = i + 1
		}
	}
	return 0, -1
}

const protoGetSQL = `SELECT json_build_object('id',t."id",'owner',t."owner",'title',t."title",'done',t."done") FROM "public"."items" t WHERE t."id" = $1::text::bigint`

func (protoRepo) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	var raw []byte
	err := q.QueryRow(ctx, protoGetSQL, fmt.Sprint(key)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, rest.ErrNotFound
	}
	return raw, err
}

func (protoRepo) Create(context.Context, db.Querier, rest.Row) (json.RawMessage, error) {
	return nil, errPrototype
}

func (protoRepo) Update(context.Context, db.Querier, any, rest.Row) (json.RawMessage, error) {
	return nil, errPrototype
}

func (protoRepo) Delete(context.Context, db.Querier, any) error { return errPrototype }
