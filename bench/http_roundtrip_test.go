package bench

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// rtCounter counts Postgres round trips two ways: the pgx calls that each
// cost one round trip (tracer: Query/QueryRow/Exec, SendBatch, Prepare)
// and, on the wire, the turns of the conversation (a client write after a
// read from the server), which also sees the Prepare round trip pgx runs
// inside SendBatch for a statement not yet in its cache.
type rtCounter struct {
	pgtest.RoundTrips
	wire atomic.Int64
}

func (c *rtCounter) reset() { c.Reset(); c.wire.Store(0) }

// dial wraps each connection to count the client's turns.
func (c *rtCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &turnConn{Conn: conn, c: c}
	tc.read.Store(true)
	return tc, nil
}

type turnConn struct {
	net.Conn
	c    *rtCounter
	read atomic.Bool // the server spoke since the client last wrote
}

func (t *turnConn) Write(p []byte) (int, error) {
	if t.read.Swap(false) {
		t.c.wire.Add(1)
	}
	return t.Conn.Write(p)
}

func (t *turnConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if n > 0 {
		t.read.Store(true)
	}
	return n, err
}

// countingFixture is the http fixture over a one-connection pool whose
// round trips are counted.
func countingFixture(t *testing.T) (*httpFixture, *rtCounter) {
	t.Helper()
	base := setupItems(t)
	rt := &rtCounter{}
	cfg := base.Config() // a copy
	cfg.MaxConns, cfg.MinConns = 1, 0
	cfg.ConnConfig.Tracer = rt
	cfg.ConnConfig.DialFunc = rt.dial
	// No liveness ping on acquire: it would be a round trip of its own
	// on a slow (-race) run.
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return newHTTPFixture(t, pool), rt
}

func serve(t *testing.T, h http.Handler, token, target string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", target, rec.Code, rec.Body)
	}
	return rec
}

// TestHTTPRoundTrips guards the one-round-trip promise of DESIGN
// ("Postgres round trips per get/list without hooks: 1"): after warm-up a
// tablegate GET /{id} and a list each cost exactly one round trip, counted
// by a pgx tracer and on the wire. The PostgREST-style server is the
// positive control: the counters must see its four round trips.
func TestHTTPRoundTrips(t *testing.T) {
	fx, rt := countingFixture(t)
	cases := []struct {
		name   string
		h      http.Handler
		target string
		want   int64
	}{
		{"tablegate get", fx.tablegate, "/items/42", 1},
		{"tablegate list", fx.tablegate, "/items/", 1},
		{"tablegate list limit", fx.tablegate, "/items/?limit=10", 1},
		{"floor get", fx.floor, "/items/42", 1},
		{"floor list", fx.floor, "/items/", 1},
		{"postgrest get", fx.postgrest, "/items/42", 4},
		{"postgrest list", fx.postgrest, "/items/", 4},
	}
	const n = 5
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			serve(t, tc.h, fx.token, tc.target) // warm-up: token memo, prepared statements
			rt.reset()
			for range n {
				serve(t, tc.h, fx.token, tc.target)
			}
			if got := rt.Total(); got != n*tc.want {
				t.Errorf("pgx tracer: %d round trips for %d requests, want %d each", got, n, tc.want)
			}
			if got := rt.wire.Load(); got != n*tc.want {
				t.Errorf("wire: %d round trips for %d requests, want %d each", got, n, tc.want)
			}
		})
	}
}

// TestHTTPServersAgree checks that the floor and PostgREST-style servers do
// the work tablegate does: the same rows for a get, the same page (50
// items, a next_cursor) for a list, the same 404 for a row RLS hides.
func TestHTTPServersAgree(t *testing.T) {
	pool := setupItems(t)
	if _, err := pool.Exec(context.Background(),
		`delete from items where id > 100;
		 insert into items values (101, '11111111-1111-4111-8111-111111111111', e'quoted "title",\n\\ [x]', true);
		 insert into items values (10001, '22222222-2222-4222-8222-222222222222', 'hidden', false)`); err != nil {
		t.Fatal(err)
	}
	fx := newHTTPFixture(t, pool)
	servers := map[string]http.Handler{"floor": fx.floor, "postgrest": fx.postgrest}
	for name, h := range fx.protos {
		servers[name] = h
	}
	raw := func(t *testing.T, rec *httptest.ResponseRecorder) any {
		t.Helper()
		var v any
		if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
			t.Fatalf("%v: %s", err, rec.Body)
		}
		return v
	}
	// decode compares cursors by presence: tablegate's are encrypted with
	// a random nonce, so two servers (or two calls) never agree on bytes.
	decode := func(t *testing.T, rec *httptest.ResponseRecorder) any {
		t.Helper()
		v := raw(t, rec)
		if m, ok := v.(map[string]any); ok {
			if c, ok := m["next_cursor"].(string); ok && c != "" {
				m["next_cursor"] = "<cursor>"
			}
		}
		return v
	}
	next := raw(t, serve(t, fx.tablegate, fx.token, "/items/?limit=3")).(map[string]any)["next_cursor"].(string)
	last := raw(t, serve(t, fx.tablegate, fx.token, "/items/?limit=20&cursor="+next)).(map[string]any)["next_cursor"].(string)
	for _, target := range []string{"/items/42", "/items/101", "/items/", "/items/?limit=3",
		"/items/?limit=20&cursor=" + next, "/items/?limit=1000&cursor=" + last} {
		if strings.Contains(target, "cursor") {
			servers = fx.protos // the raw servers take no cursor
		}
		want := decode(t, serve(t, fx.tablegate, fx.token, target))
		for name, h := range servers {
			if got := decode(t, serve(t, h, fx.token, target)); !reflect.DeepEqual(got, want) {
				t.Errorf("%s GET %s:\n got %v\nwant %v", name, target, got, want)
			}
		}
	}
	page := decode(t, serve(t, fx.tablegate, fx.token, "/items/")).(map[string]any)
	if items := page["items"].([]any); len(items) != benchPage || page["next_cursor"] == nil {
		t.Errorf("tablegate list: %d items, next_cursor %v", len(items), page["next_cursor"])
	}
	for name, h := range map[string]http.Handler{"tablegate": fx.tablegate, "floor": fx.floor, "postgrest": fx.postgrest} {
		req := httptest.NewRequest(http.MethodGet, "/items/10001", nil)
		req.Header.Set("Authorization", "Bearer "+fx.token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s: a row RLS hides answered %d, want 404", name, rec.Code)
		}
	}
}
