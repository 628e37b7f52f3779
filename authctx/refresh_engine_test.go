package authctx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/gotrue"
	"github.com/tablegate/tablegate/internal/authstub"
)

// rfEngineTimeout is the refresh timeout of the engine tests whose auth
// server answers at once (or when released): generous, so that a loaded
// machine never turns an answer into a timeout.
const rfEngineTimeout = 30 * time.Second

// rfClock is a settable clock for the refresh tests.
type rfClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *rfClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *rfClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// rfTokenServer starts the stand-in auth server with h answering its token
// endpoint, and returns its project URL.
func rfTokenServer(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	s := authstub.Start(t, authstub.Config{APIKey: "k"})
	s.Hook("/token", func(w http.ResponseWriter, r *http.Request, _ http.Handler) { h(w, r) })
	return s.URL()
}

// rfCountingServer answers every refresh with body after waiting for
// release (when not nil), counting calls.
func rfCountingServer(t *testing.T, status int, body func(n int64) string, release <-chan struct{}) (string, *atomic.Int64) {
	t.Helper()
	var calls atomic.Int64
	url := rfTokenServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if release != nil {
			<-release
		}
		w.WriteHeader(status)
		io.WriteString(w, body(n))
	})
	return url, &calls
}

func TestRefresherSingleflightAndTTL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		status  int
		outcome gotrue.Outcome
	}{{"success", 200, gotrue.Success}, {"rejection", 400, gotrue.Rejected}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			srv, calls := rfCountingServer(t, tc.status, func(n int64) string {
				if tc.status != 200 {
					return `{"code":"refresh_token_not_found","message":"x"}`
				}
				return fmt.Sprintf(`{"access_token":"at-%d","token_type":"bearer","expires_in":3600,"expires_at":1,"refresh_token":"rt-%d"}`, n, n)
			}, release)
			clock := &rfClock{t: time.Unix(1700000000, 0)}
			f := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, rfEngineTimeout, clock.Now)

			burst := func() []gotrue.Result {
				var wg sync.WaitGroup
				out := make([]gotrue.Result, 100)
				for i := range out {
					wg.Add(1)
					go func() { defer wg.Done(); out[i] = f.refresh(context.Background(), "old-refresh-token", true) }()
				}
				return func() []gotrue.Result {
					// Let the one call through once every goroutine is waiting on it.
					deadline := time.Now().Add(5 * time.Second)
					for calls.Load() == 0 && time.Now().Before(deadline) {
						time.Sleep(time.Millisecond) // sleep: poll step of the bounded wait around it
					}
					// sleep: the other 99 callers join the call in flight; the refresher exposes no count of its waiters
					time.Sleep(20 * time.Millisecond)
					select {
					case <-release:
					default:
						close(release)
					}
					wg.Wait()
					return out
				}()
			}
			first := burst()
			if n := calls.Load(); n != 1 {
				t.Fatalf("first burst: %d calls, want 1", n)
			}
			for _, r := range first {
				if r.Outcome != tc.outcome || (tc.outcome == gotrue.Success && r.Parsed.AccessToken != "at-1") {
					t.Fatalf("burst result %v %v", r.Outcome, r.Err)
				}
			}
			clock.Add(9 * time.Second)
			second := burst()
			if n := calls.Load(); n != 1 {
				t.Fatalf("second burst within 10 s: %d calls, want still 1", n)
			}
			if second[0].Outcome != tc.outcome {
				t.Fatalf("cached outcome %v", second[0].Outcome)
			}
			clock.Add(time.Second) // 10 s after the first result
			third := burst()
			if n := calls.Load(); n != 2 {
				t.Fatalf("after 10 s: %d calls, want 2", n)
			}
			if tc.outcome == gotrue.Success && third[0].Parsed.AccessToken != "at-2" {
				t.Fatalf("after 10 s got %s", third[0].Parsed.AccessToken)
			}
		})
	}
}

