package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// BenchmarkHTTPWrk drives the floor, tablegate and PostgREST-style servers
// of the HTTP benchmark with wrk, a load generator in its own process (as
// DESIGN.md's facts were measured), so the client's cost is not charged to
// the servers' process and does not compress the ratios. Rounds alternate
// between the servers; metrics are the mean requests/s and the ratios.
//
// It needs wrk on PATH (Debian: apt-get install wrk) and reports an error
// naming it otherwise.
func BenchmarkHTTPWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Fatal("BenchmarkHTTPWrk needs wrk on PATH: apt-get install wrk")
	}
	fx := newHTTPFixture(b, setupItems(b))
	servers := []struct {
		name string
		h    http.Handler
	}{{"floor", fx.floor}, {"tablegate", fx.tablegate}, {"postgrest", fx.postgrest}}
	urls := map[string]string{}
	for _, s := range servers {
		srv := httptest.NewServer(s.h)
		b.Cleanup(srv.Close)
		urls[s.name] = srv.URL
	}
	for _, target := range []struct{ name, path string }{{"get", "/items/42"}, {"list", "/items/"}} {
		b.Run(target.name, func(b *testing.B) {
			for b.Loop() {
				rps := map[string]float64{}
				for round := range 4 {
					for i := range servers {
						s := servers[(i+round)%len(servers)]
						d := 2 * time.Second
						if round == 0 {
							d = time.Second // warm-up, not counted
						}
						v := runWrk(b, wrk, urls[s.name]+target.path, fx.token, d)
						if round > 0 {
							rps[s.name] += v / 3
						}
					}
				}
				for name, v := range rps {
					b.ReportMetric(v, name+"-req/s")
				}
				b.ReportMetric(rps["tablegate"]/rps["floor"], "ratio")
				b.ReportMetric(rps["tablegate"]/rps["postgrest"], "vs-postgrest")
				b.ReportMetric(loadavg(), "load-1m")
			}
		})
	}
}

var wrkRPS = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
var wrkErrors = regexp.MustCompile(`Non-2xx or 3xx responses: (\d+)|Socket errors: .*`)

// runWrk runs wrk with 64 connections for d and returns requests/s. Any
// non-2xx answer or socket error fails the benchmark: a server that
// refuses fast must not look fast.
func runWrk(b *testing.B, wrk, url, token string, d time.Duration) float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, wrk, "-t1", "-c64", fmt.Sprintf("-d%ds", int(d.Seconds())),
		"-H", "Authorization: Bearer "+token, url).CombinedOutput()
	if err != nil {
		b.Fatalf("wrk %s: %v\n%s", url, err, out)
	}
	if m := wrkErrors.FindSubmatch(out); m != nil {
		b.Fatalf("wrk %s reported errors: %s\n%s", url, m[0], out)
	}
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		b.Fatalf("wrk %s: no Requests/sec in\n%s", url, out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}
