package dataapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

// TestReplicaReadYourOwnWrites: on a primary with a streaming replica
// that replays commits 5 s late, the data API's writes (insert, update,
// a volatile function) answer Tablegate-Position, and the same caller's
// reads (tables, read-only functions) carrying it — as the header or,
// for a cookie session, the cookie — see the write at once (from the
// primary); reads without a position are served by the replica. A bad
// header answers 400; a rolled-back write answers no position; another
// user carrying the position sees nothing of the write.
func TestReplicaReadYourOwnWrites(t *testing.T) {
	rep := pgtest.StartReplicated(t)
	primary := pgtest.Pool(t, rep.PrimaryURL)
	ctx := context.Background()
	if _, err := primary.Exec(ctx, fixtureSQL+rpcFixtureSQL); err != nil {
		t.Fatal(err)
	}
	replica := pgtest.Pool(t, rep.ReplicaURL)
	d := db.New(primary, &db.Config{Replicas: []*pgxpool.Pool{replica}, ReplicaPoll: 10 * time.Millisecond, ReplicaWait: 2 * time.Millisecond})
	t.Cleanup(d.Close)
	// The replica has replayed the fixture and is in rotation.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := replica.QueryRow(ctx, "select count(*) from pg_proc where proname = 'add_todo'").Scan(&n)
		if err == nil && n == 1 && d.ReplicaStats().Replicas[0].InRotation {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not replay the fixture or enter the rotation: %v %+v", err, d.ReplicaStats())
		}
		// sleep: the poll step of the bounded wait for the replica to replay the fixture
		time.Sleep(5 * time.Millisecond)
	}
	if err := rep.Replica.SetApplyDelay(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	for {
		var v string
		if err := replica.QueryRow(ctx, "show recovery_min_apply_delay").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v == "5s" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recovery_min_apply_delay is %s", v)
		}
		time.Sleep(5 * time.Millisecond) // sleep: the poll step of the bounded wait for the apply delay to take effect
	}
	b := &bundle{t: t, pool: primary, db: d}
	api, err := New(ctx, &Config{DB: d, Caller: testCaller})
	if err != nil {
		t.Fatal(err)
	}
	b.api = api
	mux := http.NewServeMux()
	// X-Test-Cookie marks the caller as signed in by a session cookie, as
	// authctx's middleware does.
	mux.Handle("/rest/v1/", http.StripPrefix("/rest/v1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Cookie") != "" {
			r = r.WithContext(authctx.WithResult(r.Context(), authctx.Result{Source: authctx.SourceCookie}))
		}
		api.ServeHTTP(w, r)
	})))
	b.srv = httptest.NewServer(mux)
	t.Cleanup(b.srv.Close)

	replicaReads := func() uint64 { return d.ReplicaStats().Replicas[0].Reads }
	position := func(what string, r resp) string {
		t.Helper()
		p := r.header.Get(rest.PositionHeader)
		if _, err := db.ParsePosition(p); err != nil {
			t.Fatalf("%s: status %d, %s %q: %v (%s)", what, r.status, rest.PositionHeader, p, err, r.body)
		}
		return p
	}

	// Insert, then read it back at once with the position.
	r := b.do("POST", "/todos", alice, `{"title":"fresh","slug":"f"}`)
	if r.status != 201 {
		t.Fatalf("insert: %d %s", r.status, r.body)
	}
	pos := position("insert", r)
	before := replicaReads()
	r = b.do("GET", "/todos?select=title", alice, "", rest.PositionHeader+": "+pos)
	if r.status != 200 || r.body != `[{"title":"fresh"}]` {
		t.Errorf("read after insert with the position: %d %s", r.status, r.body)
	}
	if replicaReads() != before {
		t.Errorf("a read carrying a position the replica has not replayed ran on it")
	}
	// Without a position the replica serves the read.
	r = b.do("GET", "/todos?select=title", alice, "")
	if r.status != 200 || replicaReads() != before+1 {
		t.Errorf("read without a position: %d %s, replica reads %d → %d", r.status, r.body, before, replicaReads())
	}
	// Another user carrying the position sees nothing of alice's.
	r = b.do("GET", "/todos?select=title", bob, "", rest.PositionHeader+": "+pos)
	if r.status != 200 || r.body != "[]" {
		t.Errorf("bob with alice's position: %d %s", r.status, r.body)
	}
	// Update, then read.
	r = b.do("PATCH", "/todos?slug=eq.f", alice, `{"title":"changed"}`)
	pos = position("update", r)
	r = b.do("GET", "/todos?select=title&slug=eq.f", alice, "", rest.PositionHeader+": "+pos)
	if r.status != 200 || r.body != `[{"title":"changed"}]` {
		t.Errorf("read after update: %d %s", r.status, r.body)
	}
	// A volatile function writes; a read-only call with the position sees it.
	r = b.do("POST", "/rpc/add_todo", alice, `{"title":"by rpc"}`, "Prefer: params=single-object")
	pos = position("volatile rpc", r)
	r = b.do("POST", "/rpc/my_todos?select=title", alice, `{"like":"by%"}`, "Prefer: params=single-object", rest.PositionHeader+": "+pos)
	if r.status != 200 || r.body != `[{"title":"by rpc"}]` || r.header.Get(rest.PositionHeader) != "" {
		t.Errorf("stable rpc after a volatile one: %d %s", r.status, r.body)
	}
	before = replicaReads()
	r = b.do("GET", "/rpc/add?a=2&b=3", alice, "")
	if r.status != 200 || r.body != "5" || replicaReads() != before+1 {
		t.Errorf("GET rpc without a position: %d %s (replica reads %d → %d)", r.status, r.body, before, replicaReads())
	}
	// A write of a stable function through a volatile one is refused on the
	// replica and on the primary alike.
	r = b.do("POST", "/rpc/stable_touch", alice, ``)
	if r.status != http.StatusMethodNotAllowed || !strings.Contains(r.body, "25006") {
		t.Errorf("read-only write: %d %s", r.status, r.body)
	}
	// A cookie session gets the position as a cookie and reads with it.
	r = b.do("POST", "/todos", alice, `{"title":"cookie"}`, "X-Test-Cookie: 1")
	var cookie *http.Cookie
	for _, c := range (&http.Response{Header: r.header}).Cookies() {
		if c.Name == rest.PositionCookie {
			cookie = c
		}
	}
	if r.status != 201 || cookie == nil || !cookie.HttpOnly || cookie.MaxAge != rest.PositionCookieMaxAge {
		t.Fatalf("cookie session write: %d %v %s", r.status, r.header, r.body)
	}
	r = b.do("GET", "/todos?select=title&title=eq.cookie", alice, "", "Cookie: "+rest.PositionCookie+"="+cookie.Value)
	if r.status != 200 || r.body != `[{"title":"cookie"}]` {
		t.Errorf("read with the position cookie: %d %s", r.status, r.body)
	}
	// A Bearer caller gets no cookie.
	r = b.do("POST", "/todos", alice, `{"title":"bearer"}`)
	if strings.Contains(strings.Join(r.header.Values("Set-Cookie"), ";"), rest.PositionCookie) {
		t.Errorf("a Bearer write set the position cookie: %v", r.header)
	}
	// A rolled-back write answers no position; a refused one neither.
	r = b.do("POST", "/todos", alice, `{"title":"rolled back"}`, "Prefer: tx=rollback")
	if r.status != 201 || r.header.Get(rest.PositionHeader) != "" {
		t.Errorf("rolled back write: %d %v", r.status, r.header)
	}
	r = b.do("POST", "/todos", alice, `{"title":"dup","slug":"f"}`)
	if r.status != 409 || r.header.Get(rest.PositionHeader) != "" {
		t.Errorf("refused write: %d %v", r.status, r.header)
	}
	// A header that is not a position is the caller's mistake; a bad
	// cookie is ignored.
	r = b.do("GET", "/todos", alice, "", rest.PositionHeader+": nonsense")
	if r.status != 400 || errCode(t, r) != "PGRST100" {
		t.Errorf("bad position header: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/todos?select=title&title=eq.cookie", alice, "", "Cookie: "+rest.PositionCookie+"=nonsense")
	if r.status != 200 {
		t.Errorf("bad position cookie: %d %s", r.status, r.body)
	}
}

// TestNoReplicasNoPosition: without read replicas writes answer no
// Tablegate-Position and a malformed one in a request is not read.
func TestNoReplicasNoPosition(t *testing.T) {
	b := setup(t, nil)
	r := b.do("POST", "/todos", alice, `{"title":"x"}`, rest.PositionHeader+": nonsense")
	if r.status != 201 || r.header.Get(rest.PositionHeader) != "" {
		t.Errorf("write without replicas: %d %v %s", r.status, r.header, r.body)
	}
}
