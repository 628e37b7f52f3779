package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// otlpReceiver is an OTLP/HTTP receiver that decodes what it gets with
// the OTLP protobuf types.
type otlpReceiver struct {
	mu      sync.Mutex
	traces  []*colltrace.ExportTraceServiceRequest
	metrics []*collmetrics.ExportMetricsServiceRequest
	bad     []string
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	o.mu.Lock()
	defer o.mu.Unlock()
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		o.bad = append(o.bad, r.URL.Path+": content type "+ct)
	}
	switch r.URL.Path {
	case "/v1/traces":
		var req colltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			o.bad = append(o.bad, "traces: "+err.Error())
		}
		o.traces = append(o.traces, &req)
		b, _ := proto.Marshal(&colltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	case "/v1/metrics":
		var req collmetrics.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			o.bad = append(o.bad, "metrics: "+err.Error())
		}
		o.metrics = append(o.metrics, &req)
		b, _ := proto.Marshal(&collmetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	default:
		o.bad = append(o.bad, "unexpected path "+r.URL.Path)
		http.NotFound(w, r)
	}
}

// TestServeExportsOTLP runs the built binary's serve with no telemetry
// configuration but OTEL_EXPORTER_OTLP_ENDPOINT pointing at a receiver
// started by the test, makes requests, stops it (the exporters flush on
// shutdown) and decodes what arrived: spans for the request's route and
// its Postgres round trip, and the request metrics, from service
// "tablegate".
func TestServeExportsOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	t.Parallel()
	rcv := &otlpReceiver{}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	base, token, sigterm := startServeBinary(t, srv.URL)
	auth := map[string]string{"Authorization": "Bearer " + token}
	code, _, body := getURL(t, base+"/v1/todos/", auth)
	if code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	if code, _, body := getURL(t, base+"/v1/todos/1", auth); code != 200 && code != 404 {
		t.Fatalf("get: %d %s", code, body)
	}
	if _, err := sigterm(20 * time.Second); err != nil {
		t.Fatal(err)
	}

	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.bad) > 0 {
		t.Errorf("receiver: %v", rcv.bad)
	}
	spans := map[string]bool{}
	service := ""
	for _, req := range rcv.traces {
		for _, rs := range req.ResourceSpans {
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					spans[s.Name] = true
				}
			}
		}
	}
	for _, want := range []string{"GET /v1/todos", "GET /v1/todos/{id}", "tablegate.resolve", "batch start"} {
		if !spans[want] {
			t.Errorf("no exported span %q (got %v)", want, spans)
		}
	}
	if service != "tablegate" {
		t.Errorf("service.name %q", service)
	}
	metrics := map[string]bool{}
	for _, req := range rcv.metrics {
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					metrics[m.Name] = true
				}
			}
		}
	}
	for _, want := range []string{"http.server.request.duration", "tablegate.auth.resolutions"} {
		if !metrics[want] {
			t.Errorf("no exported metric %q (got %v)", want, metrics)
		}
	}
}

// startServeBinary runs the built binary's serve on the demo schema in a
// database of its own, with OTEL_EXPORTER_OTLP_ENDPOINT set to endpoint
// (no other OTEL_ variable), and returns its base URL, a user's token, and
// a stop that sends SIGTERM and waits up to limit for a clean exit,
// returning how long it took.
// serveBinaryCommand prepares the built CLI's serve (behind the command
// prefix, e.g. nohup) on a fresh database with the demo schema, on a free
// address; it returns the command (not started), the address and a user's
// token. The environment is the test's, without OTEL_ variables.
func serveBinaryCommand(t *testing.T, prefix []string, flags ...string) (cmd *exec.Cmd, addr, token string) {
	t.Helper()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	cfgPath, token := serveFixture(t, nil)
	addr = freeAddr(t)
	args := append(append(append([]string(nil), prefix...), buildCLI(t), "serve", "--config", cfgPath, "--addr", addr), flags...)
	cmd = exec.Command(args[0], args[1:]...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "DATABASE_URL="+url)
	return cmd, addr, token
}

func startServeBinary(t *testing.T, endpoint string, flags ...string) (string, string, func(limit time.Duration) (time.Duration, error)) {
	t.Helper()
	cmd, addr, token := serveBinaryCommand(t, nil, flags...)
	cmd.Env = append(cmd.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	if !within(30*time.Second, func() bool { return strings.Contains(stderr.String(), "✓ serving") }) {
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	stop := func(limit time.Duration) (time.Duration, error) {
		start := time.Now()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			stopped = true
			if err != nil {
				return time.Since(start), fmt.Errorf("serve: %w\n%s", err, stderr.String())
			}
			return time.Since(start), nil
		case <-time.After(limit):
			return limit, fmt.Errorf("serve did not stop within %v of SIGTERM", limit)
		}
	}
	return "http://" + addr, token, stop
}

// With a collector that accepts connections and never answers, SIGTERM
// still ends serve within its shutdown limit plus the telemetry flush
// bound: the exporters' own timeouts and retries (a minute or more) do not
// hold the process.
func TestServeStopsWithHangingCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	t.Parallel()
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	base, token, stop := startServeBinary(t, srv.URL, "--shutdown-timeout", "1s")
	if code, _, body := getURL(t, base+"/v1/todos/", map[string]string{"Authorization": "Bearer " + token}); code != 200 {
		t.Fatalf("list: %d %s", code, body)
	}
	took, err := stop(40 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// 1 s of shutdown, telemetryFlushTimeout for the exporters, and slack
	// for a loaded machine; without the bound it took over a minute.
	if limit := time.Second + telemetryFlushTimeout + 4*time.Second; took > limit {
		t.Fatalf("serve took %v to stop with a hanging collector, want < %v", took, limit)
	}
}
