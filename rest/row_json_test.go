package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/db"
)

// rowJSONFixture holds a column of every type rendered in Go, beside types
// rendered by to_json, with edge values: control characters and non-ASCII
// text, integer extremes, json spacing, infinite, BC, pre-1900 and
// fractional timestamps, NULLs; and a column name that needs escaping.
const rowJSONFixture = `
create type mood as enum ('ok', 'meh');
create domain short_text as text check (length(value) < 50);
create table rj (
  id int8 primary key, i2 int2, i4 int4, b bool, tx text, vc varchar(20), bp char(3), nm name,
  u uuid, j json, jb jsonb, ts timestamptz,
  n numeric, f8 float8, d date, tsl timestamp, arr int4[], e mood, dom short_text, iv interval, by bytea,
  "we""ird ✓" text
);
grant select, insert on rj to authenticated;
insert into rj values
 (1, 32767, -2147483648, true, E'a\bb\fc\nd\re\tf"g\\h\x01\x1f\x7f é ✓ ` + "\u2028" + ` <&>', 'x', 'a', 'nm',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a" :  [1, 2] }', '{"b": {"c": null}, "a": 1}', '2024-05-01 10:00:00.5+00',
  1.50, 0.1, '2024-05-01', '2024-05-01 10:00:00.25', '{1,NULL,3}', 'meh', 'dom', '1 day 02:00', '\x00ff', 'w'),
 (2, -32768, 2147483647, false, '', '', 'abc', '', '00000000-0000-0000-0000-000000000000', '"s"', '[]', 'infinity',
  'NaN', 'Infinity', 'infinity', '-infinity', '{}', 'ok', '', '-1 mon', '\x', ''),
 (3, 0, 0, null, null, null, null, null, null, 'null', 'null', '-infinity', null, null, null, null, null, null, null, null, null, null),
 (4, null, null, null, null, null, null, null, null, null, null, '0044-03-15 12:00:00.000001+00 BC', null, null, null, null, null, null, null, null, null, null),
 (5, null, null, null, null, null, null, null, null, null, null, '1850-01-01 00:00:00+00', null, null, null, null, null, null, null, null, null, null),
 (6, null, null, null, null, null, null, null, null, null, null, '1999-12-31 23:59:59.999999+00', null, null, null, null, null, null, null, null, null, null),
 (7, null, null, null, null, null, null, null, null, null, null, '12345-06-07 08:09:10.12+00', null, null, null, null, null, null, null, null, null, null),
 (8, null, null, null, null, null, null, null, null, null, null, '2024-07-01 00:00:00+00', null, null, null, null, null, null, null, null, null, null);
insert into rj (id, i4) select g, g from generate_series(100, 104) g;
`

// TestRowJSONMatchesPostgres: every row GET, list and create answer is
// byte for byte Postgres's row_to_json of that row in the same session
// time zone, for binary results (the default) and text results (the
// simple protocol), in zones with minute and second offsets and summer
// time.
func TestRowJSONMatchesPostgres(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(rowJSONFixture)
	for _, tz := range []string{"UTC", "America/New_York", "Asia/Kolkata", "Europe/Amsterdam"} {
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
			t.Run(tz+"/"+mode.String(), func(t *testing.T) {
				pool := zonePool(t, b.pool, tz, mode)
				want := pgRows(t, pool, "select id, row_to_json(t) from rj t order by id")
				res := b.resourceOn(pool, "rj", noRLS())
				var list []json.RawMessage
				for id, row := range want {
					if got := serve(t, res, "GET", "/"+id, ""); got != row {
						t.Errorf("GET /%s\n got %s\nwant %s", id, got, row)
					}
				}
				// count=exact: the page joined to the count (many to_json
				// columns of the same name in the joined sub-select).
				page := serve(t, res, "GET", "/?limit=100&order=id&count=exact", "")
				var p struct {
					Items []json.RawMessage
					Count int
				}
				if err := json.Unmarshal([]byte(page), &p); err != nil {
					t.Fatal(err)
				}
				if p.Count != len(want) {
					t.Errorf("count %d, want %d", p.Count, len(want))
				}
				list = p.Items
				if got := serve(t, res, "GET", "/?i4=eq.-1&count=exact", ""); got != `{"items":[],"next_cursor":null,"count":0}` {
					t.Errorf("empty page with count: %s", got)
				}
				ids := pgRows(t, pool, "select row_number() over (order by id)::text, id::text from rj")
				if len(list) != len(want) {
					t.Fatalf("list of %d rows, want %d", len(list), len(want))
				}
				for i, item := range list {
					id := ids[itoa(i+1)]
					if string(item) != want[id] {
						t.Errorf("list item %d\n got %s\nwant %s", i, item, want[id])
					}
				}
				body := `{"id":` + itoa(1000+len(tz)+int(mode)) + `,"tx":"new\n","ts":"2024-01-02T03:04:05.678+02:00","jb":{"k":[1]},"n":2.50}`
				got := serve(t, res, "POST", "/", body)
				var created struct{ ID json.Number }
				if err := json.Unmarshal([]byte(got), &created); err != nil {
					t.Fatal(got, err)
				}
				row := pgRows(t, pool, "select id, row_to_json(t) from rj t where id = "+created.ID.String())
				if got != row[created.ID.String()] {
					t.Errorf("POST\n got %s\nwant %s", got, row[created.ID.String()])
				}
				b.exec("delete from rj where id = " + created.ID.String())
			})
		}
	}
}

