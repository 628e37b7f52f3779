package rest

import (
	"context"
	"encoding/json"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// countingBundle is b's database behind a one-connection pool whose round
// trips are counted by a pgx tracer and on the wire.
func countingBundle(t *testing.T, b *bundle) (*bundle, *pgtest.RoundTrips, *wireCounter) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(b.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1 // one connection: statement caches warm once
	tr := &pgtest.RoundTrips{}
	cfg.ConnConfig.Tracer = tr
	wc := &wireCounter{}
	dialer := &net.Dialer{}
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, c: wc}, nil
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &bundle{t: t, pool: pool, db: db.New(pool, nil)}, tr, wc
}

// allowAll is an authorizer granting every permission.
type allowAll struct{}

func (allowAll) Authorize(context.Context, *AuthzRequest) (Decision, error) {
	return Decision{Effect: Allow}, nil
}

func (allowAll) AuthorizeRows(_ context.Context, _ *AuthzRequest, rows []Row) ([]Decision, error) {
	ds := make([]Decision, len(rows))
	for i := range ds {
		ds[i] = Decision{Effect: Allow}
	}
	return ds, nil
}

// TestWriteRoundTrips counts Postgres round trips of create, update and
// delete (after the connection's statement cache is warm):
//
//   - no hook and no permission: 1 each — the caller settings and the
//     statement in one round trip, committed as one implicit transaction;
//   - with hooks or a permission, one shared transaction: BEGIN, the
//     settings and the first statement in one round trip, one more per
//     further statement, then COMMIT: create with a Before hook 2, update
//     with an After hook 2, delete with a Before hook or a permission 3
//     (the row is read first for the hook or the authorizer).
func TestWriteRoundTrips(t *testing.T) {
	t.Parallel()
	seed := setup(t)
	b, tr, wc := countingBundle(t, seed)
	ctx := context.Background()

	type step struct {
		name, method, path, body string
		status                   int
	}
	measure := func(t *testing.T, name string, res *Resource, want int) {
		t.Helper()
		s := server(t, "todos", res)
		var ids []string
		create := func() string {
			r := do(t, s, "POST", "/api/todos", alice, `{"title":"round trip"}`)
			if r.status != 201 {
				t.Fatalf("%s: create: %s", name, r)
			}
			var row map[string]any
			if err := json.Unmarshal([]byte(r.body), &row); err != nil {
				t.Fatal(err)
			}
			return row["id"].(string)
		}
		for range 4 {
			ids = append(ids, create())
		}
		steps := func(id string) []step {
			return []step{
				{"create", "POST", "/api/todos", `{"title":"counted"}`, 201},
				{"update", "PATCH", "/api/todos/" + id, `{"done":true}`, 200},
				{"delete", "DELETE", "/api/todos/" + id, "", 204},
			}
		}
		for i := range 3 { // warm every statement
			for _, st := range steps(ids[i]) {
				if r := do(t, s, st.method, st.path, alice, st.body); r.status != st.status {
					t.Fatalf("%s: warm-up %s: %s", name, st.name, r)
				}
			}
		}
		for _, st := range steps(ids[3]) {
			tr.Reset()
			wc.reset()
			if r := do(t, s, st.method, st.path, alice, st.body); r.status != st.status {
				t.Fatalf("%s: %s: %s", name, st.name, r)
			}
			w := want
			if want == 0 { // per operation with hooks: see the doc comment
				w = map[string]int{"create": 2, "update": 2, "delete": 3}[st.name]
			}
			if got := wc.get(); got != w {
				t.Errorf("%s: %s: %d round trips on the wire (tracer: %d queries, %d batches, %d prepares), want %d",
					name, st.name, got, tr.Queries.Load(), tr.Batches.Load(), tr.Prepares.Load(), w)
			}
			if want == 1 && (tr.Batches.Load() != 1 || tr.Queries.Load() != 0 || tr.Prepares.Load() != 0) {
				t.Errorf("%s: %s: tracer %d queries, %d batches, %d prepares; want one batch",
					name, st.name, tr.Queries.Load(), tr.Batches.Load(), tr.Prepares.Load())
			}
		}
	}
	measure(t, "no hooks", b.resource("todos", nil), 1)
	measure(t, "hooks", b.resource("todos", &Config{Hooks: Hooks{
		BeforeCreateFunc: func(_ *Ctx, data Row) (Row, error) { return data, nil },
		AfterUpdateFunc:  func(_ *Ctx, row Row) (any, error) { return row, nil },
		BeforeDeleteFunc: func(*Ctx, *Target) error { return nil },
	}}), 0)
	perms := map[Operation]string{OpCreate: "todos.create", OpUpdate: "todos.update", OpDelete: "todos.delete"}
	s := server(t, "todos", b.resource("todos", &Config{Permissions: perms, Authorizer: allowAll{}}))
	var ids []string
	for range 4 {
		r := do(t, s, "POST", "/api/todos", alice, `{"title":"p"}`)
		var row map[string]any
		_ = json.Unmarshal([]byte(r.body), &row)
		id, _ := row["id"].(string)
		ids = append(ids, id)
	}
	for _, id := range ids[:3] {
		do(t, s, "DELETE", "/api/todos/"+id, alice, "")
	}
	wc.reset()
	if r := do(t, s, "DELETE", "/api/todos/"+ids[3], alice, ""); r.status != 204 {
		t.Fatal(r)
	}
	if got := wc.get(); got != 3 {
		t.Errorf("delete with a permission: %d round trips, want 3 (read the row, delete, COMMIT)", got)
	}
	_ = ctx
}

