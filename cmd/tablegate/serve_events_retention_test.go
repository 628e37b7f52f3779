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

// TestServeEventsRetention: "events": {"retention": "2h"} keeps an event
// written 90 minutes ago, which a stream resuming from 0 receives; without
// it (the default hour) serve prunes the event at start and the resume
// gets a tablegate.gap event instead.
func TestServeEventsRetention(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `insert into public.todos (tenant_id, owner_id, title) values ($1, $2, 'old')`, demoTenantA, demoUserID); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `select tablegate.sequence_events(100);
update tablegate.events set at = now() - interval '90 minutes'`); err != nil {
		t.Fatal(err)
	}
	tables := map[string]any{"todos": map[string]any{"table": "public.todos", "operations": []string{"list", "get"},
		"select": []string{"id", "title", "done"}, "guard": []string{"user"}, "events": true}}
	// first starts serve with extra, lets its first prune pass run
	// (settle), and returns the first event a stream resuming from 0 gets.
	first := func(extra map[string]any, settle func()) string {
		t.Helper()
		extra["tables"] = tables
		cfgPath, token := serveFixture(t, extra)
		addr := freeAddr(t)
		_, cancel, done := launchServe(t, url, "--config", cfgPath, "--addr", addr)
		defer func() { cancel(); <-done }()
		settle()
		sctx, scancel := context.WithTimeout(ctx, 15*time.Second)
		defer scancel()
		req, _ := http.NewRequestWithContext(sctx, "GET", "http://"+addr+"/v1/todos/events", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Last-Event-ID", "0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "event: ") {
				return strings.TrimPrefix(l, "event: ")
			}
		}
		return "(stream ended)"
	}
	// The hub prunes when it starts. With a retention of 2h the pass
	// removes nothing, so there is no outcome to wait for: give it the
	// time a pass takes. With the default, wait for the row to go.
	kept := func() {
		time.Sleep(300 * time.Millisecond) // sleep: a prune pass that must remove nothing has no outcome to wait for
	}
	pruned := func() {
		eventually(t, 15*time.Second, "the hub with the default retention did not prune the 90-minute-old event", func() bool {
			var n int
			err := pool.QueryRow(ctx, `select count(*) from tablegate.events where at < now() - interval '80 minutes'`).Scan(&n)
			return err == nil && n == 0
		})
	}
	if ev := first(map[string]any{"events": map[string]any{"retention": "2h"}}, kept); ev != "todos.created" {
		t.Errorf("with a retention of 2h: first event %q, want the 90-minute-old todos.created", ev)
	}
	if ev := first(map[string]any{}, pruned); ev != "tablegate.gap" {
		t.Errorf("with the default retention: first event %q, want tablegate.gap (the event was pruned)", ev)
	}
}

// TestDemoEventsRetentionFlag: the demo takes --events-retention and
// refuses one too short to resume, before starting anything.
func TestDemoEventsRetentionFlag(t *testing.T) {
	t.Parallel()
	if r := runCLI(t, nil, "demo", "--help"); !strings.Contains(r.stdout+r.stderr, "-events-retention duration") {
		t.Errorf("demo --help does not list --events-retention:\n%s%s", r.stdout, r.stderr)
	}
	if r := runCLI(t, nil, "demo", "--events-retention", "10s"); r.code != exitUsage || !strings.Contains(r.stderr, "--events-retention 10s is below 1m0s") {
		t.Errorf("--events-retention 10s: exit %d, stderr %s", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "demo", "--events-retention", "tomorrow"); r.code != exitUsage || !strings.Contains(r.stderr, "events-retention") {
		t.Errorf("--events-retention tomorrow: exit %d, stderr %s", r.code, r.stderr)
	}
}
