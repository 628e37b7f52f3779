package rest

import (
	"net"
	"sync"
	"testing"
)

// wireCounter counts round trips on the socket: every burst of writes
// that follows a read (or the start) is one round trip.
type wireCounter struct {
	mu        sync.Mutex
	trips     int
	lastWrite bool
}

type countingConn struct {
	net.Conn
	c *wireCounter
}

func (cc *countingConn) Write(b []byte) (int, error) {
	cc.c.mu.Lock()
	if !cc.c.lastWrite {
		cc.c.trips++
		cc.c.lastWrite = true
	}
	cc.c.mu.Unlock()
	return cc.Conn.Write(b)
}

func (cc *countingConn) Read(b []byte) (int, error) {
	n, err := cc.Conn.Read(b)
	cc.c.mu.Lock()
	cc.c.lastWrite = false
	cc.c.mu.Unlock()
	return n, err
}

func (w *wireCounter) get() int { w.mu.Lock(); defer w.mu.Unlock(); return w.trips }
func (w *wireCounter) reset()   { w.mu.Lock(); w.trips = 0; w.mu.Unlock() }

// TestOneRoundTrip proves that get and list without hooks cost one round
// trip to Postgres, counted by a pgx tracer and on the wire.
func TestOneRoundTrip(t *testing.T) {
	t.Parallel()
	seed := setup(t) // fixtures on a fresh database
	seed.exec(`insert into items (grp, score, name) select 1, i, 'x' from generate_series(1, 100) i`)

	b, tr, wc := countingBundle(t, seed)
	s := server(t, "items", b.resource("items", nil))

	cases := []struct {
		name, method, path, body string
		trips                    int
	}{
		{"get", "GET", "/api/items/5", "", 1},
		{"get hidden", "GET", "/api/items/100000", "", 1},
		{"list", "GET", "/api/items?limit=50", "", 1},
		{"list filtered", "GET", "/api/items?score=gt.10&order=score.desc&limit=10", "", 1},
		{"list with count", "GET", "/api/items?score=gt.10&limit=10&count=exact", "", 1},
	}
	for _, c := range cases {
		for i := 0; i < 3; i++ { // warm the connection's statement cache
			do(t, s, c.method, c.path, alice, c.body)
		}
		tr.Reset()
		wc.reset()
		r := do(t, s, c.method, c.path, alice, c.body)
		if r.status != 200 && r.status != 404 {
			t.Fatalf("%s: %s", c.name, r)
		}
		got := wc.get()
		sent := tr.Queries.Load() + tr.Batches.Load()
		t.Logf("%s: %d round trip(s) on the wire; tracer: %d queries, %d batches, %d prepares",
			c.name, got, tr.Queries.Load(), tr.Batches.Load(), tr.Prepares.Load())
		if got != c.trips || sent != 1 || tr.Prepares.Load() != 0 {
			t.Errorf("%s: %d round trips (tracer %d sends, %d prepares), want %d", c.name, got, sent, tr.Prepares.Load(), c.trips)
		}
	}
	// A write without hooks is one round trip too (TestWriteRoundTrips
	// counts writes with hooks).
	ns := server(t, "notes", b.resource("notes", nil))
	for i := 0; i < 3; i++ {
		do(t, ns, "POST", "/api/notes", alice, `{"code":"w`+itoa(i)+`"}`)
	}
	wc.reset()
	if r := do(t, ns, "POST", "/api/notes", alice, `{"code":"last"}`); r.status != 201 {
		t.Fatal(r)
	}
	if got := wc.get(); got != 1 {
		t.Errorf("create: %d round trips, want 1", got)
	}
	// list with a cursor (second page) is one round trip too.
	p := getPage(t, s, "/api/items?limit=10", alice)
	for i := 0; i < 3; i++ {
		getPage(t, s, "/api/items?limit=10&cursor="+*p.NextCursor, alice)
	}
	wc.reset()
	getPage(t, s, "/api/items?limit=10&cursor="+*p.NextCursor, alice)
	if got := wc.get(); got != 1 {
		t.Errorf("cursor page: %d round trips", got)
	}
}
