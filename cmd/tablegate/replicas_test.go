package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestDemoReplicaNeedsThrowawayCluster(t *testing.T) {
	t.Parallel()
	r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://127.0.0.1:1/x"}, "demo", "--replica")
	if r.code != exitUsage || !strings.Contains(r.stderr, "DATABASE_REPLICA_URLS") {
		t.Fatalf("demo --replica with DATABASE_URL: exit %d\n%s", r.code, r.stderr)
	}
	if r := runCLI(t, nil, "demo", "--help"); !strings.Contains(r.stdout, "--replica") {
		t.Fatalf("demo --help lacks --replica:\n%s", r.stdout)
	}
}

// TestServeReadReplicas: serve with read_replicas routes reads to the
// replica and answers writes with Tablegate-Position; a read carrying it
// sees the write. DATABASE_REPLICA_URLS wins over the config; an entry
// that does not parse is a usage error that does not echo the URL; a
// replica that does not answer is reported and serving goes on (reads
// on the primary).
func TestServeReadReplicas(t *testing.T) {
	rep := pgtest.StartReplicated(t)
	pool := pgtest.Pool(t, rep.PrimaryURL)
	if _, err := pool.Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"read_replicas": []string{rep.ReplicaURL},
		"tables":        map[string]any{"todos": map[string]any{"operations": []string{"list", "get", "create"}, "guard": []string{"user"}}},
	}
	base, cancel, exit, ks := startServe(t, rep.PrimaryURL, cfg, nil, "--admin-addr", "127.0.0.1:0")
	tok, err := mintToken(ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	call := func(method, path, body string, hdr ...string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for i := 0; i < 20; i++ {
		w := call("POST", "/api/todos", `{"title":"replicated"}`)
		pos := w.Header.Get("Tablegate-Position")
		if w.StatusCode != 201 || pos == "" {
			t.Fatalf("create: %d, position %q", w.StatusCode, pos)
		}
		if g := call("GET", w.Header.Get("Location"), "", "Tablegate-Position", pos); g.StatusCode != 200 {
			t.Fatalf("read after write carrying %s: %d", pos, g.StatusCode)
		}
	}
	cancel()
	r := <-exit
	if r.code != 0 || !strings.Contains(r.stderr, "1 read replica(s)") {
		t.Fatalf("serve with a replica: exit %d\n%s", r.code, r.stderr)
	}

	// A replica URL that does not parse: usage error, URL not echoed.
	bad := map[string]string{"DATABASE_URL": rep.PrimaryURL, "SUPABASE_JWKS": string(ks.PublicJWKS()),
		envReplicaURLs: "postgres://u:s3cret@h:notaport/x"}
	res := runCLI(t, bad, "serve", "--config", writeConfig(t, cfg))
	if res.code != exitUsage || !strings.Contains(res.stderr, "read replica 1") || strings.Contains(res.stderr, "s3cret") {
		t.Fatalf("bad replica URL: exit %d\n%s", res.code, res.stderr)
	}

	// A replica that does not answer: reported, serving goes on.
	base, cancel, exit, ks = startServe(t, rep.PrimaryURL, cfg, map[string]string{envReplicaURLs: "postgres://postgres@127.0.0.1:1/app?connect_timeout=1"})
	if tok, err = mintToken(ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if g := call("GET", "/api/todos", ""); g.StatusCode != 200 {
		t.Fatalf("list with the replica down: %d", g.StatusCode)
	}
	cancel()
	if r := <-exit; r.code != 0 || !strings.Contains(r.stderr, "does not answer yet") {
		t.Fatalf("serve with a dead replica: exit %d\n%s", r.code, r.stderr)
	}
}

// TestDemoReplica: "tablegate demo --replica" starts a replica beside its
// throwaway primary and prints a write followed by a read carrying the
// write's position, served by the replica or the primary.
func TestDemoReplica(t *testing.T) {
	bin := buildCLI(t)
	p := startDemo(t, bin, "--replica", "--admin-addr", "127.0.0.1:0")
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.out.String(), "served by") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // sleep: the poll step of the bounded wait for the demo's read line
	}
	out := p.out.String()
	i := strings.Index(out, "POST "+p.vars["BASE_URL"]+"/api/todos → 201, Tablegate-Position: ")
	j := strings.Index(out, "with Tablegate-Position: ")
	if i < 0 || j < i || !strings.Contains(out[j:], "→ 200, served by") {
		t.Fatalf("demo --replica output lacks the write and the read carrying its position:\n%s\nstderr:\n%s", out, p.err.String())
	}
	if !strings.Contains(p.err.String(), "streaming replica") {
		t.Fatalf("demo --replica did not say it started a replica:\n%s", p.err.String())
	}
	// The admin listener's metrics show reads per target.
	_, rest, ok := strings.Cut(p.err.String(), "admin on ")
	admin, _, _ := strings.Cut(rest, " ")
	if !ok || !strings.HasPrefix(admin, "http://") {
		t.Fatalf("no admin address in:\n%s", p.err.String())
	}
	res, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{`tablegate_db_reads_total{`, `tablegate_db_target="replica"`, `tablegate_db_target="primary"`,
		`tablegate_db_replica_lag_seconds{`, `tablegate_db_replica_in_rotation{`} {
		if !strings.Contains(string(body), want) {
			t.Fatalf("/metrics lacks %s:\n%s", want, body)
		}
	}
}

// writeConfig writes cfg as the JSON config file of a test.
func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(cfg)
	p := filepath.Join(t.TempDir(), "tablegate.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
