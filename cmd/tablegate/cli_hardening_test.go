package main

import (
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/hostport"
	"github.com/tablegate/tablegate/server"
)

// TestPerCallerShareFromFlagAndConfig: --db-max-conns-per-caller and the
// config's database.max_conns_per_caller reach db.Config, the flag first.
func TestPerCallerShareFromFlagAndConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		conf int
		want int
	}{
		{nil, 0, 0},
		{nil, 3, 3},
		{[]string{"--db-max-conns-per-caller", "-1"}, 3, -1},
		{[]string{"--db-max-conns-per-caller", "5"}, 0, 5},
	} {
		var b budgetFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		b.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		dc := server.DatabaseConfig{MaxConnsPerCaller: tc.conf}
		b.apply(&dc)
		if got := dc.MaxConnsPerCaller; got != tc.want {
			t.Errorf("%v with config %d: MaxConnsPerCaller %d, want %d", tc.args, tc.conf, got, tc.want)
		}
	}
	c, err := server.ParseConfig([]byte(`{"database": {"max_conns_per_caller": 4}, "tables": {"todos": {}}}`), "tablegate.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Database.MaxConnsPerCaller != 4 {
		t.Errorf("config key read as %d", c.Database.MaxConnsPerCaller)
	}
}

// TestEverywhereNoted: a listener on every interface is said to be one.
func TestEverywhereNoted(t *testing.T) {
	for addr, want := range map[string]bool{"127.0.0.1:0": false, ":0": true, "0.0.0.0:0": true} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := hostport.Everywhere(ln.Addr()) != ""; got != want {
			t.Errorf("%s: noted %v, want %v", addr, got, want)
		}
		ln.Close()
	}
}

// TestOTLPHeadersRefusedWithoutTheirValue: a malformed
// OTEL_EXPORTER_OTLP_HEADERS is a usage error naming the variable and the
// entry, never echoing the value (the exporter would log it, credential
// included); well-formed headers pass.
func TestOTLPHeadersRefusedWithoutTheirValue(t *testing.T) {
	for _, v := range []string{"x-honeycomb-team: hcSECRETKEY123", "api-key=SECRET%zz", "=SECRET", "a=b,bad key=SECRET"} {
		env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": v}
		_, err := setupObservability(t.Context(), func(k string) string { return env[k] })
		if err == nil || !strings.Contains(err.Error(), "OTEL_EXPORTER_OTLP_HEADERS") || strings.Contains(err.Error(), "SECRET") {
			t.Errorf("%q: %v", v, err)
		}
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-a=1, x-b=two%20words,"}
	obs, err := setupObservability(t.Context(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("well-formed headers: %v", err)
	}
	obs.close()
}

// TestInitWritesNothingWhenKeysCannotSign: a kept signing keys file whose
// keys only verify fails init before it writes any file, so a rerun is
// not refused by its own half-written project.
func TestInitWritesNothingWhenKeysCannotSign(t *testing.T) {
	dir := t.TempDir()
	k, err := newSigningJWK()
	if err != nil {
		t.Fatal(err)
	}
	k.KeyOps = []string{"verify"}
	if err := os.MkdirAll(filepath.Join(dir, "supabase"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeKeyFile(filepath.Join(dir, "supabase", "signing_keys.json"), []jwk{k}); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "init", "--dir", dir, "--database-url", "postgres://postgres@127.0.0.1:5432/postgres")
	if r.code == 0 || !strings.Contains(r.stderr, "sign") {
		t.Fatalf("init with verify-only keys: %d %s", r.code, r.stderr)
	}
	for _, f := range []string{"tablegate.json", ".env", "db/migrations/00001_create_todos.sql"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s was written", f)
		}
	}
}

// TestObservabilityFromEnv: what serve and demo build from the OTEL_*
// variables: tracing only with an OTLP exporter (by default when an
// endpoint is set), metrics always for /metrics unless the SDK is
// disabled, OTLP pushes named in the start-up summary, and refusals of
// what is not supported.
func TestObservabilityFromEnv(t *testing.T) {
	const endpoint = "http://127.0.0.1:1"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		tracing bool
		metrics bool     // a meter provider and the /metrics handler
		summary []string // lines the summary holds
		errText string   // a refusal naming this
	}{
		{name: "nothing set", metrics: true},
		{name: "endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}, tracing: true, metrics: true,
			summary: []string{"traces → OTLP/HTTP", "metrics → OTLP/HTTP"}},
		{name: "traces endpoint only", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint}, tracing: true, metrics: true,
			summary: []string{"traces → OTLP/HTTP"}},
		{name: "exporters none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_TRACES_EXPORTER": "none",
			"OTEL_METRICS_EXPORTER": "none"}, metrics: true},
		{name: "sdk disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SDK_DISABLED": "TRUE"},
			summary: []string{"OpenTelemetry off (OTEL_SDK_DISABLED)"}},
		{name: "unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, errText: "zipkin"},
		{name: "grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			errText: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{name: "metrics json", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/json"},
			errText: "http/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs, err := setupObservability(t.Context(), func(k string) string { return tc.env[k] })
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("want a refusal naming %q, got %v", tc.errText, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer obs.close()
			if got := obs.tracerProvider != nil; got != tc.tracing {
				t.Errorf("tracing %v, want %v", got, tc.tracing)
			}
			if got := obs.meterProvider != nil && obs.metrics != nil; got != tc.metrics {
				t.Errorf("metrics %v, want %v", got, tc.metrics)
			}
			for _, s := range tc.summary {
				if !slices.Contains(obs.summary, s) {
					t.Errorf("summary %q lacks %q", obs.summary, s)
				}
			}
			if len(obs.summary) != len(tc.summary) {
				t.Errorf("summary %q, want %q", obs.summary, tc.summary)
			}
		})
	}
}
