// Package ratelimit counts attempts per key in fixed windows, in memory
// and bounded, for the sign-in routes of tablegate and of its demo's
// stand-in auth server.
//
// A key's window opens with its first attempt and lasts Config.Window;
// once the key has had Config.Limit attempts in it, every further attempt
// is refused until the window ends. Over any span of one window a key
// therefore gets fewer than 2×Limit attempts. An attempt that turned out
// not to be a guess (a sign-in that succeeded) can be given back.
//
// At most Config.MaxKeys keys are tracked: windows that ended are
// forgotten first, then the oldest open one. Keys are hashed with a
// random seed, so an entry's size does not depend on the key.
package ratelimit

import (
	"container/list"
	"hash/maphash"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Config configures [New].
type Config struct {
	// Limit is how many attempts a key may make in one window (> 0).
	Limit int
	// Window is how long a key's window lasts from its first attempt (> 0).
	Window time.Duration
	// MaxKeys bounds the keys tracked at once (> 0).
	MaxKeys int
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Limiter counts attempts per key. Build it with [New]; a nil *Limiter
// limits nothing. Safe for concurrent use.
type Limiter struct {
	limit  int
	window time.Duration
	max    int
	now    func() time.Time
	seed   maphash.Seed

	mu    sync.Mutex
	keys  map[uint64]*list.Element // of *entry
	order *list.List               // entries by window start, oldest first
}

type entry struct {
	key   uint64
	start time.Time
	n     int
}

// New returns a limiter; a Limit, Window or MaxKeys of 0 or below panics
// (callers validate their configuration first).
func New(c Config) *Limiter {
	if c.Limit <= 0 || c.Window <= 0 || c.MaxKeys <= 0 {
		panic("ratelimit: Limit, Window and MaxKeys must be positive")
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	return &Limiter{limit: c.Limit, window: c.Window, max: c.MaxKeys, now: now, seed: maphash.MakeSeed(),
		keys: map[uint64]*list.Element{}, order: list.New()}
}

// Ticket is one counted attempt, for [Limiter.Give].
type Ticket struct {
	key   uint64
	start time.Time
	ok    bool
}

// Take counts one attempt of key. When the key has used its window's
// attempts it counts nothing and returns ok false with the time left
// until the window ends (at least one second).
func (l *Limiter) Take(key string) (t Ticket, ok bool, retryAfter time.Duration) {
	if l == nil {
		return Ticket{}, true, 0
	}
	h := maphash.String(l.seed, key)
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expire(now)
	el := l.keys[h]
	if el == nil {
		for l.order.Len() >= l.max {
			l.drop(l.order.Front())
		}
		el = l.order.PushBack(&entry{key: h, start: now})
		l.keys[h] = el
	}
	e := el.Value.(*entry)
	if e.n >= l.limit {
		wait := e.start.Add(l.window).Sub(now)
		if wait < time.Second {
			wait = time.Second
		}
		return Ticket{}, false, wait
	}
	e.n++
	return Ticket{key: h, start: e.start, ok: true}, true, 0
}

// Give takes back the attempt of t, when its window is still open: a
// sign-in that succeeded, or an auth server that did not answer, is no
// guess. A zero Ticket is ignored.
func (l *Limiter) Give(t Ticket) {
	if l == nil || !t.ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if el := l.keys[t.key]; el != nil {
		if e := el.Value.(*entry); e.start.Equal(t.start) && e.n > 0 {
			e.n--
		}
	}
}

// Len returns how many keys are tracked.
func (l *Limiter) Len() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// expire forgets the windows that ended (they are the oldest).
func (l *Limiter) expire(now time.Time) {
	for el := l.order.Front(); el != nil; el = l.order.Front() {
		if now.Before(el.Value.(*entry).start.Add(l.window)) {
			return
		}
		l.drop(el)
	}
}

func (l *Limiter) drop(el *list.Element) {
	delete(l.keys, el.Value.(*entry).key)
	l.order.Remove(el)
}

// ClientAddr returns the address a request's limit per client is keyed
// on: the last address in the header named trustedHeader (the one the
// proxy in front of the server wrote; earlier ones came from the client)
// when that header is set and holds an IP address, else the connection's
// remote address. An IPv6 address counts as its /64, which one client
// usually holds whole. With trustedHeader "" the header a client sends is
// never read.
func ClientAddr(r *http.Request, trustedHeader string) string {
	if trustedHeader != "" {
		if vs := r.Header.Values(trustedHeader); len(vs) > 0 {
			v := vs[len(vs)-1]
			if i := strings.LastIndexByte(v, ','); i >= 0 {
				v = v[i+1:]
			}
			if a, ok := parseAddr(strings.TrimSpace(v)); ok {
				return a
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if a, ok := parseAddr(host); ok {
		return a
	}
	return host
}

// parseAddr reads an IP address, alone or with a port ("[::1]:80",
// "1.2.3.4:80"), as a key: IPv4 whole, IPv6 as its /64.
func parseAddr(s string) (string, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			return "", false
		}
		a = ap.Addr()
	}
	a = a.Unmap().WithZone("")
	if a.Is4() {
		return a.String(), true
	}
	p, _ := a.Prefix(64)
	return p.String(), true
}
