package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// HTTP load settings: rounds of d per server, alternating.
const (
	httpRounds = 6
	httpRound  = time.Second
)

// loadSubject is one server under load in an alternating comparison.
type loadSubject struct {
	name    string
	fn      func(ctx context.Context) error
	rounds  []float64       // ops/s of each round
	lat     []time.Duration // every request's latency
	mallocs uint64          // process-wide mallocs during its rounds
	cpu     time.Duration   // process CPU time (user+system) during its rounds
	// backendCPU, when set, returns the CPU time used so far by the
	// Postgres backends the subject's statements run on; dbcpu sums it
	// over the subject's rounds.
	backendCPU func() time.Duration
	dbcpu      time.Duration
}

// alternate runs every subject for d per round, rotating which goes first,
// after a short warm-up of each (the compare helper's pattern, for three
// subjects, with latencies and process allocations).
func alternate(tb testing.TB, rounds int, d time.Duration, subs []*loadSubject) {
	tb.Helper()
	for _, s := range subs {
		throughput(tb, d/3, s.fn, nil)
	}
	var m0, m1 runtime.MemStats
	for r := range rounds {
		for i := range subs {
			s := subs[(i+r)%len(subs)]
			runtime.ReadMemStats(&m0)
			c0 := processCPU()
			var b0 time.Duration
			if s.backendCPU != nil {
				b0 = s.backendCPU()
			}
			s.rounds = append(s.rounds, throughput(tb, d, s.fn, &s.lat))
			s.cpu += processCPU() - c0
			if s.backendCPU != nil {
				s.dbcpu += s.backendCPU() - b0
			}
			runtime.ReadMemStats(&m1)
			s.mallocs += m1.Mallocs - m0.Mallocs
		}
	}
}

// ops returns the mean throughput over the rounds.
func (s *loadSubject) ops() float64 {
	sum := 0.0
	for _, v := range s.rounds {
		sum += v
	}
	return sum / float64(len(s.rounds))
}

// medianRatio returns the median over rounds of s's throughput divided by
// base's in the same round: a burst of load from other jobs that hits one
// round moves the mean ratio but hardly this.
func medianRatio(s, base *loadSubject) float64 {
	r := make([]float64, len(s.rounds))
	for i := range r {
		r[i] = s.rounds[i] / base.rounds[i]
	}
	return median(r)
}

// median returns the median of r (sorting it in place); 0 for none.
func median(r []float64) float64 {
	if len(r) == 0 {
		return 0
	}
	slices.Sort(r)
	if len(r)%2 == 1 {
		return r[len(r)/2]
	}
	return (r[len(r)/2-1] + r[len(r)/2]) / 2
}

// percentile returns the p-th percentile (0..1) of the subject's latencies.
func (s *loadSubject) percentile(p float64) time.Duration {
	if len(s.lat) == 0 {
		return 0
	}
	slices.Sort(s.lat)
	return s.lat[min(len(s.lat)-1, int(p*float64(len(s.lat))))]
}

func (s *loadSubject) report(b *testing.B) {
	b.ReportMetric(s.ops(), s.name+"-ops/s")
	b.ReportMetric(float64(s.percentile(0.50).Microseconds()), s.name+"-p50-µs")
	b.ReportMetric(float64(s.percentile(0.99).Microseconds()), s.name+"-p99-µs")
	// Client and server share the process: this counts both sides.
	b.ReportMetric(float64(s.mallocs)/float64(len(s.lat)), s.name+"-proc-allocs/req")
	b.ReportMetric(float64(s.cpu.Nanoseconds())/1e3/float64(len(s.lat)), s.name+"-proc-cpu-µs/req")
}

// processCPU returns the CPU time (user + system) this process has used.
// Per request it is steadier than throughput on a shared machine; it
// counts the load generator too, and never the Postgres backends.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// httpClient is the load generator's client: keep-alive, enough idle
// connections per host for every concurrent client, no proxy.
func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        4 * Concurrency,
		MaxIdleConnsPerHost: 2 * Concurrency,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}}
}

// getter returns a load function that GETs base+path(i) with the token and
// insists on 200.
func getter(c *http.Client, base, token string, path func() string) func(ctx context.Context) error {
	auth := "Bearer " + token
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path(), nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || n == 0 {
			return fmt.Errorf("GET %s: status %d, %d bytes", req.URL.Path, resp.StatusCode, n)
		}
		return nil
	}
}

// handlerAllocs returns the allocations of one request served by h alone,
// on an httptest.ResponseRecorder against the real database, after a
// warm-up request (token memo, prepared statements).
func handlerAllocs(tb testing.TB, h http.Handler, token, target string) float64 {
	tb.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	var code atomic.Int64
	run := func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		code.Store(int64(rec.Code))
	}
	run()
	if code.Load() != http.StatusOK {
		tb.Fatalf("GET %s: %d", target, code.Load())
	}
	a := testing.AllocsPerRun(200, run)
	if code.Load() != http.StatusOK {
		tb.Fatalf("GET %s: %d", target, code.Load())
	}
	return a
}

