package todos

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/examples/todos/todosql"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Repository serves the todos resource from sqlc-generated queries. Every
// query runs on the caller-bound Querier the resource passes in, so
// row-level security applies exactly as for the table repository.
type Repository struct{ q *todosql.Queries }

var _ rest.Repository = (*Repository)(nil)

func notFound(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return rest.ErrNotFound
	}
	return err
}

// Get returns one todo.
func (r *Repository) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	t, err := r.q.TodoGet(ctx, q, key.(string))
	if err != nil {
		return nil, notFound(err)
	}
	return json.Marshal(t)
}

// List supports the filter done=eq.true|false and the default order (by
// id) with cursors; anything else answers 400.
func (r *Repository) List(ctx context.Context, q db.Querier, lq *rest.ListQuery) (*rest.RawPage, error) {
	var arg todosql.TodoListParams
	for _, f := range lq.Filters {
		if f.Column != "done" || f.Op != rest.FilterEq || f.Not || (f.Value != "true" && f.Value != "false") {
			return nil, problem.New(problem.KindBadRequest, "This list filters on done=eq.true or done=eq.false only.")
		}
		v := f.Value == "true"
		arg.Done = &v
	}
	if len(lq.Order) != 1 || lq.Order[0].Desc || lq.Count {
		return nil, problem.New(problem.KindBadRequest, "This list is ordered by id only and does not count.")
	}
	if lq.After != nil {
		after, _ := lq.After[0].(string)
		arg.After = &after
	}
	arg.Lim = int32(lq.Limit + 1)
	todos, err := r.q.TodoList(ctx, q, arg)
	if err != nil {
		return nil, err
	}
	page := &rest.RawPage{}
	for i, t := range todos {
		if i == lq.Limit {
			page.Next = []any{todos[i-1].ID}
			break
		}
		b, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		page.Items = append(page.Items, b)
	}
	return page, nil
}

// Create inserts a todo; tenant and owner come from the caller's claims
// (column defaults), never from the body.
func (r *Repository) Create(ctx context.Context, q db.Querier, values rest.Row) (json.RawMessage, error) {
	title, _ := values["title"].(string)
	t, err := r.q.TodoCreate(ctx, q, title)
	if err != nil {
		return nil, err
	}
	return json.Marshal(t)
}

// Update sets title and/or done.
func (r *Repository) Update(ctx context.Context, q db.Querier, key any, values rest.Row) (json.RawMessage, error) {
	arg := todosql.TodoUpdateParams{ID: key.(string)}
	if v, ok := values["title"].(string); ok {
		arg.Title = &v
	}
	if v, ok := values["done"].(bool); ok {
		arg.Done = &v
	}
	t, err := r.q.TodoUpdate(ctx, q, arg)
	if err != nil {
		return nil, notFound(err)
	}
	return json.Marshal(t)
}

// Delete deletes a todo.
func (r *Repository) Delete(ctx context.Context, q db.Querier, key any) error {
	n, err := r.q.TodoDelete(ctx, q, key.(string))
	if err != nil {
		return err
	}
	if n == 0 {
		return rest.ErrNotFound
	}
	return nil
}
