package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/rest"
)

// TestCommittedWritesReachTenant: a committed create, update, action and
// delete reach a subscriber of the same tenant, in order, with the event
// fields; a subscriber of another tenant receives none of them (proved
// by its own tenant's write arriving afterwards).
func TestCommittedWritesReachTenant(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok, carolTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false), b.token(carol, tenantB, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	sc := b.subscribe("/api/todos/events", "Authorization", "Bearer "+carolTok)
	if sa.status != 200 || sc.status != 200 {
		t.Fatalf("subscribe: %d %s / %d %s", sa.status, sa.body, sc.status, sc.body)
	}
	if ct := sa.resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	id := b.create(bobTok, "bob's todo")
	if st, body := b.call("PATCH", fmt.Sprintf("/api/todos/%d", id), bobTok, `{"title":"renamed"}`); st != 200 {
		t.Fatalf("update: %d %s", st, body)
	}
	if st, body := b.call("POST", fmt.Sprintf("/api/todos/%d/complete", id), bobTok, ""); st != 200 {
		t.Fatalf("complete: %d %s", st, body)
	}
	if st, body := b.call("POST", "/api/todos/announce", bobTok, ""); st != 204 {
		t.Fatalf("announce: %d %s", st, body)
	}
	if st, body := b.call("DELETE", fmt.Sprintf("/api/todos/%d", id), bobTok, ""); st != 204 {
		t.Fatalf("delete: %d %s", st, body)
	}
	got := sa.expect("todos.created", "todos.updated", "todos.updated", "todo.completed", "todo.announced", "todos.deleted")
	key := strconv.FormatInt(id, 10)
	last := int64(0)
	for _, ev := range got {
		d := ev.Data
		if d.ID <= last || ev.ID != strconv.FormatInt(d.ID, 10) {
			t.Fatalf("ids not increasing: %s after %d", ev.ID, last)
		}
		last = d.ID
		if d.Tenant == nil || *d.Tenant != tenantA || d.Actor == nil || *d.Actor != bob || d.Table != "todos" || d.Time.IsZero() {
			t.Fatalf("fields of %s: %s", ev.Name, ev.Raw)
		}
		if ev.Name != "todo.announced" && (d.Key == nil || *d.Key != key) {
			t.Fatalf("key of %s: %s", ev.Name, ev.Raw)
		}
		if strings.Contains(ev.Raw, "hidden") || strings.Contains(ev.Raw, "secret") {
			t.Fatalf("unselected column leaked: %s", ev.Raw)
		}
	}
	var row map[string]any
	_ = json.Unmarshal(got[1].Data.Payload, &row)
	if row["title"] != "renamed" {
		t.Fatalf("update payload: %s", got[1].Raw)
	}
	if !strings.Contains(string(got[3].Data.Payload), `"done":true`) {
		t.Fatalf("action payload: %s", got[3].Raw)
	}
	_ = json.Unmarshal(got[5].Data.Payload, &row)
	if row["title"] != "renamed" || got[5].Data.Key == nil {
		t.Fatalf("delete payload: %s", got[5].Raw)
	}
	// Carol (tenant B) got nothing of tenant A: her own write is the first
	// event she sees.
	b.create(carolTok, "carol's")
	ev := sc.expect("todos.created")[0]
	if !strings.Contains(ev.Raw, "carol's") {
		t.Fatalf("carol got %s", ev.Raw)
	}
	// And alice nothing of tenant B.
	b.create(aliceTok, "alice again")
	if ev := sa.expect("todos.created")[0]; !strings.Contains(ev.Raw, "alice again") {
		t.Fatalf("alice got %s", ev.Raw)
	}
	// The counter moves after the frame is handed to the stream, so the
	// client can see the event a moment before the count does.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := b.hub.Stats()
		if s.Delivered >= 8 && s.Subscribers == 2 && s.Checks > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v", s)
		}
		time.Sleep(10 * time.Millisecond) // sleep: poll step of the bounded wait around it
	}
}

