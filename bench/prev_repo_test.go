package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// prevRepo is rest's table repository for the realistic fixture's
// public.todos as it was before rows were rendered in Go (main at 33f9aac),
// kept to measure before and after in one run: GET renders the row with
// json_build_object, the list aggregates the page with json_agg over an
// ordered, limited sub-select, the cursor values of the limit-th row come
// as text, and the extra row is cut from the array in Go. It serves what
// BenchmarkHTTPRealistic asks: get by id, first pages ordered by id.
type prevRepo struct{}

const (
	prevGetSQL = `SELECT json_build_object('id',t."id",'tenant_id',t."tenant_id",'owner_id',t."owner_id",'title',t."title",'done',t."done",'created_at',t."created_at") FROM "public"."todos" t WHERE t."id" = $1::text::bigint`
	// prevListSQL takes the page size as %[1]d and the page size + 1 as %[2]d.
	prevListSQL = `SELECT coalesce(json_agg(t.*), '[]'), (array_agg(ARRAY[t."id"::text]))[%[1]d:%[1]d] FROM (SELECT t."id",t."tenant_id",t."owner_id",t."title",t."done",t."created_at" FROM "public"."todos" t ORDER BY t."id" ASC NULLS LAST LIMIT %[2]d) t`
)

var errPrev = errors.New("prevRepo: not supported")

func (prevRepo) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	var raw []byte
	err := q.QueryRow(ctx, prevGetSQL, fmt.Sprint(key)).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, rest.ErrNotFound
	}
	return raw, err
}

func (prevRepo) List(ctx context.Context, q db.Querier, lq *rest.ListQuery) (*rest.RawPage, error) {
	if len(lq.Filters) > 0 || lq.Count || lq.After != nil || len(lq.Order) != 1 || lq.Order[0].Column != "id" || lq.Order[0].Desc {
		return nil, errPrev
	}
	var items []byte
	var last []*string
	if err := q.QueryRow(ctx, fmt.Sprintf(prevListSQL, lq.Limit, lq.Limit+1)).Scan(&items, &last); err != nil {
		return nil, err
	}
	page := &rest.RawPage{ItemsJSON: items}
	if _, cut := arrayElement(items, lq.Limit); cut >= 0 {
		page.ItemsJSON = append(items[:cut], ']')
		page.Next = []any{*last[0]}
	}
	return page, nil
}

func (prevRepo) Create(context.Context, db.Querier, rest.Row) (json.RawMessage, error) {
	return nil, errPrev
}

func (prevRepo) Update(context.Context, db.Querier, any, rest.Row) (json.RawMessage, error) {
	return nil, errPrev
}

func (prevRepo) Delete(context.Context, db.Querier, any) error { return errPrev }
