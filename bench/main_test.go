package bench

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Concurrency is the number of concurrent clients in every load benchmark.
const Concurrency = 64

// throughput runs fn from Concurrency goroutines for d and returns ops/s.
// Latencies of each call are recorded into lat when it is not nil.
func throughput(tb testing.TB, d time.Duration, fn func(ctx context.Context) error, lat *[]time.Duration) float64 {
	tb.Helper()
	ctx := context.Background()
	var ops atomic.Int64
	var mu sync.Mutex
	var failed atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []time.Duration
			for time.Now().Before(deadline) {
				t0 := time.Now()
				if err := fn(ctx); err != nil {
					failed.Store(err)
					return
				}
				if lat != nil {
					local = append(local, time.Since(t0))
				}
				ops.Add(1)
			}
			if lat != nil {
				mu.Lock()
				*lat = append(*lat, local...)
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		tb.Fatalf("benchmark call failed: %v", err)
	}
	return float64(ops.Load()) / time.Since(start).Seconds()
}

// compare measures floor and subject in alternating rounds and returns
// their mean throughputs. Alternation spreads machine drift over both.
func compare(tb testing.TB, rounds int, d time.Duration, floor, subject func(ctx context.Context) error) (float64, float64) {
	tb.Helper()
	throughput(tb, d/2, floor, nil) // warm both: prepared statements, pool
	throughput(tb, d/2, subject, nil)
	var f, s float64
	for range rounds {
		f += throughput(tb, d, floor, nil)
		s += throughput(tb, d, subject, nil)
	}
	return f / float64(rounds), s / float64(rounds)
}
