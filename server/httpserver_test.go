package server

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDefaultTimeouts: the defaults apply when nothing is configured.
func TestDefaultTimeouts(t *testing.T) {
	srv := Timeouts{}.server(nil)
	if srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.ReadHeaderTimeout <= 0 {
		t.Errorf("default timeouts missing: %+v", srv)
	}
}

// TestStreamingOutlivesServerTimeouts: a streaming handler (SSE) lifts the
// server's read and write deadlines for its own response with
// http.ResponseController, as docs/operations of the CLI describe, and
// keeps streaming past both.
func TestStreamingOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 8; i++ {
			fmt.Fprintf(w, "data: %d\n\n", i)
			_ = rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	srv := Timeouts{Read: Duration(200 * time.Millisecond), Write: Duration(200 * time.Millisecond)}.server(h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	resp, err := http.Get("http://" + ln.Addr().String() + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || !strings.Contains(string(b), "data: 7") {
		t.Fatalf("stream cut short after %q: %v", b, err)
	}
}
