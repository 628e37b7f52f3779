package pgcluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestReplicaStreamsDelaysStopsAndReturns: a replica of a primary from
// StartPrimary is in recovery, receives a committed row, holds it back
// under recovery_min_apply_delay, and comes back after StopServer and
// StartServer to catch up with what was written meanwhile.
func TestReplicaStreamsDelaysStopsAndReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, err := StartPrimary(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	r, err := p.StartReplica(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	mustSQL := func(c *Cluster, q string) string {
		t.Helper()
		out, err := c.SQL(ctx, "postgres", q)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := mustSQL(r, "select pg_is_in_recovery()"); got != "t" {
		t.Fatalf("replica pg_is_in_recovery() = %q, want t", got)
	}
	waitFor := func(want string) time.Duration {
		t.Helper()
		start := time.Now()
		for time.Since(start) < 20*time.Second {
			if out, err := r.SQL(ctx, "postgres", "select coalesce(max(n)::text, '') from t"); err == nil && out == want {
				return time.Since(start)
			}
			time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
		}
		t.Fatalf("replica did not show n=%s within 20s", want)
		return 0
	}
	mustSQL(p, "create table t (n int); insert into t values (1)")
	waitFor("1")

	if err := r.SetApplyDelay(700 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	mustSQL(p, "insert into t values (2)")
	if d := waitFor("2"); d < 400*time.Millisecond {
		t.Fatalf("a replica delayed by 700ms showed the row after %v", d)
	}
	if err := r.SetApplyDelay(0); err != nil {
		t.Fatal(err)
	}

	if err := r.StopServer(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.SQL(ctx, "postgres", "select 1"); err == nil {
		t.Fatal("a stopped replica answered")
	}
	mustSQL(p, "insert into t values (3)")
	if err := r.StartServer(); err != nil {
		t.Fatal(err)
	}
	waitFor("3")
	if got := mustSQL(r, "select pg_is_in_recovery()"); !strings.HasPrefix(got, "t") {
		t.Fatalf("restarted replica pg_is_in_recovery() = %q", got)
	}
}
