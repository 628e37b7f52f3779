package events_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
)

// TestEventSourceClient drives the real `eventsource` npm package: it
// receives events, the server ends the stream (MaxStream), the client
// reconnects by itself with Last-Event-ID and receives the events written
// while it was away — each exactly once, in order.
func TestEventSourceClient(t *testing.T) {
	t.Parallel()
	b := setup(t, &events.Config{PollInterval: 200 * time.Millisecond, MaxStream: 1500 * time.Millisecond})
	bobTok := b.token(bob)
	var out struct {
		Events []struct{ Type, ID, Data string }
		Opens  int
		Errors int
	}
	// Writes run beside the client; the node process runs on the test goroutine.
	go func() {
		waitFor := func(n int) bool {
			// Bounded by the node run below (node's start and a reconnect
			// included), generously: a loaded machine starts node slowly.
			for deadline := time.Now().Add(45 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) { // sleep: poll step of the bounded wait around it
				if b.hub.Stats().Subscribers == n {
					return true
				}
			}
			t.Errorf("never %d subscribers", n)
			return false
		}
		write := func(title string) {
			if st, body := b.call("POST", "/api/todos/", bobTok, fmt.Sprintf(`{"title":%q}`, title)); st != 201 {
				t.Errorf("create: %d %s", st, body)
			}
		}
		if !waitFor(1) {
			return
		}
		for i := range 3 {
			write(fmt.Sprintf("first %d", i))
		}
		if !waitFor(0) { // MaxStream ended it; the client waits retry (2s) before reconnecting
			return
		}
		for i := range 3 {
			write(fmt.Sprintf("away %d", i))
		}
	}()
	nodetest.Run(t, 60*time.Second, "events-watch.mjs", map[string]any{
		"url": b.srv.URL + "/api/todos/events", "token": b.token(alice),
		"names": []string{"todos.created", "todos.updated", "todos.deleted", "todo.completed"}, "want": 6,
		"timeout_ms": 45000, // the script's own bound (default 20 s), inside the run's 60 s
	}, &out)
	if t.Failed() {
		return
	}
	if len(out.Events) != 6 || out.Opens < 2 {
		t.Fatalf("got %d events, %d opens: %+v", len(out.Events), out.Opens, out)
	}
	for i, ev := range out.Events {
		want := fmt.Sprintf("first %d", i)
		if i >= 3 {
			want = fmt.Sprintf("away %d", i-3)
		}
		var e events.Event
		if err := json.Unmarshal([]byte(ev.Data), &e); err != nil || ev.Type != "todos.created" ||
			!strings.Contains(string(e.Payload), want) || ev.ID != fmt.Sprint(e.ID) {
			t.Fatalf("event %d: %+v (want %q)", i, ev, want)
		}
	}
}

// TestBrowserCookieSession: EventSource in headless Chromium, signed in by
// the @supabase/ssr cookie, receives the events its RLS shows; the same
// stream opened from another site gets nothing and is refused.
func TestBrowserCookieSession(t *testing.T) {
	t.Parallel()
	nodetest.RequireChromium(t)
	b := setup(t, nil)
	var mu sync.Mutex
	var crossStatuses []int
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>events</title>")
	})
	inner := b.srv.Config.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			page(w, r)
			return
		}
		rec := &statusWriter{ResponseWriter: w}
		inner.ServeHTTP(rec, r)
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			mu.Lock()
			crossStatuses = append(crossStatuses, rec.status)
			mu.Unlock()
		}
	}))
	t.Cleanup(srv.Close)
	other := httptest.NewServer(page)
	t.Cleanup(other.Close)
	otherURL := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	bobTok := b.token(bob)
	go func() {
		// Chromium's start under load can take most of this; the node run
		// below is bounded at 90 s.
		for deadline := time.Now().Add(75 * time.Second); b.hub.Stats().Subscribers < 1; time.Sleep(20 * time.Millisecond) { // sleep: poll step of the bounded wait around it
			if time.Now().After(deadline) {
				t.Errorf("the browser never subscribed")
				return
			}
		}
		for i := range 3 {
			if st, body := b.call("POST", "/api/todos/", bobTok, fmt.Sprintf(`{"title":"browser %d"}`, i)); st != 201 {
				t.Errorf("create: %d %s", st, body)
			}
		}
	}()
	cookie := strings.SplitN(b.sessionCookie(b.token(alice)), "=", 2)
	var out struct {
		Events    []struct{ Type, ID, Data string }
		CrossSite struct{ Events, Errors, ReadyState int }
		Errors    []string
	}
	nodetest.Run(t, 90*time.Second, "browser-events.mjs", map[string]any{
		"base": srv.URL, "other": otherURL, "cookie": map[string]string{"name": cookie[0], "value": cookie[1]},
		"names": []string{"todos.created", "todos.updated", "todos.deleted"}, "want": 3,
	}, &out)
	if len(out.Errors) > 0 || len(out.Events) != 3 {
		t.Fatalf("browser: %+v", out)
	}
	for i, ev := range out.Events {
		if ev.Type != "todos.created" || !strings.Contains(ev.Data, fmt.Sprintf("browser %d", i)) {
			t.Fatalf("event %d: %+v", i, ev)
		}
	}
	if out.CrossSite.Events != 0 || out.CrossSite.Errors == 0 || out.CrossSite.ReadyState != 2 {
		t.Fatalf("cross-site stream: %+v", out.CrossSite)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(crossStatuses) == 0 {
		t.Fatal("no cross-site request reached the server")
	}
	for _, st := range crossStatuses {
		if st != 401 && st != 403 {
			t.Fatalf("cross-site stream answered %d", st)
		}
	}
	t.Logf("cross-site stream answers: %v", crossStatuses)
}

type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