// TestOneStatementWriteErrors: a write in one round trip answers every
// failure as the same write in a shared transaction does (an insert the
// policy refuses, a check constraint, a unique key checked at the
// statement and a deferred one checked at COMMIT), and leaves nothing
// behind.
func TestOneStatementWriteErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table codes (
	  id int primary key,
	  code text not null check (length(code) <= 5),
	  late text unique deferrable initially deferred);
	grant select, insert, update, delete on codes to authenticated;
	insert into codes values (1, 'a', 'x'), (4, 'd', 'y')`)
	plain := server(t, "codes", b.resource("codes", noRLS()))
	hooked := server(t, "codes", b.resource("codes", &Config{AllowWithoutRLS: true, Hooks: Hooks{
		BeforeCreateFunc: func(_ *Ctx, data Row) (Row, error) { return data, nil },
		BeforeUpdateFunc: func(_ *Ctx, data Row, _ *Target) (Row, error) { return data, nil },
	}}))
	plainTodos := server(t, "todos", b.resource("todos", nil))
	hookedTodos := server(t, "todos", b.resource("todos", &Config{Hooks: Hooks{
		BeforeCreateFunc: func(_ *Ctx, data Row) (Row, error) { return data, nil },
	}}))
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		onTodos                  bool
	}{
		{"policy refuses the insert", "POST", "/api/todos", `{"title":"x","owner_id":"` + bob + `"}`, 403, true},
		{"check constraint", "POST", "/api/codes", `{"id":2,"code":"too long"}`, 0, false},
		{"primary key taken", "POST", "/api/codes", `{"id":1,"code":"b"}`, 409, false},
		{"deferred unique key, at COMMIT", "POST", "/api/codes", `{"id":3,"code":"c","late":"x"}`, 409, false},
		{"deferred unique key on update, at COMMIT", "PATCH", "/api/codes/4", `{"late":"x"}`, 409, false},
	} {
		p, h := plain, hooked
		if tc.onTodos {
			p, h = plainTodos, hookedTodos
		}
		got := do(t, p, tc.method, tc.path, alice, tc.body)
		want := do(t, h, tc.method, tc.path, alice, tc.body)
		if got.status != want.status || problemCode(got.body) != problemCode(want.body) {
			t.Errorf("%s: one round trip %d %s, shared transaction %d %s", tc.name, got.status, got.body, want.status, want.body)
		}
		if tc.status != 0 && got.status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, got.status, got.body, tc.status)
		}
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), `select count(*) from codes where id not in (1, 4) or late is distinct from (case id when 1 then 'x' else 'y' end)`).Scan(&n); err != nil || n != 0 {
		t.Errorf("failed writes left %d rows (%v)", n, err)
	}
}

// problemCode returns the code member of a problem body, or "".
func problemCode(body string) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal([]byte(body), &p)
	return p.Code
}
