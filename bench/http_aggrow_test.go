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

// aggRowRepo is a measurement prototype, not a proposal of finished code:
// the list of rest's table repository with a cheaper statement, to size a
// fix (see BENCHMARKS.http.md). Instead of row_number() over the page,
// one row_to_json per row through a LATERAL, json_agg(... ORDER BY rn)
// (a sort) and json_build_array of the key, it runs
//
//	SELECT coalesce(json_agg(t), '[]') FROM (SELECT cols ... LIMIT $1 + 1) t
//
// and drops the extra row in Go by scanning the array once for its
// top-level commas; the cursor values come from the last kept item.
// It serves only what the benchmark asks: pages ordered by id, no filters.
type aggRowRepo struct{}

const (
	aggRowFirstSQL = `SELECT coalesce(json_agg(t), '[]') FROM (SELECT t."id",t."owner",t."title",t."done" FROM "public"."items" t ORDER BY t."id" ASC LIMIT $1 + 1) t`
	aggRowAfterSQL = `SELECT coalesce(json_agg(t), '[]') FROM (SELECT t."id",t."owner",t."title",t."done" FROM "public"."items" t WHERE t."id" > $2::text::bigint ORDER BY t."id" ASC LIMIT $1 + 1) t`
	aggRowGetSQL   = `SELECT row_to_json(t) FROM (SELECT t."id",t."owner",t."title",t."done" FROM "public"."items" t WHERE t."id" = $1::text::bigint) t`
)

var errPrototype = errors.New("aggRowRepo: not supported by the prototype")

func (aggRowRepo) List(ctx context.Context, q db.Querier, lq *rest.ListQuery) (*rest.RawPage, error) {
	if len(lq.Filters) > 0 || lq.Count || len(lq.Order) != 1 || lq.Order[0].Column != "id" || lq.Order[0].Desc {
		return nil, errPrototype
	}
	var raw []byte
	var err error
	if lq.After == nil {
		err = q.QueryRow(ctx, aggRowFirstSQL, int64(lq.Limit)).Scan(&raw)
	} else {
		err = q.QueryRow(ctx, aggRowAfterSQL, int64(lq.Limit), fmt.Sprint(lq.After[0])).Scan(&raw)
	}
	if err != nil {
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

func (aggRowRepo) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	var raw []byte
	err := q.QueryRow(ctx, aggRowGetSQL, fmt.Sprint(key)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, rest.ErrNotFound
	}
	return raw, err
}

func (aggRowRepo) Create(context.Context, db.Querier, rest.Row) (json.RawMessage, error) {
	return nil, errPrototype
}

func (aggRowRepo) Update(context.Context, db.Querier, any, rest.Row) (json.RawMessage, error) {
	return nil, errPrototype
}

func (aggRowRepo) Delete(context.Context, db.Querier, any) error { return errPrototype }