// TestRolledBackReachesNobody: a write rolled back by a hook error, and an
// action emitting an undeclared event, deliver nothing; the next committed
// write is the first event.
func TestRolledBackReachesNobody(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	if st, body := b.call("POST", "/api/todos/", bobTok, `{"title":"fail"}`); st != 422 {
		t.Fatalf("hook error: %d %s", st, body)
	}
	if st, body := b.call("POST", "/api/todos/sneaky", bobTok, ""); st != 500 {
		t.Fatalf("undeclared emit: %d %s", st, body)
	}
	var n int
	if err := b.pool.QueryRow(t.Context(), `select count(*) from tablegate.events`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("outbox holds %d rows (%v) after rollbacks", n, err)
	}
	b.create(bobTok, "committed")
	if ev := sa.expect("todos.created")[0]; !strings.Contains(ev.Raw, "committed") {
		t.Fatalf("first event: %s", ev.Raw)
	}
	sa.quiet(500 * time.Millisecond)
}

// TestEmitUndeclared: Emit refuses a name the action does not declare and
// calls outside an action.
func TestEmitUndeclared(t *testing.T) {
	t.Parallel()
	c := &rest.Ctx{Operation: rest.OpCreate}
	if err := events.Emit(c, "x", nil, nil); err == nil {
		t.Fatal("emit outside an action and without DB succeeded")
	}
	c.Action = &rest.Action{Emits: []string{"a"}}
	if err := events.Emit(c, "b", nil, nil); err == nil {
		t.Fatal("undeclared emit succeeded")
	}
}

// TestRefusedCallers: a caller without a session and an anonymous sign-in
// get no stream (401/403) unless the stream admits them; an admitted
// anonymous sign-in still only receives what its RLS shows.
func TestRefusedCallers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if c := b.subscribe("/api/todos/events"); c.status != 401 || !strings.Contains(c.body, "AUTH_REQUIRED") {
		t.Fatalf("no session: %d %s", c.status, c.body)
	}
	guestTok := b.token(guest, tenantA, true)
	if c := b.subscribe("/api/todos/events", "Authorization", "Bearer "+guestTok); c.status != 403 || !strings.Contains(c.body, "ANONYMOUS_USER") {
		t.Fatalf("anonymous sign-in: %d %s", c.status, c.body)
	}
	if c := b.subscribe("/api/todos/events", "Authorization", "Bearer garbage"); c.status != 401 {
		t.Fatalf("bad token: %d %s", c.status, c.body)
	}
	// Expired 10 s ago, inside the verifier's 30 s clock-skew leeway: the
	// REST routes serve it, the stream answers 401 so the client refreshes
	// instead of reconnecting to a stream that ends as it opens.
	skewTok := b.tokenWith(alice, map[string]any{"tenant_id": tenantA, "exp": time.Now().Add(-10 * time.Second).Unix()})
	if st, body := b.call("GET", "/api/todos", skewTok, ""); st != 200 {
		t.Fatalf("REST with a token inside the leeway: %d %s", st, body)
	}
	if c := b.subscribe("/api/todos/events", "Authorization", "Bearer "+skewTok); c.status != 401 ||
		!strings.Contains(c.body, "TOKEN_EXPIRED") || !strings.Contains(c.body, "expired") {
		t.Fatalf("stream with a token inside the leeway: %d %s", c.status, c.body)
	}
	if st, _ := b.call("POST", "/api/todos/events", b.token(alice, tenantA, false), ""); st != 405 && st != 404 {
		t.Fatalf("POST to events: %d", st)
	}
}

// TestAnonymousOptIn: a stream admitting anonymous sign-ins delivers to a
// guest member what the policies let it read; a no-session caller admitted
// by AllowAnon sees nothing (its RLS shows no row).
func TestAnonymousOptIn(t *testing.T) {
	t.Parallel()
	b := setup(t, &fixtureOpts{allow: []authctx.Allow{authctx.AllowUser, authctx.AllowAnonymous, authctx.AllowAnon}})
	sg := b.subscribe("/api/todos/events", "Authorization", "Bearer "+b.token(guest, tenantA, true))
	sn := b.subscribe("/api/todos/events")
	if sg.status != 200 || sn.status != 200 {
		t.Fatalf("opted in: %d %s / %d %s", sg.status, sg.body, sn.status, sn.body)
	}
	b.create(b.token(bob, tenantA, false), "visible to members")
	sg.expect("todos.created")
	sn.quiet(time.Second)
}