// TestRowJSONUnknownZone: with a session TimeZone Go does not know (a
// POSIX string, or any name when the binary has no time zone data) the
// resource selects every column through to_json from the start, and the
// timestamps carry Postgres's own offset. The first read after every start
// used to answer 503 "The table changed while the server ran".
func TestRowJSONUnknownZone(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(rowJSONFixture)
	pool := zonePool(t, b.pool, "<+03>-03", pgx.QueryExecModeCacheStatement)
	want := pgRows(t, pool, "select id, row_to_json(t) from rj t where id = 1")
	if !strings.Contains(want["1"], `"ts":"2024-05-01T13:00:00.5+03:00"`) {
		t.Fatalf("Postgres renders %s", want["1"])
	}
	res := b.resourceOn(pool, "rj", noRLS())
	if got := serve(t, res, "GET", "/1", ""); got != want["1"] {
		t.Errorf("GET /1 = %s, want %s", got, want["1"])
	}
}

// zonePool opens a pool on the database of base whose sessions run in the
// time zone tz with the query mode.
func zonePool(t *testing.T, base *pgxpool.Pool, tz string, mode pgx.QueryExecMode) *pgxpool.Pool {
	t.Helper()
	cfg := base.Config().Copy()
	cfg.MaxConns = 2
	cfg.ConnConfig.RuntimeParams["timezone"] = tz
	cfg.ConnConfig.DefaultQueryExecMode = mode
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// pgRows maps the first column of sql's rows to the second.
func pgRows(t *testing.T, pool *pgxpool.Pool, sql string) map[string]string {
	t.Helper()
	rows, err := pool.Query(context.Background(), sql, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		m[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (b *bundle) resourceOn(pool *pgxpool.Pool, table string, o *Config) *Resource {
	b.t.Helper()
	if o == nil {
		o = &Config{}
	}
	o.Caller = testCaller
	r, err := NewResource(context.Background(), db.New(pool, nil), table, o)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// serve runs one request through h as alice and insists on a 2xx.
func serve(t *testing.T, h http.Handler, method, target, body string) string {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Test-User", alice)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, target, w.Code, w.Body)
	}
	return w.Body.String()
}

// TestListEmptyPageKeepsCount: a page that comes back empty (its cursor's
// rows deleted meanwhile) still answers count=exact.
func TestListEmptyPageKeepsCount(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (grp, name) select 1, 'n' || g from generate_series(1, 5) g`)
	res := b.resource("items", nil)
	var p struct {
		Items      []json.RawMessage
		NextCursor string `json:"next_cursor"`
		Count      int
	}
	if err := json.Unmarshal([]byte(serve(t, res, "GET", "/?limit=4&order=id&count=exact", "")), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Items) != 4 || p.Count != 5 || p.NextCursor == "" {
		t.Fatalf("first page: %d items, count %d, cursor %q", len(p.Items), p.Count, p.NextCursor)
	}
	b.exec(`delete from items where id = (select max(id) from items)`)
	got := serve(t, res, "GET", "/?limit=4&order=id&count=exact&cursor="+url.QueryEscape(p.NextCursor), "")
	if got != `{"items":[],"next_cursor":null,"count":4}` {
		t.Errorf("empty page: %s", got)
	}
}
