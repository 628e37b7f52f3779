package rest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/tablegate/tablegate/db"
)

// item and itemRepo stand in for sqlc-generated code: typed rows, queries
// run on the Querier the resource hands over.
type item struct {
	ID    int64  `json:"id"`
	Grp   int    `json:"grp"`
	Name  string `json:"name"`
	Extra string `json:"extra"`
}

type itemRepo struct{ calls []string }

func (r *itemRepo) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	r.calls = append(r.calls, "get")
	var it item
	err := q.QueryRow(ctx, `select id, grp, name from items where id = $1`, key).Scan(&it.ID, &it.Grp, &it.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	it.Extra = "from repo"
	return json.Marshal(it)
}

func (r *itemRepo) List(ctx context.Context, q db.Querier, lq *ListQuery) (*RawPage, error) {
	r.calls = append(r.calls, "list")
	after := int64(0)
	if lq.After != nil {
		after, _ = strconv.ParseInt(lq.After[0].(string), 10, 64)
	}
	rows, err := q.Query(ctx, `select id, grp, name from items where id > $1 order by id limit $2`, after, lq.Limit+1)
	if err != nil {
		return nil, err
	}
	its, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (item, error) {
		var it item
		err := row.Scan(&it.ID, &it.Grp, &it.Name)
		return it, err
	})
	if err != nil {
		return nil, err
	}
	page := &RawPage{}
	for i, it := range its {
		if i == lq.Limit {
			page.Next = []any{strconv.FormatInt(its[i-1].ID, 10)}
			break
		}
		b, _ := json.Marshal(it)
		page.Items = append(page.Items, b)
	}
	return page, nil
}

func (r *itemRepo) Create(context.Context, db.Querier, Row) (json.RawMessage, error) {
	return nil, errors.New("not used")
}
func (r *itemRepo) Update(context.Context, db.Querier, any, Row) (json.RawMessage, error) {
	return nil, errors.New("not used")
}
func (r *itemRepo) Delete(context.Context, db.Querier, any) error { return errors.New("not used") }

// TestCustomRepository: a resource backed by hand-written (sqlc-style)
// queries keeps routing, key parsing, RLS, cursors and errors.
func TestCustomRepository(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, name) select i, case when i = 3 then 13 else 1 end, 'n' || i from generate_series(1, 5) i`)
	repo := &itemRepo{}
	s := server(t, "items", b.resource("items", &Config{Repository: repo, Operations: []Operation{OpList, OpGet}}))
	r := do(t, s, "GET", "/api/items/2", alice, "")
	if r.status != 200 || r.body != `{"id":2,"grp":1,"name":"n2","extra":"from repo"}` {
		t.Errorf("get: %s", r)
	}
	isProblem(t, do(t, s, "GET", "/api/items/3", alice, ""), 404, "not_found") // RLS hides group 13
	isProblem(t, do(t, s, "GET", "/api/items/x", alice, ""), 400, "bad_request")
	var got []string
	q := "/api/items?limit=2"
	for {
		p := getPage(t, s, q, alice)
		got = append(got, ids(p)...)
		if p.NextCursor == nil {
			break
		}
		q = "/api/items?limit=2&cursor=" + *p.NextCursor
	}
	if len(got) != 4 || got[0] != "1" || got[3] != "5" {
		t.Errorf("walk: %v", got)
	}
}