// A failure is not cached as a result, but remembered with backoff: no
// call until it has passed, doubling per failure in a row, and the
// server's Retry-After on 429/503 when longer.
func TestRefresherFailuresBackOff(t *testing.T) {
	t.Parallel()
	srv, calls := rfCountingServer(t, 503, func(int64) string { return "down" }, nil)
	clock := &rfClock{t: time.Unix(1700000000, 0)}
	f := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, rfEngineTimeout, clock.Now)
	for i := 0; i < 3; i++ {
		if r := f.refresh(context.Background(), "t", true); r.Outcome != gotrue.Failed {
			t.Fatalf("outcome %v", r.Outcome)
		}
	}
	if calls.Load() != 1 || f.cacheLen() != 0 {
		t.Fatalf("calls %d, cached %d: want 1 call, nothing cached", calls.Load(), f.cacheLen())
	}
	clock.Add(RefreshBackoffMin)
	f.refresh(context.Background(), "t", true)
	clock.Add(RefreshBackoffMin) // the second failure doubled the wait
	f.refresh(context.Background(), "t", true)
	if calls.Load() != 2 {
		t.Fatalf("calls %d, want 2 (second backoff is 2x)", calls.Load())
	}
	// Another refresh token is not affected.
	f.refresh(context.Background(), "other", true)
	if calls.Load() != 3 {
		t.Fatalf("calls %d, want 3", calls.Load())
	}

	ra := rfTokenServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	g := newRefresher(&gotrue.Client{ProjectURL: ra, APIKey: "k"}, rfEngineTimeout, clock.Now)
	if r := g.refresh(context.Background(), "t", true); r.RetryAfter != 120*time.Second {
		t.Fatalf("Retry-After read as %v", r.RetryAfter)
	}
	clock.Add(RefreshBackoffMax + time.Second)
	if r := g.refresh(context.Background(), "t", true); !errors.Is(r.Err, errBackingOff) {
		t.Fatalf("within Retry-After: %v, want errBackingOff", r.Err)
	}
	clock.Add(90 * time.Second)
	if r := g.refresh(context.Background(), "t", true); errors.Is(r.Err, errBackingOff) {
		t.Fatal("after Retry-After: still backing off")
	}
}

func TestRefresherTimeoutAndCallerCancel(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	srv := rfTokenServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client leaving
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(block) }) // runs before the server closes
	f := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, 200*time.Millisecond, nil)
	start := time.Now()
	if r := f.refresh(context.Background(), "t", true); r.Outcome != gotrue.Failed {
		t.Fatalf("outcome %v", r.Outcome)
	}
	// The server never answers: without the timeout the call would last
	// until the test ends.
	if d := time.Since(start); d < 150*time.Millisecond || d > 10*time.Second {
		t.Fatalf("refresh took %v with a 200ms timeout", d)
	}
	// A caller whose context ends leaves at once; the shared call (here
	// with a 30 s timeout against a server that never answers) goes on.
	slow := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, 30*time.Second, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start = time.Now()
	if r := slow.refresh(ctx, "t2", true); r.Outcome != gotrue.Failed || !errors.Is(r.Err, context.DeadlineExceeded) {
		t.Fatalf("outcome %v %v", r.Outcome, r.Err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("a cancelled caller waited %v", d)
	}
}

func TestRefresherCacheIsBounded(t *testing.T) {
	t.Parallel()
	srv, _ := rfCountingServer(t, 400, func(int64) string { return `{}` }, nil)
	clock := &rfClock{t: time.Unix(1700000000, 0)}
	f := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, rfEngineTimeout, clock.Now)
	f.max = 5
	for i := 0; i < 12; i++ {
		f.refresh(context.Background(), fmt.Sprint("t", i), true)
	}
	if n := f.cacheLen(); n != 5 {
		t.Fatalf("cache holds %d, max 5", n)
	}
	clock.Add(RefreshResultTTL)
	f.refresh(context.Background(), "fresh", true)
	if n := f.cacheLen(); n != 1 {
		t.Fatalf("expired entries kept: %d", n)
	}
}

// TestRefresherGiveUpAsTheCallEnds: a request that gives up waiting just
// as the call ends must not mark the refresh token slow for good. It used
// to: the call recorded its failure (clearing the mark) and the request's
// mark came after it, so later requests with a still-valid token never
// sent another call. Each round lets a waiter's deadline fall around the
// end of a quick failing call, then checks that, once the backoff has
// passed, a request with a valid token sends a new call.
func TestRefresherGiveUpAsTheCallEnds(t *testing.T) {
	t.Parallel()
	srv, calls := rfCountingServer(t, 503, func(int64) string { return "down" }, nil)
	clock := &rfClock{t: time.Unix(1700000000, 0)}
	f := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, rfEngineTimeout, clock.Now)
	// How long one failing call takes here, to place the deadlines.
	start := time.Now()
	f.refresh(context.Background(), "probe", true)
	took := time.Since(start)
	for i := range 200 {
		tok := fmt.Sprint("t", i)
		wait := time.Duration(i%40) * took / 20 // 0 to 2x the call
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		f.refresh(ctx, tok, false)
		cancel()
		// Wait for the call to end: join it, or find its failure.
		f.refresh(context.Background(), tok, true)
		clock.Add(RefreshBackoffMax + time.Second)
		before := calls.Load()
		if r := f.refresh(context.Background(), tok, false); errors.Is(r.Err, context.DeadlineExceeded) {
			t.Fatalf("round %d (wait %v, call ~%v): a valid token's refresh skipped as slow after the call ended", i, wait, took)
		}
		if calls.Load() != before+1 {
			t.Fatalf("round %d: %d calls after the backoff, want 1", i, calls.Load()-before)
		}
	}
}
