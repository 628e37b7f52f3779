package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgcluster"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// serveFixture writes a serve config for public.todos (list and get,
// guard user) whose JWKS is served by a test server, and returns the
// config path and a user token for the demo's tenant A.
func serveFixture(t *testing.T, extra map[string]any) (cfgPath, token string) {
	t.Helper()
	cfgPath, ks := serveFixtureKeys(t, extra)
	token, err := mintToken(ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return cfgPath, token
}

// serveFixtureKeys is serveFixture returning the signing keys, to mint
// other tokens.
func serveFixtureKeys(t *testing.T, extra map[string]any) (cfgPath string, ks *keySet) {
	t.Helper()
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	k, err := newSigningJWK()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeKeyFile(keys, []jwk{k}); err != nil {
		t.Fatal(err)
	}
	ks, err = loadKeyFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.PublicJWKS()) }))
	t.Cleanup(jwks.Close)
	cfg := map[string]any{
		"base_path": "/v1",
		"auth":      map[string]any{"jwks_url": jwks.URL},
		"tables": map[string]any{
			"todos": map[string]any{"table": "public.todos", "operations": []string{"list", "get"},
				"select": []string{"id", "title", "done"}, "guard": []string{"user"}},
		},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	cfgPath = filepath.Join(dir, "tablegate.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, ks
}

// startServe runs serve in-process until the test ends and waits until
// both listeners answer.
func startServeOps(t *testing.T, dbURL string, args ...string) (out *syncBuffer) {
	t.Helper()
	out, cancel, done := launchServe(t, dbURL, args...)
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return out
}

// launchServe runs serve in-process and waits until it serves; cancel
// starts its shutdown and done receives its exit code. The caller stops
// it.
func launchServe(t *testing.T, dbURL string, args ...string) (out *syncBuffer, cancel context.CancelFunc, done chan int) {
	t.Helper()
	return launchServeEnv(t, map[string]string{"DATABASE_URL": dbURL}, args...)
}

// launchServeEnv is launchServe with the environment vars.
func launchServeEnv(t *testing.T, vars map[string]string, args ...string) (out *syncBuffer, cancel context.CancelFunc, done chan int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done = make(chan int, 1)
	go func() {
		e := &env{stdout: &syncBuffer{}, stderr: out, getenv: func(k string) string { return vars[k] }}
		done <- run(ctx, e, append([]string{"serve"}, args...))
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "✓ serving") {
		select {
		case code := <-done:
			cancel()
			t.Fatalf("serve exited with %d: %s", code, out.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond) // sleep: the poll step of the bounded wait for the ready line
	}
	return out, cancel, done
}

func getURL(t *testing.T, u string, header map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// scrape fetches /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, admin string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/metrics content type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses /metrics: %v", err)
	}
	return fams
}

// count sums a family's counter values or histogram sample counts over
// the series whose labels include want.
func count(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var n float64
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			if labels[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		switch {
		case m.Counter != nil:
			n += m.Counter.GetValue()
		case m.Histogram != nil:
			n += float64(m.Histogram.GetSampleCount())
		case m.Gauge != nil:
			n += m.Gauge.GetValue()
		}
	}
	return n
}

// TestServeAdminMetrics scrapes /metrics from a running serve over HTTP,
// parses it with the Prometheus text-format parser, and watches the
// counters move as requests are made; /livez and /readyz answer on the
// admin listener and none of the three on the public one.
func TestServeAdminMetrics(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	cfgPath, token := serveFixture(t, nil)
	addr, adminAddr := freeAddr(t), freeAddr(t)
	out := startServeOps(t, url, "--config", cfgPath, "--addr", addr, "--admin-addr", adminAddr)
	base, admin := "http://"+addr, "http://"+adminAddr
	// The admin listener starts with Serve, after the serving line.
	eventually(t, 10*time.Second, "the admin line: "+out.String(), func() bool { return strings.Contains(out.String(), "✓ admin on") })
	if code, _, body := getURL(t, admin+"/livez", nil); code != 200 {
		t.Errorf("/livez: %d %s", code, body)
	}
	if code, _, body := getURL(t, admin+"/readyz", nil); code != 200 || !strings.Contains(body, `"database":"ok"`) || !strings.Contains(body, `"migrations":"ok"`) || !strings.Contains(body, `"jwks":"ok"`) {
		t.Errorf("/readyz: %d %s", code, body)
	}
	if code, _, _ := getURL(t, base+"/metrics", nil); code != 404 {
		t.Errorf("/metrics on the public listener: %d, want 404", code)
	}
	// Another method is a Problem 405 with one Allow, on both listeners.
	for _, u := range []string{admin + "/livez", admin + "/readyz", base + "/livez", base + "/readyz"} {
		resp, err := http.Post(u, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if allow := resp.Header.Values("Allow"); resp.StatusCode != 405 || len(allow) != 1 || allow[0] != "GET, HEAD" ||
			resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("POST %s: %d Allow %q %s", u, resp.StatusCode, allow, resp.Header.Get("Content-Type"))
		}
	}
	if code, h, _ := getURL(t, admin+"/nope", nil); code != 404 || h.Get("Content-Type") != "application/problem+json" {
		t.Errorf("admin /nope: %d %s", code, h.Get("Content-Type"))
	}

	route := map[string]string{"http_route": "/v1/todos", "http_response_status_code": "200", "tablegate_operation": "list", "tablegate_caller_kind": "user"}
	before := scrape(t, admin)
	const n = 5
	auth := map[string]string{"Authorization": "Bearer " + token}
	for range n {
		if code, _, body := getURL(t, base+"/v1/todos/", auth); code != 200 {
			t.Fatalf("list: %d %s", code, body)
		}
	}
	if code, _, _ := getURL(t, base+"/v1/todos/", map[string]string{"Authorization": "Bearer not-a-token"}); code != 401 {
		t.Errorf("invalid token: %d", code)
	}
	after := scrape(t, admin)
	if d := count(after, "http_server_request_duration_seconds", route) - count(before, "http_server_request_duration_seconds", route); d != n {
		t.Errorf("request count for the list route moved by %v, want %d", d, n)
	}
	if d := count(after, "tablegate_auth_resolutions_total", map[string]string{"tablegate_caller_kind": "invalid", "tablegate_caller_reason": "token"}) -
		count(before, "tablegate_auth_resolutions_total", map[string]string{"tablegate_caller_kind": "invalid", "tablegate_caller_reason": "token"}); d != 1 {
		t.Errorf("invalid resolutions moved by %v, want 1", d)
	}
	if d := count(after, "tablegate_auth_memo_hits_total", nil) - count(before, "tablegate_auth_memo_hits_total", nil); d < n-1 {
		t.Errorf("memo hits moved by %v, want ≥ %d", d, n-1)
	}
	for _, name := range []string{"tablegate_auth_jwks_fetches_total", "tablegate_auth_memo_size", "pgxpool_acquires_total", "pgxpool_acquired_connections", "pgxpool_acquire_duration_nanoseconds_total"} {
		if _, ok := after[name]; !ok {
			var have []string
			for k := range after {
				have = append(have, k)
			}
			t.Errorf("no %s in /metrics (have %v)", name, have)
		}
	}
	// The access log line of a request: JSON with route, status, request
	// id and trace fields, no token.
	// The log is written from a queue of its own: wait for the line.
	var line map[string]any
	// sleep: the poll step of the bounded wait for the request's log line
	for deadline := time.Now().Add(10 * time.Second); line == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, `"msg":"request"`) && strings.Contains(l, `"status":401`) {
				_ = json.Unmarshal([]byte(l), &line)
			}
		}
	}
	for _, k := range []string{"time", "method", "route", "status", "duration_ms", "request_id", "caller_kind"} {
		if _, ok := line[k]; !ok {
			t.Errorf("access log line lacks %q: %v", k, line)
		}
	}
	if strings.Contains(out.String(), token) || strings.Contains(out.String(), demoUserID) {
		t.Error("the access log holds the token or the subject without --log-subject")
	}
}

