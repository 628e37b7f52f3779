package events_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/rest"
)

// doneHidingRepo serves todos through a custom repository that hides the
// done rows and the title column, as a sqlc-backed repository may.
type doneHidingRepo struct{}

func (doneHidingRepo) List(ctx context.Context, q db.Querier, lq *rest.ListQuery) (*rest.RawPage, error) {
	var items json.RawMessage
	err := q.QueryRow(ctx, `select coalesce(json_agg(json_build_object('id', id)), '[]') from todos where not done`).Scan(&items)
	return &rest.RawPage{ItemsJSON: items}, err
}

func (doneHidingRepo) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	var row json.RawMessage
	err := q.QueryRow(ctx, `select json_build_object('id', id) from todos where id = $1 and not done`, key).Scan(&row)
	return row, err
}

func (doneHidingRepo) Create(ctx context.Context, q db.Querier, v rest.Row) (json.RawMessage, error) {
	return nil, rest.ErrNotFound
}

func (doneHidingRepo) Update(ctx context.Context, q db.Querier, key any, v rest.Row) (json.RawMessage, error) {
	return nil, rest.ErrNotFound
}

func (doneHidingRepo) Delete(ctx context.Context, q db.Querier, key any) error {
	return rest.ErrNotFound
}

// TestCustomRepositoryGuardsStream: a resource whose list and get a custom
// Repository answers may hide rows and columns row-level security shows;
// a stream, which reads the outbox's row images, could not apply that, so
// it is refused like read hooks unless the caller says nothing is hidden.
func TestCustomRepositoryGuardsStream(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	res, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{
		Select:     []string{"id", "tenant_id", "owner_id", "title", "done"},
		Repository: doneHidingRepo{},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := res.Describe().Operation(rest.OpGet); !d.CustomRepository {
		t.Errorf("get answered by a custom repository is not reported CustomRepository")
	}
	if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv}); err == nil ||
		!strings.Contains(err.Error(), "Repository") {
		t.Fatalf("stream of a resource with a custom repository: %v, want an error naming the repository", err)
	}
	if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv, IgnoreReadHooks: true}); err != nil {
		t.Fatalf("with IgnoreReadHooks: %v", err)
	}
}

// TestClosedHubSaysSo: a stream requested after its hub closed (a shutdown
// under way) answers 503 saying so, not that too many streams are open.
func TestClosedHubSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.hub.Close()
	st, body := b.call("GET", "/api/todos/events", b.token(alice, tenantA, false), "")
	if st != 503 || !strings.Contains(body, "shutting down") || strings.Contains(body, "Too many") {
		t.Fatalf("stream of a closed hub: %d %s", st, body)
	}
}
