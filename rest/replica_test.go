package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/internal/replicatest"
)

// setupReplicated is setup on a throwaway primary with one streaming
// replica, the DB routing reads to it.
func setupReplicated(t *testing.T, cfg *db.Config) (*bundle, *pgtest.Replicated) {
	t.Helper()
	rep := pgtest.StartReplicated(t)
	primary := pgtest.Pool(t, rep.PrimaryURL)
	if _, err := primary.Exec(context.Background(), fixtureSQL); err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &db.Config{}
	}
	cfg.Replicas = []*pgxpool.Pool{pgtest.Pool(t, rep.ReplicaURL)}
	cfg.ReplicaPoll = 10 * time.Millisecond
	d := db.New(primary, cfg)
	t.Cleanup(d.Close)
	deadline := time.Now().Add(30 * time.Second)
	for !d.ReplicaStats().Replicas[0].InRotation {
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not enter the rotation: %+v", d.ReplicaStats())
		}
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
	}
	return &bundle{t: t, pool: primary, db: d}, rep
}

// withCookieSession marks requests with X-Test-Cookie as resolved from a
// session cookie, as authctx's middleware would.
func withCookieSession(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Cookie") != "" {
			r = r.WithContext(authctx.WithResult(r.Context(), authctx.Result{Source: authctx.SourceCookie}))
		}
		h.ServeHTTP(w, r)
	})
}

// TestReplicaReadYourOwnWrites: behind a replica that replays commits
// 500 ms late, 1,000 creates each followed by a get and a list (four
// users, 250 each) carrying the Tablegate-Position of the create see
// their own row every time (from the primary, as the replica has not
// replayed it); the reads a client makes after the replica caught up
// (one sequence in 50 waits 700 ms) are served by the replica, each one.
func TestReplicaReadYourOwnWrites(t *testing.T) {
	b, rep := setupReplicated(t, &db.Config{ReplicaWait: 2 * time.Millisecond})
	s := server(t, "todos", withCookieSession(b.resource("todos", nil)))
	if err := rep.Replica.SetApplyDelay(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}

	users := []string{alice, bob, "44444444-4444-4444-4444-444444444444", "55555555-5555-5555-5555-555555555555"}
	const perUser = 250
	type last struct{ id, pos string }
	lasts := make([]last, len(users))
	var mu sync.Mutex
	var stale, sequences, caughtUp int
	var wg sync.WaitGroup
	before := b.db.ReplicaStats()
	start := time.Now()
	for ui, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perUser; i++ {
				c := do(t, s, "POST", "/api/todos", u, `{"title":"rw"}`)
				pos := c.header.Get("Tablegate-Position")
				if c.status != 201 || pos == "" {
					t.Errorf("create: %v, position %q", c, pos)
					return
				}
				var row struct{ ID string }
				if err := json.Unmarshal([]byte(c.body), &row); err != nil {
					t.Error(err)
					return
				}
				if i%50 == 49 {
					// Now and then the client reads later, after the
					// replica has caught up: the replica serves it.
					p, err := db.ParsePosition(pos)
					if err == nil {
						err = replicatest.WaitReplayed(context.Background(), b.db, b.pool, p)
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					caughtUp += 2
					mu.Unlock()
				}
				g := do(t, s, "GET", "/api/todos/"+row.ID, u, "", "Tablegate-Position", pos)
				l := do(t, s, "GET", "/api/todos?id=eq."+row.ID, u, "", "Tablegate-Position", pos)
				mu.Lock()
				sequences += 2
				if g.status != 200 || !strings.Contains(g.body, row.ID) {
					stale++
				}
				if l.status != 200 || !strings.Contains(l.body, row.ID) {
					stale++
				}
				mu.Unlock()
				lasts[ui] = last{row.ID, pos}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	after := b.db.ReplicaStats()
	served := after.Replicas[0].Reads - before.Replicas[0].Reads
	t.Logf("%d creates, each then a get and a list carrying its position, in %v: %d of %d reads stale; "+
		"replica served %d reads (%d were made after the replica caught up), primary %d (position not yet replayed after a wait of at most 2ms)",
		sequences/2, took.Round(time.Millisecond), stale, sequences, served, caughtUp,
		after.PrimaryReads[db.ReasonPosition]-before.PrimaryReads[db.ReasonPosition])
	if t.Failed() {
		return
	}
	if stale != 0 {
		t.Fatalf("%d of %d reads after the caller's own create missed it", stale, sequences)
	}
	if sequences != 2*perUser*len(users) {
		t.Fatalf("ran %d sequences", sequences)
	}
	if served != uint64(caughtUp) {
		t.Fatalf("the replica served %d reads; %d were made after it had caught up", served, caughtUp)
	}

	// Past the delay, the replica has caught up: it serves the same reads.
	if err := replicatest.WaitReplayed(context.Background(), b.db, b.pool, 0); err != nil {
		t.Fatal(err)
	}
	r0 := b.db.ReplicaStats().Replicas[0].Reads
	for ui, u := range users {
		g := do(t, s, "GET", "/api/todos/"+lasts[ui].id, u, "", "Tablegate-Position", lasts[ui].pos)
		l := do(t, s, "GET", "/api/todos?id=eq."+lasts[ui].id, u, "", "Tablegate-Position", lasts[ui].pos)
		if g.status != 200 || l.status != 200 || !strings.Contains(l.body, lasts[ui].id) {
			t.Fatalf("caught-up reads: %v / %v", g, l)
		}
	}
	if got := b.db.ReplicaStats().Replicas[0].Reads - r0; got != uint64(2*len(users)) {
		t.Fatalf("the caught-up replica served %d of %d reads", got, 2*len(users))
	}
	t.Logf("after the replica caught up: it served %d of %d reads carrying a position", 2*len(users), 2*len(users))

	// A cookie session gets the position as a cookie too, and a read
	// carrying only the cookie sees its write.
	c := do(t, s, "POST", "/api/todos", alice, `{"title":"cookie"}`, "X-Test-Cookie", "1")
	var ck string
	for _, sc := range c.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "Tablegate-Position=") {
			ck = sc
		}
	}
	if c.status != 201 || !strings.Contains(ck, "Max-Age=30") || !strings.Contains(ck, "HttpOnly") {
		t.Fatalf("cookie session create: %v, Set-Cookie %q", c, ck)
	}
	var row struct{ ID string }
	_ = json.Unmarshal([]byte(c.body), &row)
	value := strings.TrimPrefix(strings.SplitN(ck, ";", 2)[0], "Tablegate-Position=")
	g := do(t, s, "GET", "/api/todos/"+row.ID, alice, "", "Cookie", "Tablegate-Position="+value)
	if g.status != 200 {
		t.Fatalf("read carrying the position cookie: %v", g)
	}
	// A bearer caller gets no cookie.
	if c := do(t, s, "POST", "/api/todos", alice, `{"title":"bearer"}`); c.header.Get("Set-Cookie") != "" {
		t.Fatalf("a caller without a cookie session got Set-Cookie %q", c.header.Get("Set-Cookie"))
	}
}

