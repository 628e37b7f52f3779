package rest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestColumnRetypedWhileServing: a column whose type changes after the
// resource was built (ALTER TABLE … TYPE while the server runs) costs at
// most a couple of retryable answers, never a lasting 500: the resource
// then selects every column through to_json and renders the new types as
// Postgres does. Before, every GET and list answered 500 until a restart
// ("no JSON form for binary values of type 1700").
func TestColumnRetypedWhileServing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table rt (id int8 primary key, v int4, ts timestamptz, n int4);
grant select, insert on rt to authenticated;
insert into rt values (1, 5, '2024-05-01 10:00:00+00', 7);`)
	res := b.resource("rt", noRLS())
	serve := func(method, target, body string) (int, string) {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("X-Test-User", alice)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		res.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	if code, body := serve("GET", "/1", ""); code != http.StatusOK || body != `{"id":1,"v":5,"ts":"2024-05-01T10:00:00+00:00","n":7}` {
		t.Fatalf("before: %d %s", code, body)
	}
	b.exec(`alter table rt alter column v type numeric, alter column ts type timestamp, alter column n type text`)
	want := pgRows(t, b.pool, `select id::text, row_to_json(t)::text from (select id, v, ts, n from rt) t`)["1"]
	for _, c := range []struct{ method, target, body, want string }{
		{"GET", "/1", "", want},
		{"GET", "/?limit=5", "", `"items":[` + want + `]`},
		{"POST", "/", `{"id":2,"v":"2.50","ts":"2024-01-02T03:04:05","n":"x"}`, `{"id":2,"v":2.50,"ts":"2024-01-02T03:04:05","n":"x"}`},
	} {
		var code int
		var body string
		for try := 0; try < 3; try++ {
			if code, body = serve(c.method, c.target, c.body); code < 500 {
				break
			}
			if code != http.StatusServiceUnavailable {
				t.Fatalf("%s %s after the retype: %d %s, want 503 (retry) at worst", c.method, c.target, code, body)
			}
		}
		if code >= 300 || !strings.Contains(body, c.want) {
			t.Fatalf("%s %s after the retype: %d %s, want %s", c.method, c.target, code, body, c.want)
		}
	}
}

// TestNonISODateStyle: a session whose DateStyle is not ISO (ALTER ROLE …
// SET datestyle = 'German') reading through the simple protocol gets
// timestamps as text tablegate cannot parse: one retryable 503, then the
// rows as Postgres's row_to_json renders them. Before, every read of a
// timestamptz column answered 500.
func TestNonISODateStyle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table ds (id int8 primary key, ts timestamptz); grant select on ds to authenticated;
insert into ds values (1, '2024-05-01 10:00:00+00');`)
	cfg := b.pool.Config().Copy()
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["datestyle"] = "German"
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	cfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	res := b.resourceOn(pool, "ds", noRLS())
	want := pgRows(t, pool, "select id::text, row_to_json(t)::text from ds t")["1"]
	var code int
	var body string
	for try := 0; try < 3; try++ {
		req := httptest.NewRequest("GET", "/1", nil)
		req.Header.Set("X-Test-User", alice)
		w := httptest.NewRecorder()
		res.ServeHTTP(w, req)
		if code, body = w.Code, w.Body.String(); code != http.StatusServiceUnavailable {
			break
		}
	}
	if code != http.StatusOK || body != want {
		t.Fatalf("GET under DateStyle German: %d %s, want 200 %s", code, body, want)
	}
}

// TestWriteRendersWhatItWrote: a create or update whose row the resource
// could not render in Go (a session TimeZone Go does not know, a column
// retyped while serving) answers its row the first time. It used to answer
// 503 "try again" after its one-statement transaction had committed, so a
// client that retried as told wrote the row twice.
func TestWriteRendersWhatItWrote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table wr (id int8 generated always as identity primary key, ts timestamptz, v int4);
grant select, insert, update on wr to authenticated;`)
	send := func(res *Resource, method, target, body string) (int, string) {
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set("X-Test-User", alice)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		res.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	count := func() (n int) {
		if err := b.pool.QueryRow(context.Background(), `select count(*) from wr`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// A zone Go cannot load: Postgres's offset, first time.
	res := b.resourceOn(zonePool(t, b.pool, "<+03>-03", pgx.QueryExecModeCacheStatement), "wr", noRLS())
	if code, body := send(res, "POST", "/", `{"ts":"2024-05-01T10:00:00Z","v":1}`); code != http.StatusCreated ||
		!strings.Contains(body, `"ts":"2024-05-01T13:00:00+03:00"`) {
		t.Fatalf("create in an unknown zone: %d %s", code, body)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d rows after one create, want 1", n)
	}
	if code, body := send(res, "PATCH", "/1", `{"v":2}`); code != http.StatusOK || !strings.Contains(body, `"v":2`) {
		t.Fatalf("update in an unknown zone: %d %s", code, body)
	}

	// A column retyped after the resource was built.
	res = b.resource("wr", noRLS())
	b.exec(`alter table wr alter column v type numeric`)
	if code, body := send(res, "POST", "/", `{"v":"2.50"}`); code != http.StatusCreated || !strings.Contains(body, `"v":2.50`) {
		t.Fatalf("create after a retype: %d %s", code, body)
	}
	if n := count(); n != 2 {
		t.Fatalf("%d rows after two creates, want 2", n)
	}
	if code, body := send(res, "PATCH", "/1", `{"v":"3.5"}`); code != http.StatusOK || !strings.Contains(body, `"v":3.5`) {
		t.Fatalf("update after a retype: %d %s", code, body)
	}
}
