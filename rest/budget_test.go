package rest

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// slowFixtureSQL is a table whose read policy costs ~1 ms a row (like a
// membership check that is not inlined): an unindexed filter scans every
// row, about 20 s for the whole table, while a GET by key reads one row.
const slowFixtureSQL = `
create function slow_visible(id int) returns boolean language plpgsql stable as
$$ begin perform pg_sleep(0.001); return true; end $$;
create table big (id int primary key, title text not null);
insert into big select g, 'row ' || g from generate_series(1, 20000) g;
alter table big enable row level security;
grant select on big to authenticated, anon;
create policy big_read on big for select using (slow_visible(id));
`

// budgetBundle sets up the slow table on a pool of two connections with
// tablegate's pool defaults and the given db config.
func budgetBundle(t *testing.T, cfg *db.Config) *bundle {
	t.Helper()
	u := pgtest.URL(t)
	pc, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(pc)
	pc.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), slowFixtureSQL); err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, pool: pool, db: db.New(pool, cfg)}
}

// One signed-in user sends more unindexed list requests than the pool has
// connections. The time budget kills each one (503 with Retry-After, well
// before the ~20 s the scan needs), and a fast GET from another caller,
// sent while the pool is saturated, still answers 200 within its bound.
func TestStarvingListKilledByBudgetWhileGetAnswers(t *testing.T) {
	t.Parallel()
	const budget = 300 * time.Millisecond
	b := budgetBundle(t, &db.Config{StatementTimeout: budget, AcquireTimeout: 3 * time.Second})
	s := server(t, "big", b.resource("big", nil))

	const slow = 4 // twice the pool
	var wg sync.WaitGroup
	results := make([]resp, slow)
	took := make([]time.Duration, slow)
	for i := range slow {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			results[i] = do(t, s, "GET", "/api/big?title=ilike.*zzz*&count=exact", alice, "")
			took[i] = time.Since(start)
		}()
	}
	// The slow lists hold both connections.
	for deadline := time.Now().Add(10 * time.Second); b.pool.Stat().AcquiredConns() < 2; time.Sleep(5 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			t.Fatalf("the slow lists hold %d connections after 10 s, want 2", b.pool.Stat().AcquiredConns())
		}
	}
	start := time.Now()
	g := do(t, s, "GET", "/api/big/7", bob, "")
	getTook := time.Since(start)
	wg.Wait()
	if g.status != http.StatusOK || !strings.Contains(g.body, `"row 7"`) {
		t.Fatalf("GET from another caller: %d %s", g.status, g.body)
	}
	// The GET waits at most for one budget of the slow statements ahead of
	// it (two connections, four lists: two rounds), plus scheduling.
	if getTook > 3*time.Second {
		t.Fatalf("GET from another caller took %v while lists starved the pool, want < 3s", getTook)
	}
	for i, r := range results {
		isProblem(t, r, 503, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("list %d: no Retry-After", i)
		}
		if strings.Contains(r.body, "statement") && strings.Contains(r.body, "select") {
			t.Errorf("list %d leaks SQL: %s", i, r.body)
		}
		if took[i] > 4*time.Second {
			t.Errorf("list %d took %v, want the budget (%v) plus its wait", i, took[i], budget)
		}
	}
	t.Logf("GET answered in %v; lists answered 503 in %v", getTook.Round(time.Millisecond), took)
}

// The budget is configurable per resource and per operation or action: a
// resource-wide budget, and a longer one for one operation.
func TestStatementTimeoutPerResourceAndOperation(t *testing.T) {
	t.Parallel()
	b := budgetBundle(t, &db.Config{StatementTimeout: -1}) // none globally
	tight := server(t, "big", b.resource("big", &Config{StatementTimeout: 200 * time.Millisecond,
		StatementTimeouts: map[Operation]time.Duration{OpGet: 30 * time.Second}}))
	start := time.Now()
	r := do(t, tight, "GET", "/api/big?title=ilike.*zzz*", alice, "")
	isProblem(t, r, 503, "unavailable")
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("resource budget 200ms: the list took %v", d)
	}
	if g := do(t, tight, "GET", "/api/big/3", alice, ""); g.status != 200 {
		t.Fatalf("get under its own budget: %d %s", g.status, g.body)
	}
	var got string
	res := b.resource("big", &Config{StatementTimeouts: map[Operation]time.Duration{OpGet: 1234 * time.Millisecond},
		Hooks: Hooks{AfterGetFunc: func(c *Ctx, row Row) (any, error) {
			return row, c.DB.QueryRow(c, "select current_setting('statement_timeout')").Scan(&got)
		}}})
	if g := do(t, server(t, "big", res), "GET", "/api/big/3", alice, ""); g.status != 200 || got != "1234ms" {
		t.Fatalf("per-operation budget inside a hook: %d, statement_timeout %q", g.status, got)
	}
	if _, err := NewResource(context.Background(), b.db, "big", &Config{
		StatementTimeouts: map[Operation]time.Duration{"nope": time.Second}}); err == nil {
		t.Fatal("a budget for an unknown action must fail the build")
	}
}