// TestServeReadyzFollowsTheDatabase stops a throwaway cluster under a
// running serve: /readyz turns 503 naming the database, and 200 again
// once the cluster is back. (It never touches the shared server.)
func TestServeReadyzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := pgcluster.Start(ctx, t.Logf)
	if err != nil {
		t.Fatalf("throwaway cluster: %v (install postgresql: apt-get install postgresql)", err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	pool, err := pgxpool.New(ctx, cluster.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	pool.Close()
	cfgPath, _ := serveFixture(t, nil)
	adminAddr := freeAddr(t)
	startServeOps(t, cluster.URL, "--config", cfgPath, "--addr", freeAddr(t), "--admin-addr", adminAddr, "--access-log=false")
	admin := "http://" + adminAddr

	waitReady := func(want int) string {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			code, h, body := getURL(t, admin+"/readyz", nil)
			if code == want {
				if want == 503 && (h.Get("Content-Type") != "application/problem+json" || !strings.Contains(body, "database")) {
					t.Errorf("failing /readyz: %s %s", h.Get("Content-Type"), body)
				}
				// The reason is in words of its own, never the driver's
				// message naming the database, user and address.
				if want == 503 {
					u, _ := url.Parse(cluster.URL)
					for _, needle := range []string{"user=", "database=", u.Hostname(), u.Query().Get("host"), strings.TrimPrefix(u.Path, "/")} {
						if needle != "" && strings.Contains(body, needle) {
							t.Errorf("failing /readyz names the connection (%q): %s", needle, body)
						}
					}
				}
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz stayed %d (want %d): %s", code, want, body)
			}
			time.Sleep(100 * time.Millisecond) // sleep: the poll step of the bounded wait for the /readyz status
		}
	}
	waitReady(200)
	if err := cluster.StopServer(); err != nil {
		t.Fatal(err)
	}
	t.Logf("down: %s", waitReady(503))
	if code, _, _ := getURL(t, admin+"/livez", nil); code != 200 {
		t.Errorf("/livez while the database is down: %d, want 200", code)
	}
	if err := cluster.StartServer(); err != nil {
		t.Fatal(err)
	}
	waitReady(200)
}

// TestServeObservabilityConfigKeys sets the admin listener, the access
// log and the subject in it with the config file's keys instead of flags.
func TestServeObservabilityConfigKeys(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	adminAddr, addr := freeAddr(t), freeAddr(t)
	cfgPath, token := serveFixture(t, map[string]any{"admin_addr": adminAddr, "log_subject": true})
	out := startServeOps(t, url, "--config", cfgPath, "--addr", addr)
	if code, _, body := getURL(t, "http://"+adminAddr+"/livez", nil); code != 200 {
		t.Fatalf("admin_addr: /livez %d %s\n%s", code, body, out.String())
	}
	if code, _, body := getURL(t, "http://"+addr+"/v1/todos", map[string]string{"Authorization": "Bearer " + token}); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	waitFor(t, out, `"subject":"`+demoUserID+`"`)

	// access_log false: no request lines.
	addr2 := freeAddr(t)
	cfgPath2, token2 := serveFixture(t, map[string]any{"access_log": false})
	out2, cancel2, done2 := launchServe(t, url, "--config", cfgPath2, "--addr", addr2)
	defer cancel2()
	if code, _, body := getURL(t, "http://"+addr2+"/v1/todos", map[string]string{"Authorization": "Bearer " + token2}); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	// The access log is written from a queue, which serve flushes when it
	// stops: once it has, any request line would be out.
	cancel2()
	select {
	case <-done2:
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	if strings.Contains(out2.String(), `"msg":"request"`) {
		t.Errorf("access_log false still logs requests:\n%s", out2.String())
	}
}

// waitFor waits up to 5 s for out to contain s.
func waitFor(t *testing.T, out *syncBuffer, s string) {
	t.Helper()
	if !within(5*time.Second, func() bool { return strings.Contains(out.String(), s) }) {
		t.Fatalf("no %s in:\n%s", s, out.String())
	}
}