// TestMembershipRemoved: after the membership row is deleted, the
// subscriber's policies hide the rows and it stops receiving (including
// deletes), while another member keeps receiving.
func TestMembershipRemoved(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	sb := b.subscribe("/api/todos/events", "Authorization", "Bearer "+bobTok)
	id := b.create(bobTok, "before")
	sa.expect("todos.created")
	sb.expect("todos.created")
	if _, err := b.pool.Exec(t.Context(), `delete from tablegate.memberships where user_id = $1`, alice); err != nil {
		t.Fatal(err)
	}
	b.create(bobTok, "after")
	if st, body := b.call("DELETE", fmt.Sprintf("/api/todos/%d", id), bobTok, ""); st != 204 {
		t.Fatalf("delete: %d %s", st, body)
	}
	sb.expect("todos.created", "todos.deleted")
	sa.quiet(time.Second)
}

// TestResumeAfter100: a subscriber that reconnects with Last-Event-ID after
// missing 100 events receives exactly those 100, in order, then live ones.
func TestResumeAfter100(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	carolTok := b.token(carol, tenantB, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	b.create(bobTok, "seen")
	last := sa.expect("todos.created")[0].ID
	sa.close()
	// 100 events for tenant A, interleaved with tenant B writes alice must not get.
	for i := range 100 {
		b.create(bobTok, fmt.Sprintf("missed %d", i))
		if i%10 == 0 {
			b.create(carolTok, "tenant B")
		}
	}
	// A tenant B subscriber replaying alice's Last-Event-ID gets only tenant B's.
	sc := b.subscribe("/api/todos/events", "Authorization", "Bearer "+carolTok, "Last-Event-ID", last)
	for range 10 {
		if ev, err := sc.next(10 * time.Second); err != nil || !strings.Contains(ev.Raw, "tenant B") {
			t.Fatalf("tenant B replay: %v %s", err, ev.Raw)
		}
	}
	sc.quiet(500 * time.Millisecond)

	sa2 := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok, "Last-Event-ID", last)
	names := make([]string, 100)
	for i := range names {
		names[i] = "todos.created"
	}
	got := sa2.expect(names...)
	for i, ev := range got {
		if !strings.Contains(ev.Raw, fmt.Sprintf(`"missed %d"`, i)) {
			t.Fatalf("event %d is %s", i, ev.Raw)
		}
	}
	b.create(bobTok, "live")
	if ev := sa2.expect("todos.created")[0]; !strings.Contains(ev.Raw, `"live"`) {
		t.Fatalf("after resume: %s", ev.Raw)
	}
	sa2.quiet(300 * time.Millisecond)
}

// TestTwoServers: a write through one instance reaches a subscriber of
// another instance on the same database.
func TestTwoServers(t *testing.T) {
	t.Parallel()
	b1 := setup(t, nil)
	b2 := setup(t, &fixtureOpts{url: b1.url, key: b1.key})
	sub := subscribeTo(t, b2.srv.URL+"/api/todos/events", "Authorization", "Bearer "+b1.token(alice, tenantA, false))
	if sub.status != 200 {
		t.Fatalf("subscribe on instance 2: %d %s", sub.status, sub.body)
	}
	b1.create(b1.token(bob, tenantA, false), "from instance 1")
	if ev := sub.expect("todos.created")[0]; !strings.Contains(ev.Raw, "from instance 1") {
		t.Fatalf("got %s", ev.Raw)
	}
}

// TestListenerReconnect: the listening connection is killed (as by a
// Postgres restart); events keep arriving.
func TestListenerReconnect(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	bobTok := b.token(bob, tenantA, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false))
	b.create(bobTok, "one")
	sa.expect("todos.created")
	waitListeners(t, b)
	// Terminate it and wait (up to 10 s) until its backend has exited, so
	// that the counts below never see the dying one.
	var n int
	if err := b.pool.QueryRow(t.Context(), `select count(*) filter (where pg_terminate_backend(pid, 10000)) from pg_stat_activity
where datname = current_database() and query ilike 'listen%'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminated %d listeners (%v)", n, err)
	}
	b.create(bobTok, "two")
	sa.expect("todos.created")
	// "two" may have come by polling while the hub reconnects (with
	// backoff when the first attempt fails): wait for the new listener,
	// then check over two more poll intervals that it stays the only one.
	waitListeners(t, b)
	time.Sleep(400 * time.Millisecond) // sleep: nothing may change over two poll intervals: the window is the subject
	if n := countListeners(t, b); n != 1 {
		t.Fatalf("%d listeners after reconnect", n)
	}
}

// countListeners returns the connections listening in b's database.
func countListeners(t *testing.T, b *bundle) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(t.Context(), `select count(*) from pg_stat_activity
where datname = current_database() and query ilike 'listen%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitListeners waits until the hub listens (it connects in the
// background, after New returned), then fails unless exactly one
// connection does.
func waitListeners(t *testing.T, b *bundle) {
	t.Helper()
	n := 0
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if n = countListeners(t, b); n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no listening connection within 20 s")
		}
	}
	if n != 1 {
		t.Fatalf("%d listening connections, want 1", n)
	}
}