// TestReplicaPositionHeaderAttacks: a malformed position header is the
// caller's mistake (400, naming the header, not echoing it); a malformed
// cookie is ignored; a position far in the future costs the bounded wait
// and is served by the primary, never refused; another user's position
// shows nothing of theirs (RLS decides on the replica as on the primary).
func TestReplicaPositionHeaderAttacks(t *testing.T) {
	b, _ := setupReplicated(t, nil)
	s := server(t, "todos", b.resource("todos", nil))
	c := do(t, s, "POST", "/api/todos", alice, `{"title":"mine"}`)
	pos := c.header.Get("Tablegate-Position")
	var row struct{ ID string }
	_ = json.Unmarshal([]byte(c.body), &row)
	for _, v := range []string{"nope", "1/", "/1", "0/0/0", "123456789/1", "<script>"} {
		r := do(t, s, "GET", "/api/todos/"+row.ID, alice, "", "Tablegate-Position", v)
		if r.status != 400 || !strings.Contains(r.body, "Tablegate-Position") || strings.Contains(r.body, "nope") || strings.Contains(r.body, "<") {
			t.Fatalf("position %q: %v", v, r)
		}
	}
	// Ignored: the read carries no position, so it may not see the row
	// yet (404), but it is never refused.
	if r := do(t, s, "GET", "/api/todos/"+row.ID, alice, "", "Cookie", "Tablegate-Position=garbage"); r.status != 200 && r.status != 404 {
		t.Fatalf("a bad position cookie: %v", r)
	}
	p0 := b.db.ReplicaStats().PrimaryReads[db.ReasonPosition]
	startT := time.Now()
	if r := do(t, s, "GET", "/api/todos/"+row.ID, alice, "", "Tablegate-Position", "FFFFFFFF/FFFFFFFF"); r.status != 200 {
		t.Fatalf("a position from the future: %v", r)
	}
	if d := time.Since(startT); d > time.Second {
		t.Fatalf("a position from the future took %v", d)
	}
	if b.db.ReplicaStats().PrimaryReads[db.ReasonPosition] != p0+1 {
		t.Fatal("a position no replica reached was not served by the primary")
	}
	if r := do(t, s, "GET", "/api/todos/"+row.ID, bob, "", "Tablegate-Position", pos); r.status != 404 {
		t.Fatalf("bob carrying alice's position read her row: %v", r)
	}
	if r := do(t, s, "GET", "/api/todos/"+row.ID, "anon", "", "Tablegate-Position", pos); r.status != 404 {
		t.Fatalf("anon carrying alice's position read her row: %v", r)
	}
	if r := do(t, s, "DELETE", "/api/todos/"+row.ID, alice, ""); r.status != 204 || r.header.Get("Tablegate-Position") == "" {
		t.Fatalf("delete: %v, position %q", r, r.header.Get("Tablegate-Position"))
	}
}

