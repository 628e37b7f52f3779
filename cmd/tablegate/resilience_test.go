package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// slowTableSQL: a read policy of ~1 ms a row, so an unindexed list of the
// 20 000 rows runs for ~20 s unless a budget stops it.
const slowTableSQL = `
create function slow_visible(id int) returns boolean language plpgsql stable as
$$ begin perform pg_sleep(0.001); return true; end $$;
create table big (id int primary key, title text not null);
insert into big select g, 'row ' || g from generate_series(1, 20000) g;
alter table big enable row level security;
grant select on big to authenticated, anon;
create policy big_read on big for select using (slow_visible(id));
`

// startServe runs "tablegate serve" in-process on the config and flags,
// with a fresh signing key served inline (SUPABASE_JWKS) unless extra says
// otherwise; cancel is its SIGTERM. It returns the base URL, the exit
// channel and the signing keys.
func startServe(t *testing.T, dbURL string, cfg map[string]any, extra map[string]string, flags ...string) (string, context.CancelFunc, chan result, *keySet) {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if r := runCLI(t, nil, "keys", "new", "--path", keys); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ks, _ := loadKeyFile(keys)
	cfgPath := filepath.Join(dir, "tablegate.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	exit := make(chan result, 1)
	vars := map[string]string{"DATABASE_URL": dbURL, "SUPABASE_JWKS": string(ks.PublicJWKS())}
	for k, v := range extra {
		vars[k] = v
	}
	go func() {
		var out, errb syncBuffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
		code := run(ctx, e, append([]string{"serve", "--config", cfgPath, "--addr", addr}, flags...))
		exit <- result{code, out.String(), errb.String()}
	}()
	t.Cleanup(cancel)
	base := "http://" + addr
	waitLive(t, base, cancel, exit)
	return base, cancel, exit, ks
}

// waitLive waits until the server at base answers /livez; when it does
// not within 15 s it stops it and fails with its exit.
func waitLive(t *testing.T, base string, cancel context.CancelFunc, exit chan result) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(base + "/livez")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %v", <-exit)
		}
		time.Sleep(20 * time.Millisecond) // sleep: the poll step of the bounded wait for /livez
	}
}

type outcome struct {
	status     int
	retryAfter string
	body       string
	took       time.Duration
}

func fetchOutcome(url string) outcome { return fetchOutcomeTraced(url, nil) }

// fetchOutcomeTraced is fetchOutcome calling wrote (when not nil) once the
// request is on the wire.
func fetchOutcomeTraced(url string, wrote func()) outcome {
	start := time.Now()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return outcome{status: -1, body: err.Error()}
	}
	if wrote != nil {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			WroteRequest: func(httptrace.WroteRequestInfo) { wrote() }}))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return outcome{status: -1, body: err.Error(), took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return outcome{resp.StatusCode, resp.Header.Get("Retry-After"), string(b), time.Since(start)}
}

// Slow queries hold every pooled connection and more requests queue for
// one: /readyz stays green (a busy pool is not a database that is down);
// then SIGTERM: serve exits 0 within its shutdown limit, the running
// requests are cancelled and answer 503, and so do the queued ones —
// never a 500 "closed pool".
func TestServeSaturatedReadyAndShutdownWithinLimit(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), slowTableSQL); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{"tables": map[string]any{"big": map[string]any{
		"operations": []string{"list", "get"}, "guard": []string{"anon"}}}}
	const limit = 2 * time.Second
	adminAddr := freeAddr(t)
	base, sigterm, exit, _ := startServe(t, url, cfg, nil, "--db-max-conns", "2", "--db-max-conns-per-caller", "-1", "--admin-addr", adminAddr,
		"--statement-timeout", "60s", "--acquire-timeout", "30s", "--shutdown-timeout", limit.String())
	admin := "http://" + adminAddr
	// The admin /readyz is first asked once the pool is full (below): its
	// migrations check reads over a connection of its own.

	const n = 5 // 2 running, 3 queued for a connection
	var wg sync.WaitGroup
	outs := make([]outcome, n)
	written := make(chan struct{}, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = fetchOutcomeTraced(base+"/api/big?title=ilike.*zzz*", func() { written <- struct{}{} })
		}()
	}
	// Every request is on the wire and two lists run in Postgres (bounded
	// waits, not a guess). The /readyz round trip below then also proves
	// the server accepted all five connections before SIGTERM: it accepts
	// in arrival order, and /readyz's connection came last.
	for i := range n {
		select {
		case <-written:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d list requests sent after 20 s", i, n)
		}
	}
	// sleep: the poll step of the bounded wait for two lists running in Postgres
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var running int
		if err := pool.QueryRow(context.Background(), `select count(*) from pg_stat_activity
where datname = current_database() and pid <> pg_backend_pid() and state = 'active' and query ilike '%big%'`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d lists running in Postgres after 20 s, want 2 (the pool's size)", running)
		}
	}
	r := fetchOutcome(base + "/readyz")
	if r.status != 200 {
		t.Fatalf("/readyz with a saturated pool: %d %s, want 200 (busy is not down)", r.status, r.body)
	}
	if r.took > 2500*time.Millisecond {
		t.Fatalf("/readyz took %v with a saturated pool", r.took)
	}
	// The admin listener's /readyz too: its migrations check must not
	// queue behind the requests holding the pool.
	if r := fetchOutcome(admin + "/readyz"); r.status != 200 || r.took > 2500*time.Millisecond {
		t.Fatalf("admin /readyz with a saturated pool: %d in %v %s, want 200 (busy is not down)", r.status, r.took, r.body)
	}

	start := time.Now()
	sigterm()
	var res result
	select {
	case res = <-exit:
	case <-time.After(limit + 10*time.Second):
		t.Fatalf("serve did not exit within %v of SIGTERM (limit %v)", limit+10*time.Second, limit)
	}
	took := time.Since(start)
	wg.Wait()
	if res.code != 0 {
		t.Fatalf("exit code %d after SIGTERM, want 0; stderr:\n%s", res.code, res.stderr)
	}
	// Without the limit the lists would run ~20 s (statement timeout
	// 60 s); the slack covers cancelling them and closing the pool and
	// telemetry on a loaded machine.
	if took > limit+3*time.Second {
		t.Fatalf("shutdown took %v, limit %v", took, limit)
	}
	for i, o := range outs {
		if o.status != 503 || o.retryAfter == "" || !strings.Contains(o.body, `"unavailable"`) {
			t.Errorf("request %d during shutdown: %d Retry-After %q %s, want 503 unavailable with Retry-After", i, o.status, o.retryAfter, o.body)
		}
	}
	t.Logf("exit %d after %v (limit %v)", res.code, took.Round(time.Millisecond), limit)
}