// TestCookieSession: a browser's cookie session subscribes same-origin;
// the same cookie from another site is refused.
func TestCookieSession(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cookie := b.sessionCookie(b.token(alice, tenantA, false))
	same := b.subscribe("/api/todos/events", "Cookie", cookie, "Sec-Fetch-Site", "same-origin")
	if same.status != 200 {
		t.Fatalf("same-origin cookie: %d %s", same.status, same.body)
	}
	cross := b.subscribe("/api/todos/events", "Cookie", cookie, "Sec-Fetch-Site", "cross-site")
	if cross.status != 403 || !strings.Contains(cross.body, "CROSS_SITE_REQUEST") {
		t.Fatalf("cross-site cookie: %d %s", cross.status, cross.body)
	}
	origin := b.subscribe("/api/todos/events", "Cookie", cookie, "Origin", "https://evil.example")
	if origin.status != 403 {
		t.Fatalf("foreign Origin with cookie: %d %s", origin.status, origin.body)
	}
	// Bearer from another site is not a cookie credential: allowed.
	bearer := b.subscribe("/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false), "Sec-Fetch-Site", "cross-site")
	if bearer.status != 200 {
		t.Fatalf("cross-site bearer: %d %s", bearer.status, bearer.body)
	}
	b.create(b.token(bob, tenantA, false), "for the cookie")
	same.expect("todos.created")
}

// TestFilters: event names and column filters select events; bad or huge
// filters answer 400.
func TestFilters(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	byName := b.subscribe("/api/todos/events?event=todo.completed", "Authorization", "Bearer "+tok)
	byCol := b.subscribe("/api/todos/events?title=eq.pick%20me&done=is.false", "Authorization", "Bearer "+tok)
	b.create(bobTok, "skip me")
	id := b.create(bobTok, "pick me")
	b.call("POST", fmt.Sprintf("/api/todos/%d/complete", id), bobTok, "")
	byName.expect("todo.completed")
	// The update has done=true: filtered out; column filters do not apply
	// to action events.
	byCol.expect("todos.created", "todo.completed")
	byCol.quiet(500 * time.Millisecond)
	for _, q := range []string{
		"event=nope", "nosuch=eq.1", "title=zz.1", "id=in.(" + strings.Repeat("1,", 100) + "1)",
		"title=eq." + strings.Repeat("x", 300), strings.Repeat("title=eq.a&", 20), "last_event_id=-1",
		// Values the column's type cannot hold, refused as a list refuses them.
		"id=eq.abc", "id=in.(1,x)", "id=gt.1e999999", "done=eq.maybe", "owner_id=eq.not-a-uuid",
	} {
		if c := b.subscribe("/api/todos/events?"+q, "Authorization", "Bearer "+tok); c.status != 400 {
			t.Fatalf("%.60s: %d %s", q, c.status, c.body)
		}
	}
	if c := b.subscribe("/api/todos/events", "Authorization", "Bearer "+tok, "Last-Event-ID", "abc"); c.status != 400 {
		t.Fatalf("bad Last-Event-ID: %d", c.status)
	}
}

// TestSlowAndCapped: a subscriber that stops reading is cut off (its
// writes are bounded) while a reading one gets every event; one caller
// cannot hold more than MaxPerCaller streams. The queue holds more than
// the whole burst (6.4 MB), so a reader that a loaded machine leaves
// unscheduled for a moment is never cut off for it; the silent one fills
// its socket and is cut by WriteTimeout. The queue bounds themselves are
// TestSubscriberQueueBounds's.
func TestSlowAndCapped(t *testing.T) {
	t.Parallel()
	b := setup(t, &fixtureOpts{hub: &events.Config{PollInterval: 200 * time.Millisecond, MaxPerCaller: 3,
		WriteTimeout: 2 * time.Second, BufferBytes: 8 << 20, Batch: 10}})
	tok := b.token(alice, tenantA, false)
	reader := b.subscribe("/api/todos/events", "Authorization", "Bearer "+tok)
	// A raw connection that sends the request and never reads.
	conn, err := net.Dial("tcp", b.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /api/todos/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", tok)
	third := b.subscribe("/api/todos/events", "Authorization", "Bearer "+tok)
	if reader.status != 200 || third.status != 200 {
		t.Fatalf("subscribe: %d %d", reader.status, third.status)
	}
	for deadline := time.Now().Add(20 * time.Second); b.hub.Stats().Subscribers < 3; time.Sleep(20 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			t.Fatalf("the silent stream did not open within 20 s: %+v", b.hub.Stats())
		}
	}
	if c := b.subscribe("/api/todos/events", "Authorization", "Bearer "+tok); c.status != 429 ||
		!strings.Contains(c.body, "too_many_requests") || c.resp.Header.Get("Retry-After") == "" {
		t.Fatalf("4th stream of one caller: %d %s", c.status, c.body)
	}
	third.close()
	// 100 rows of 64 KiB in one statement, as bob.
	tx, err := b.pool.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(t.Context())
	if _, err := tx.Exec(t.Context(), `select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`,
		fmt.Sprintf(`{"sub":%q,"tenant_id":%q,"role":"authenticated"}`, bob, tenantA)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), `insert into todos (title) select g || repeat('x', 65536) from generate_series(1, 100) g`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		ev, err := reader.next(10 * time.Second)
		if err != nil || !strings.Contains(ev.Raw, fmt.Sprintf(`"title":"%dxxx`, i+1)) {
			t.Fatalf("reader event %d: %v %.80s", i, err, ev.Raw)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for b.hub.Stats().Subscribers > 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // sleep: poll step of the bounded wait around it
	}
	if s := b.hub.Stats(); s.Subscribers != 1 || s.CutOff == 0 {
		t.Fatalf("the silent subscriber was not cut off: %+v", s)
	}
}

// TestSurvivesServerTimeouts: behind an http.Server with short read and
// write timeouts, a stream stays open past them (heartbeats flow) and
// still delivers.
func TestSurvivesServerTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t, &fixtureOpts{hub: &events.Config{PollInterval: 200 * time.Millisecond, Heartbeat: 300 * time.Millisecond}})
	srv := httptest.NewUnstartedServer(b.srv.Config.Handler)
	srv.Config.ReadTimeout, srv.Config.WriteTimeout = time.Second, time.Second
	srv.Start()
	t.Cleanup(srv.Close)
	c := subscribeTo(t, srv.URL+"/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false))
	if c.status != 200 {
		t.Fatalf("subscribe: %d %s", c.status, c.body)
	}
	time.Sleep(2500 * time.Millisecond) // sleep: the stream must outlive the 1 s server timeouts: the elapsed time is the subject
	b.create(b.token(bob, tenantA, false), "after the timeouts")
	if ev := c.expect("todos.created")[0]; !strings.Contains(ev.Raw, "after the timeouts") {
		t.Fatalf("got %s", ev.Raw)
	}
}