// recorderAllocs is what handlerAllocs counts for the recorder itself
// (a header and a body write), to be subtracted when comparing.
func recorderAllocs() float64 {
	body := []byte(`{"id":1}`)
	return testing.AllocsPerRun(200, func() {
		rec := httptest.NewRecorder()
		var w http.ResponseWriter = rec
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// helloHandler answers a fixed row without touching Postgres: its
// proc-cpu-µs/req is the harness's own cost per request (client, net/http
// server, loopback), common to every server measured.
func helloHandler() http.Handler {
	body := []byte(`{"id":42,"owner":"11111111-1111-4111-8111-111111111111","title":"item 42","done":true}`)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// loadavg returns the 1-minute load average, or -1.
func loadavg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return -1
	}
	return f
}

// BenchmarkHTTP serves GET /items/{id} and the first 50-row page of
// GET /items/ under RLS over HTTP on loopback, 64 concurrent keep-alive
// clients, from three servers in one process and one run (see
// http_fixture_test.go): the raw pgx floor, tablegate (authctx middleware
// with memo hits + rest.Resource) and a PostgREST-style server of four
// round trips, plus a hello handler (get) and two list prototypes (list).
// Rounds alternate between them.
//
// Metrics (per sub-benchmark get and list):
//   - <server>-ops/s, -p50-µs, -p99-µs: throughput and end-to-end latency;
//   - ratio = tablegate / floor mean throughput (targets: get ≥ 0.80,
//     list ≥ 0.70); ratio-median, the median of the per-round ratios;
//   - vs-postgrest = tablegate / postgrest (target for get: ≥ 1.5), and
//     vs-postgrest-median likewise;
//   - <server>-allocs/req: allocations of the handler alone
//     (testing.AllocsPerRun on a ResponseRecorder, real database), of which
//     recorder-allocs are the recorder's own;
//   - for list, <server>-allocs/row = allocs/req / 50 and
//     <server>-marginal-allocs/row = (allocs at limit 50 − at limit 10) / 40;
//   - <server>-proc-allocs/req and -proc-cpu-µs/req: runtime.MemStats
//     mallocs and process CPU time (getrusage) per request during the load
//     rounds, client and server together (one process), Postgres excluded;
//   - load-1m: the machine's 1-minute load average when the run ended;
//   - get only: hello-*, a handler answering a fixed row without Postgres:
//     the harness's own cost per request;
//   - list only: tglit-* and agglit-*, tablegate with the list statements
//     of the protoRepo prototypes (http_proto_test.go) sizing two fixes:
//     the page size as a literal (no re-planning on every execution), and
//     that plus json_agg over the page instead of a window and a sort.
//
// The ns/op, B/op and allocs/op columns of the go test output time the
// whole comparison and mean nothing.
func BenchmarkHTTP(b *testing.B) {
	fx := newHTTPFixture(b, setupItems(b))
	servers := map[string]http.Handler{"floor": fx.floor, "tablegate": fx.tablegate, "postgrest": fx.postgrest,
		"tglit": fx.protos["tglit"], "agglit": fx.protos["agglit"], "hello": helloHandler()}
	urls := map[string]string{}
	for name, h := range servers {
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		urls[name] = srv.URL
	}
	client := httpClient()
	b.Cleanup(client.CloseIdleConnections)

	var n atomic.Int64
	nextID := func() string { return "/items/" + strconv.FormatInt(n.Add(1)%10000+1, 10) }
	firstPage := func() string { return "/items/" }

	// run compares the servers named (floor, tablegate, postgrest first).
	run := func(b *testing.B, names []string, path func() string, targets [2]string, perRow bool) {
		var subs []*loadSubject
		for _, name := range names {
			subs = append(subs, &loadSubject{name: name, fn: getter(client, urls[name], fx.token, path)})
		}
		for b.Loop() {
			alternate(b, httpRounds, httpRound, subs)
		}
		floor, tg, pg := subs[0], subs[1], subs[2]
		for _, s := range subs {
			s.report(b)
		}
		b.ReportMetric(tg.ops()/floor.ops(), "ratio")
		b.ReportMetric(tg.ops()/pg.ops(), "vs-postgrest")
		b.ReportMetric(medianRatio(tg, floor), "ratio-median")
		b.ReportMetric(medianRatio(tg, pg), "vs-postgrest-median")
		for _, s := range subs[3:] {
			if s.name == "hello" {
				continue
			}
			b.ReportMetric(s.ops()/floor.ops(), s.name+"-ratio")
			b.ReportMetric(medianRatio(s, floor), s.name+"-ratio-median")
		}
		b.ReportMetric(recorderAllocs(), "recorder-allocs")
		for _, name := range names {
			a := handlerAllocs(b, servers[name], fx.token, targets[0])
			b.ReportMetric(a, name+"-allocs/req")
			if perRow {
				a10 := handlerAllocs(b, servers[name], fx.token, targets[1])
				b.ReportMetric(a/benchPage, name+"-allocs/row")
				b.ReportMetric((a-a10)/(benchPage-10), name+"-marginal-allocs/row")
			}
		}
		b.ReportMetric(loadavg(), "load-1m")
	}
	b.Run("get", func(b *testing.B) {
		run(b, []string{"floor", "tablegate", "postgrest", "hello"}, nextID, [2]string{"/items/42"}, false)
	})
	b.Run("list", func(b *testing.B) {
		run(b, []string{"floor", "tablegate", "postgrest", "tglit", "agglit"}, firstPage,
			[2]string{"/items/", "/items/?limit=10"}, true)
	})
}