// The CLI's pool uses db.ConfigurePool (a client that disconnects
// mid-query costs a cancel request, not a connection) and the
// machine-derived size unless told otherwise.
func TestCLIPoolUsesConfigurePool(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ctx := context.Background()
	pool, err := connectPool(ctx, url, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if pool.Config().ConnConfig.BuildContextWatcherHandler == nil {
		t.Fatal("the CLI's pool does not use db.ConfigurePool's cancel-request handler")
	}
	if got, want := pool.Config().MaxConns, db.DefaultMaxConns(); got != want {
		t.Fatalf("pool size %d, want db.DefaultMaxConns() = %d", got, want)
	}
	sized, err := connectPool(ctx, url, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sized.Close()
	if n := sized.Config().MaxConns; n != 3 {
		t.Fatalf("--db-max-conns 3 gave a pool of %d", n)
	}
}

// The JWKS is down when serve starts: /readyz is red and a valid token
// answers 503 (not a 401 that clients read as signed out); once the JWKS
// answers, the same token is accepted within seconds and /readyz is green.
func TestServeJWKSDownAtStartRecovers(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), slowTableSQL); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var jwks []byte // nil: down
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		b := jwks
		mu.Unlock()
		if b == nil {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	cfg := map[string]any{"auth": map[string]any{"jwks_url": srv.URL, "issuer": "*", "audience": "*"},
		"tables": map[string]any{"big": map[string]any{"operations": []string{"get"}, "guard": []string{"user"}}}}
	base, _, _, ks := startServe(t, url, cfg, map[string]string{"SUPABASE_JWKS": ""})
	tok, err := mintToken(ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	getBig := func() outcome {
		req, _ := http.NewRequest("GET", base+"/api/big/7", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return outcome{status: -1, body: err.Error()}
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return outcome{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: string(b)}
	}
	if r := fetchOutcome(base + "/readyz"); r.status != 503 || !strings.Contains(r.body, "signing keys") {
		t.Fatalf("/readyz with the JWKS down: %d %s, want 503 naming the signing keys", r.status, r.body)
	}
	if r := getBig(); r.status != 503 || r.retryAfter == "" {
		t.Fatalf("valid token with the JWKS down: %d %s, want 503 with Retry-After", r.status, r.body)
	}
	mu.Lock()
	jwks = ks.PublicJWKS()
	mu.Unlock()
	up := time.Now()
	for {
		r := getBig()
		if r.status == 200 {
			break
		}
		// Background retries back off to at most DefaultJWKSRetryMax
		// (2 s); the bound leaves a loaded machine room beyond that.
		if time.Since(up) > 10*time.Second {
			t.Fatalf("valid token still %d %s %v after the JWKS came back", r.status, r.body, time.Since(up))
		}
		time.Sleep(50 * time.Millisecond) // sleep: the poll step of the bounded wait for the valid token to be accepted
	}
	t.Logf("valid token accepted %v after the JWKS came back", time.Since(up).Round(time.Millisecond))
	if r := fetchOutcome(base + "/readyz"); r.status != 200 {
		t.Fatalf("/readyz after the keys loaded: %d %s", r.status, r.body)
	}
}
