package events_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/tablegate/tablegate/events"
)

// TestReplayEndsWithTheStream: a resumed stream read slowly stops
// replaying when MaxStream passes (as it stops when the token expires),
// instead of replaying the whole outbox first and ending only then.
func TestReplayEndsWithTheStream(t *testing.T) {
	t.Parallel()
	b := setup(t, &fixtureOpts{hub: &events.Config{PollInterval: 100 * time.Millisecond, Heartbeat: time.Second,
		MaxStream: time.Second, WriteTimeout: 10 * time.Second, Batch: 50}})
	if _, err := b.pool.Exec(t.Context(), `insert into public.todos (tenant_id, owner_id, title)
select '`+tenantA+`', '`+alice+`', repeat('x', 400) || g from generate_series(1, 3000) g`); err != nil {
		t.Fatal(err)
	}
	// The hub's head reaches the new events: every one has its position
	// (drawn after commit) and the hub has read up to the last.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		var unsequenced, last int64
		if err := b.pool.QueryRow(t.Context(), `select count(*) filter (where seq is null), coalesce(max(seq), 0) from tablegate.events`).Scan(&unsequenced, &last); err != nil {
			t.Fatal(err)
		}
		if unsequenced == 0 && last > 0 && b.hub.Stats().Head >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s: %d events without a position, the hub's head at %d of %d", unsequenced, b.hub.Stats().Head, last)
		}
	}
	// A server whose connections buffer little, so that the replay waits
	// on the slow reader instead of landing in the kernel's buffers.
	mux := http.NewServeMux()
	mux.Handle("GET /api/todos/events", b.stream)
	srv := httptest.NewUnstartedServer(b.rv.Middleware(mux))
	srv.Listener = smallBuffers{srv.Listener}
	srv.Start()
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	conn, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(4096)
	}
	fmt.Fprintf(conn, "GET /api/todos/events?last_event_id=0 HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nAuthorization: Bearer %s\r\n\r\n", u.Host, b.token(alice, tenantA, false))
	start := time.Now()
	rd := bufio.NewReaderSize(conn, 1024)
	buf := make([]byte, 1024)
	got := 0
	for {
		_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
		n, err := rd.Read(buf)
		got += n
		if err != nil {
			t.Logf("after %v: %d bytes, %v", time.Since(start), got, err)
			break
		}
		time.Sleep(20 * time.Millisecond) // sleep: the slow reader is the subject (≈ 50 KB/s: the replay (≈ 1.4 MB) takes half a minute)
	}
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("the stream lasted %v (%d bytes read); MaxStream is 1s", el, got)
	}
}

// smallBuffers accepts connections with a small send buffer.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}