// TestNoReplicaNoPosition: without replicas a write answers no
// Tablegate-Position and a read ignores one (even a malformed one).
func TestNoReplicaNoPosition(t *testing.T) {
	b := setup(t)
	s := server(t, "todos", b.resource("todos", nil))
	c := do(t, s, "POST", "/api/todos", alice, `{"title":"x"}`)
	if c.status != 201 || c.header.Get("Tablegate-Position") != "" || c.header.Get("Set-Cookie") != "" {
		t.Fatalf("create without replicas: %v %v", c, c.header)
	}
	var row struct{ ID string }
	_ = json.Unmarshal([]byte(c.body), &row)
	if r := do(t, s, "GET", "/api/todos/"+row.ID, alice, "", "Tablegate-Position", "junk"); r.status != 200 {
		t.Fatalf("get without replicas: %v", r)
	}
}

// TestReplicaRoutesOnlyPlainReads: a ReadOnly action runs on the replica
// (and one that writes anyway is refused there and runs again on the
// primary, where the write succeeds); an action not declared ReadOnly
// answers a position; a get with an AfterGet hook, which may write,
// stays on the primary.
func TestReplicaRoutesOnlyPlainReads(t *testing.T) {
	b, _ := setupReplicated(t, nil)
	type count struct{ N int }
	countAction := DefineAction(ActionDef[None, None, count]{Method: "GET", Path: "/count", ReadOnly: true,
		Handler: func(c *Ctx, _ ActionInput[None, None]) (count, error) {
			var n count
			err := c.DB.QueryRow(c, `select count(*) from todos`).Scan(&n.N)
			return n, err
		}})
	sneaky := DefineAction(ActionDef[None, None, count]{Method: "POST", Path: "/sneaky", ReadOnly: true,
		Handler: func(c *Ctx, _ ActionInput[None, None]) (count, error) {
			_, err := c.DB.Exec(c, `insert into todos (title) values ('sneaky')`)
			return count{1}, err
		}})
	touch := DefineAction(ActionDef[None, None, count]{Method: "POST", Path: "/touch",
		Handler: func(c *Ctx, _ ActionInput[None, None]) (count, error) {
			_, err := c.DB.Exec(c, `insert into todos (title) values ('touch')`)
			return count{1}, err
		}})
	s := server(t, "todos", b.resource("todos", &Config{Actions: map[string]*Action{"count": countAction, "sneaky": sneaky, "touch": touch}}))
	hooked := server(t, "hooked", b.resource("todos", &Config{Hooks: Hooks{AfterGetFunc: func(c *Ctx, row Row) (any, error) { return row, nil }}}))

	reads := func() uint64 { return b.db.ReplicaStats().Replicas[0].Reads }
	r0 := reads()
	if r := do(t, s, "GET", "/api/todos/count", alice, ""); r.status != 200 || reads() != r0+1 {
		t.Fatalf("read-only action: %v; replica reads %d → %d", r, r0, reads())
	}
	r0 = reads()
	fb := b.db.ReplicaStats().PrimaryReads[db.ReasonFallback]
	if r := do(t, s, "POST", "/api/todos/sneaky", alice, ""); r.status != 200 || reads() != r0 ||
		b.db.ReplicaStats().PrimaryReads[db.ReasonFallback] != fb+1 {
		t.Fatalf("a ReadOnly action that writes: %v; fallbacks %d → %d", r, fb, b.db.ReplicaStats().PrimaryReads[db.ReasonFallback])
	}
	if r := do(t, s, "POST", "/api/todos/touch", alice, ""); r.status != 200 || r.header.Get("Tablegate-Position") == "" {
		t.Fatalf("a writing action: %v, position %q", r, r.header.Get("Tablegate-Position"))
	}
	c := do(t, s, "POST", "/api/todos", alice, `{"title":"h"}`)
	var row struct{ ID string }
	_ = json.Unmarshal([]byte(c.body), &row)
	if !b.db.ReplicaStats().Replicas[0].InRotation {
		t.Fatal("a ReadOnly action that writes took the replica out of rotation")
	}
	r0 = reads()
	if r := do(t, hooked, "GET", "/api/hooked/"+row.ID, alice, ""); r.status != 200 || reads() != r0 {
		t.Fatalf("hooked get: %v; replica reads %d → %d", r, r0, reads())
	}
	// Without a position a plain get may reach the replica before it has
	// replayed the create (404 there, as any read of a lagging replica);
	// poll, bounded, until the replica serves the row.
	var r resp
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if r = do(t, s, "GET", "/api/todos/"+row.ID, alice, ""); r.status == 200 && reads() > r0 || time.Now().After(deadline) {
			break
		}
		if r.status != 200 && r.status != 404 {
			break
		}
	}
	if r.status != 200 || reads() <= r0 {
		t.Fatalf("plain get: %v; replica reads %d → %d", r, r0, reads())
	}
}