// A hook that holds the request's transaction open past the budget (a
// neighbour that hangs) gets no more than the budget: Postgres ends the idle
// transaction, the request answers 503 and its write is never committed.
func TestHookHoldingTransactionOverBudget(t *testing.T) {
	t.Parallel()
	b := budgetBundle(t, &db.Config{StatementTimeout: 250 * time.Millisecond})
	if _, err := b.pool.Exec(context.Background(), `create table jobs (id int primary key, title text not null);
alter table jobs enable row level security;
create policy jobs_all on jobs to authenticated using (true) with check (true);
grant select, insert on jobs to authenticated;`); err != nil {
		t.Fatal(err)
	}
	res := b.resource("jobs", &Config{Hooks: Hooks{AfterCreateFunc: func(c *Ctx, row Row) (any, error) {
		time.Sleep(2 * time.Second) // sleep: the hook is slow on purpose (the insert ran; COMMIT waits for it; idle bound: 1 s at least)
		return row, nil
	}}})
	s := server(t, "jobs", res)
	r := do(t, s, "POST", "/api/jobs", alice, `{"id":1,"title":"late"}`)
	isProblem(t, r, 503, "unavailable")
	if r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "time budget") {
		t.Fatalf("hook over budget: %s %v, want Retry-After and the time budget named", r.body, r.header)
	}
	var n int
	if err := b.pool.QueryRow(context.Background(), "select count(*) from jobs").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows after the ended transaction: %d %v, want 0", n, err)
	}
}

// FilterColumns limits lists to the columns it names: an unindexed filter
// (or order) answers 400 before any statement runs.
func TestFilterColumnsRefuseUnindexedFilters(t *testing.T) {
	t.Parallel()
	b := budgetBundle(t, nil)
	r := b.resource("big", &Config{FilterColumns: []string{"id"}})
	s := server(t, "big", r)
	start := time.Now()
	isProblem(t, do(t, s, "GET", "/api/big?title=ilike.*zzz*", alice, ""), 400, "bad_request")
	isProblem(t, do(t, s, "GET", "/api/big?order=title.desc", alice, ""), 400, "bad_request")
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("refusals took %v: they must not reach the database", d)
	}
	if g := do(t, s, "GET", "/api/big?id=lt.4&order=id.desc", alice, ""); g.status != 200 || !strings.Contains(g.body, `"row 3"`) {
		t.Fatalf("indexed filter: %d %s", g.status, g.body)
	}
	if cols := r.Describe().Filterable(); len(cols) != 1 || cols[0].Name != "id" {
		t.Fatalf("description advertises %v, want only id", cols)
	}
	if _, err := NewResource(context.Background(), b.db, "big", &Config{FilterColumns: []string{"nope"}}); err == nil {
		t.Fatal("an unknown filter column must fail the build")
	}
}

// Errors from ctx.DB inside an action handler or a hook get the same
// translation as the pipeline's own statements: a backend terminated
// mid-handler (57P01, as during a Postgres restart) answers 503 with
// Retry-After, a unique violation raised in a hook 409, and a handler's
// own problem is sent as is.
func TestDatabaseErrorsInHandlersAndHooksAreTranslated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	admin := b.pool
	terminate := DefineAction(ActionDef[None, None, None]{
		Method: http.MethodPost, Path: "/terminate",
		Handler: func(c *Ctx, in ActionInput[None, None]) (None, error) {
			var pid int
			if err := c.DB.QueryRow(c, "select pg_backend_pid()").Scan(&pid); err != nil {
				return None{}, err
			}
			// Postgres restarts: the backend serving this request ends.
			if _, err := admin.Exec(context.Background(), "select pg_terminate_backend($1)", pid); err != nil {
				return None{}, err
			}
			_, err := c.DB.Exec(c, "select 1")
			return None{}, err // the raw pgx error, as a handler would pass it on
		},
	})
	raise := DefineAction(ActionDef[None, None, None]{
		Method: http.MethodPost, Path: "/raise",
		Handler: func(c *Ctx, in ActionInput[None, None]) (None, error) {
			_, err := c.DB.Exec(c, "do $$ begin raise exception 'x' using errcode = '57P01'; end $$")
			return None{}, err
		},
	})
	unique := Hooks{BeforeCreateFunc: func(c *Ctx, values Row) (Row, error) {
		_, err := c.DB.Exec(c, "do $$ begin raise exception 'dup' using errcode = '23505'; end $$")
		return values, err
	}}
	s := server(t, "todos", b.resource("todos", &Config{Hooks: unique,
		Actions: map[string]*Action{"terminate": terminate, "raise": raise}}))
	for _, path := range []string{"/api/todos/terminate", "/api/todos/raise"} {
		r := do(t, s, "POST", path, alice, "")
		isProblem(t, r, 503, "unavailable")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("%s: no Retry-After", path)
		}
	}
	isProblem(t, do(t, s, "POST", "/api/todos", alice, `{"title":"x"}`), 409, "conflict")
}
