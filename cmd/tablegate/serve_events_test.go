package main

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestServeEvents: "events": true on a table serves its event stream
// behind the table's guard; a row written to the caller's tenant arrives,
// one of another tenant does not (the next frame is the caller's own);
// the stream is in the description; shutdown with a subscriber connected
// ends well inside the shutdown limit; a table that is not opted in stops
// serve at start with the migration to write.
func TestServeEvents(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	tables := map[string]any{"todos": map[string]any{"table": "public.todos", "operations": []string{"list", "get"},
		"select": []string{"id", "title", "done"}, "guard": []string{"user"}, "events": true}}
	cfgPath, token := serveFixture(t, map[string]any{"tables": tables})
	addr := freeAddr(t)

	out, cancel, done := launchServe(t, url, "--config", cfgPath, "--addr", addr, "--shutdown-timeout", "20s")
	defer cancel()
	base := "http://" + addr + "/v1"
	if !strings.Contains(out.String(), "/v1/todos/events") {
		t.Errorf("startup lines do not name the stream: %s", out.String())
	}
	if code, _, body := getURL(t, base+"/openapi.json", nil); code != 200 || !strings.Contains(body, `"/todos/events"`) {
		t.Errorf("description: %d, stream path missing", code)
	}
	if code, _, _ := getURL(t, base+"/todos/events", nil); code != 401 {
		t.Errorf("stream without a token: %d, want 401", code)
	}

	sctx, scancel := context.WithTimeout(context.Background(), 40*time.Second) // the subscriber outlives serve
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, "GET", base+"/todos/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	frames := make(chan string, 16)
	go func() {
		defer close(frames)
		sc := bufio.NewScanner(resp.Body)
		var frame strings.Builder
		for sc.Scan() {
			if sc.Text() == "" {
				if f := frame.String(); strings.Contains(f, "event:") {
					frames <- f
				}
				frame.Reset()
				continue
			}
			frame.WriteString(sc.Text() + "\n")
		}
	}()
	// The subscription is registered when the response starts; rows
	// written from now on are delivered.
	for _, title := range []string{"other tenant's", "mine"} {
		tenant := demoTenantA
		if title == "other tenant's" {
			tenant = demoTenantB
		}
		if _, err := pool.Exec(sctx, `insert into public.todos (tenant_id, owner_id, title) values ($1, $2, $3)`,
			tenant, demoUserID, title); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case f, ok := <-frames:
		if !ok || !strings.Contains(f, "event: todos.created") || !strings.Contains(f, `"title":"mine"`) {
			t.Fatalf("first event %q (stream open %v), want todos.created of the caller's tenant", f, ok)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no event within 15 s")
	}

	// Shutdown with the subscriber connected: streams end first, so the
	// exit does not wait for the 20 s limit.
	start := time.Now()
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exited with %d: %s", code, out.String())
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("shutdown with an open stream took %v", d)
		}
	case <-time.After(19 * time.Second):
		t.Fatal("serve did not stop while a stream was open")
	}

	// A table that is not opted in: serve stops at start and says why.
	if _, err := pool.Exec(context.Background(), `select tablegate.disable_events('public.todos')`); err != nil {
		t.Fatal(err)
	}
	e := &env{stdout: &syncBuffer{}, stderr: &syncBuffer{}, getenv: func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }}
	errOut := e.stderr.(*syncBuffer)
	if code := run(context.Background(), e, []string{"serve", "--config", cfgPath, "--addr", freeAddr(t)}); code == 0 ||
		!strings.Contains(errOut.String(), "tables.todos.events") || !strings.Contains(errOut.String(), "enable_events") {
		t.Fatalf("serve of a table not opted in: exit %d: %s", code, errOut.String())
	}
}