// TestNotifyOff: with the writer's NOTIFY turned off
// (tablegate.events_notify = off), hubs find events by polling.
func TestNotifyOff(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if _, err := b.pool.Exec(t.Context(), `do $$ begin execute format('alter database %I set tablegate.events_notify = off', current_database()); end $$`); err != nil {
		t.Fatal(err)
	}
	b.pool.Reset()
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+b.token(alice, tenantA, false))
	// The hub does listen: the event below must come by polling.
	waitListeners(t, b)
	listener, err := pgx.Connect(t.Context(), b.url)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(t.Context(), "listen "+events.Channel); err != nil {
		t.Fatal(err)
	}
	b.create(b.token(bob, tenantA, false), "polled")
	if ev := sa.expect("todos.created")[0]; !strings.Contains(ev.Raw, "polled") {
		t.Fatalf("got %s", ev.Raw)
	}
	wctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if n, err := listener.WaitForNotification(wctx); err == nil {
		t.Fatalf("the write notified %s %q", n.Channel, n.Payload)
	}
	var setting string
	if err := b.pool.QueryRow(t.Context(), `select current_setting('tablegate.events_notify', true)`).Scan(&setting); err != nil || setting != "off" {
		t.Fatalf("setting %q (%v)", setting, err)
	}
}