// TestReplicaStoppedUnderHTTPLoad: clients keep getting and listing over
// HTTP while the replica stops and starts again: no answer is a 5xx (or
// anything but 200), reads move to the primary while it is down and back
// to it once it returns.
func TestReplicaStoppedUnderHTTPLoad(t *testing.T) {
	b, rep := setupReplicated(t, nil)
	s := server(t, "todos", b.resource("todos", nil))
	c := do(t, s, "POST", "/api/todos", alice, `{"title":"load"}`)
	pos := c.header.Get("Tablegate-Position")
	var row struct{ ID string }
	_ = json.Unmarshal([]byte(c.body), &row)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				path := "/api/todos/" + row.ID
				if n%2 == 1 {
					path = "/api/todos?id=eq." + row.ID
				}
				r := do(t, s, "GET", path, alice, "", "Tablegate-Position", pos)
				st := r.status
				if st == 200 && !strings.Contains(r.body, row.ID) {
					st = -1 // a stale answer
				}
				mu.Lock()
				statuses[st]++
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // sleep: the clients run for a while in each phase (both servers up, replica down, back up)
	s0 := b.db.ReplicaStats()
	if err := rep.Replica.StopServer(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); b.db.ReplicaStats().Replicas[0].InRotation && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
	}
	time.Sleep(300 * time.Millisecond) // sleep: the clients run for a while with the replica down
	s1 := b.db.ReplicaStats()
	if err := rep.Replica.StartServer(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); !b.db.ReplicaStats().Replicas[0].InRotation && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
	}
	time.Sleep(300 * time.Millisecond) // sleep: the clients run for a while with the replica back
	close(stop)
	wg.Wait()
	s2 := b.db.ReplicaStats()
	t.Logf("answers by status %v; replica reads before stop %d, while stopped +%d, after restart +%d; primary while stopped +%d (fallbacks %d)",
		statuses, s0.Replicas[0].Reads, s1.Replicas[0].Reads-s0.Replicas[0].Reads, s2.Replicas[0].Reads-s1.Replicas[0].Reads,
		s1.PrimaryReads[db.ReasonNoReplica]-s0.PrimaryReads[db.ReasonNoReplica], s2.PrimaryReads[db.ReasonFallback])
	for st, n := range statuses {
		if st != 200 {
			t.Fatalf("%d answers with status %d (-1: stale) while the replica stopped and started", n, st)
		}
	}
	if s0.Replicas[0].Reads == 0 || s1.PrimaryReads[db.ReasonNoReplica] == s0.PrimaryReads[db.ReasonNoReplica] ||
		s2.Replicas[0].Reads == s1.Replicas[0].Reads {
		t.Fatal("reads did not go replica → primary → replica")
	}
}
