package ratelimit

import (
	"fmt"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestLimitWindowAndGive(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1e9, 0)}
	l := New(Config{Limit: 3, Window: time.Minute, MaxKeys: 10, Now: c.now})
	for i := range 3 {
		if _, ok, _ := l.Take("a"); !ok {
			t.Fatalf("attempt %d refused", i+1)
		}
		c.add(time.Second)
	}
	_, ok, wait := l.Take("a")
	if ok || wait != 57*time.Second {
		t.Fatalf("4th attempt: ok %v, wait %v; want refused for 57s", ok, wait)
	}
	if _, ok, _ := l.Take("b"); !ok {
		t.Fatal("another key is refused")
	}
	c.add(56*time.Second + 500*time.Millisecond)
	if _, ok, wait := l.Take("a"); ok || wait != time.Second {
		t.Fatalf("half a second before the end: ok %v wait %v, want refused, at least 1s", ok, wait)
	}
	c.add(time.Second)
	tk, ok, _ := l.Take("a")
	if !ok {
		t.Fatal("refused after the window")
	}
	// Given back: the attempt does not count.
	l.Give(tk)
	for i := range 3 {
		if _, ok, _ := l.Take("a"); !ok {
			t.Fatalf("attempt %d after a give refused", i+1)
		}
	}
	if _, ok, _ := l.Take("a"); ok {
		t.Fatal("a give counted twice")
	}
	// A nil limiter limits nothing.
	var none *Limiter
	if _, ok, _ := none.Take("a"); !ok {
		t.Fatal("nil limiter refused")
	}
	none.Give(Ticket{})
}

// Concurrent attempts never pass the limit.
func TestConcurrentTakes(t *testing.T) {
	t.Parallel()
	l := New(Config{Limit: 10, Window: time.Hour, MaxKeys: 10})
	var wg sync.WaitGroup
	var mu sync.Mutex
	passed := 0
	for range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok, _ := l.Take("k"); ok {
				mu.Lock()
				passed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if passed != 10 {
		t.Fatalf("%d attempts passed, want 10", passed)
	}
}

// Memory stays bounded: ended windows go first, then the oldest.
func TestMaxKeys(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1e9, 0)}
	l := New(Config{Limit: 1, Window: time.Minute, MaxKeys: 100, Now: c.now})
	for i := range 10_000 {
		l.Take(fmt.Sprint(i))
		if l.Len() > 100 {
			t.Fatalf("%d keys tracked, bound 100", l.Len())
		}
	}
	// The newest keys are still limited.
	if _, ok, _ := l.Take("9999"); ok {
		t.Fatal("the newest key was forgotten")
	}
	c.add(time.Minute)
	l.Take("x")
	if l.Len() != 1 {
		t.Fatalf("%d keys after every window ended, want 1", l.Len())
	}
}

func TestClientAddr(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		remote, header, value, want string
	}{
		{"10.0.0.1:5000", "", "", "10.0.0.1"},
		{"10.0.0.1:5000", "", "203.0.113.9", "10.0.0.1"},                            // no header configured: never read
		{"10.0.0.1:5000", "X-Forwarded-For", "203.0.113.9", "203.0.113.9"},          // configured
		{"10.0.0.1:5000", "X-Forwarded-For", "1.1.1.1, 203.0.113.9", "203.0.113.9"}, // the proxy's entry is the last
		{"10.0.0.1:5000", "X-Forwarded-For", "", "10.0.0.1"},                        // absent: the proxy's address
		{"10.0.0.1:5000", "X-Forwarded-For", "1.1.1.1, not-an-ip", "10.0.0.1"},      // garbage: the proxy's address
		{"[2001:db8:1:2:3:4:5:6]:443", "", "", "2001:db8:1:2::/64"},                 // IPv6 by /64
		{"10.0.0.1:5000", "Fly-Client-IP", "[2001:db8::1]:9", "2001:db8::/64"},      // with a port
		{"10.0.0.1:5000", "X-Real-IP", "::ffff:203.0.113.9", "203.0.113.9"},         // mapped IPv4
		{"pipe", "", "", "pipe"},                                                    // not an address
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.value != "" {
			h := c.header
			if h == "" {
				h = "X-Forwarded-For"
			}
			r.Header.Set(h, c.value)
		}
		if got := ClientAddr(r, c.header); got != c.want {
			t.Errorf("%s %s=%q: %q, want %q", c.remote, c.header, c.value, got, c.want)
		}
	}
}

// A key gets fewer than 2×Limit attempts in any span of one window (19
// for 10 a minute), however it times them: steady, or one attempt that
// opens a window and then bursts at its end and at the next one's start.
func TestNoSpanOfOneWindowHoldsTwiceTheLimit(t *testing.T) {
	t.Parallel()
	burst := []time.Duration{59900 * time.Millisecond}
	for range 40 {
		burst = append(burst, 5*time.Millisecond)
	}
	for name, gaps := range map[string][]time.Duration{
		"every 10ms":  {10 * time.Millisecond},
		"every 250ms": {250 * time.Millisecond},
		"every 5.9s":  {5900 * time.Millisecond},
		"bursts":      burst,
	} {
		c := &clock{t: time.Unix(1e9, 0)}
		l := New(Config{Limit: 10, Window: time.Minute, MaxKeys: 10, Now: c.now})
		var passed []time.Time
		for i, end := 0, c.now().Add(10*time.Minute); c.now().Before(end); i++ {
			if _, ok, _ := l.Take("k"); ok {
				passed = append(passed, c.now())
			}
			c.add(gaps[i%len(gaps)])
		}
		most := 0
		for i := range passed {
			n := 0
			for j := i; j < len(passed) && passed[j].Sub(passed[i]) < time.Minute; j++ {
				n++
			}
			most = max(most, n)
		}
		if most >= 20 || most < 10 {
			t.Errorf("%s: at most %d attempts in one minute, want 10 to 19", name, most)
		} else {
			t.Logf("%s: at most %d attempts in one minute", name, most)
		}
	}
}
