package events_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// flakyProxy forwards TCP connections to Postgres; while down it closes
// the connections it carries and every new one at once (counting them),
// as a database that crashed and refuses connections while it recovers.
type flakyProxy struct {
	l      net.Listener
	target string

	mu       sync.Mutex
	down     bool
	conns    map[net.Conn]struct{}
	attempts atomic.Int64 // connections refused while down
}

func newFlakyProxy(t *testing.T, target string) *flakyProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &flakyProxy{l: l, target: target, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { l.Close(); p.setDown(true) })
	go p.serve()
	return p
}

func (p *flakyProxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			p.attempts.Add(1)
			c.Close()
			continue
		}
		p.mu.Unlock()
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[s] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go func() { _, _ = io.Copy(s, c); s.Close(); c.Close() }()
		go func() { _, _ = io.Copy(c, s); s.Close(); c.Close() }()
	}
}

func (p *flakyProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// countingHandler counts log records (and keeps their messages).
type countingHandler struct {
	mu   sync.Mutex
	msgs []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.msgs = append(h.msgs, r.Level.String()+" "+r.Message)
	h.mu.Unlock()
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.msgs)
}
func (h *countingHandler) since(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs[n:]...)
}

// TestHubOutageBacksOffAndLogsOnce: during a 10 s outage of the database
// (every connection of the hub cut, new ones refused) under write load,
// the hub retries with backoff (a bounded number of connection attempts,
// not one per loop) and logs each failing operation once, then once
// more when it works again; delivery resumes where it stopped.
func TestHubOutageBacksOffAndLogsOnce(t *testing.T) {
	t.Parallel()
	t.Run("every connection", func(t *testing.T) { t.Parallel(); hubOutage(t, false) })
	// The listening connection stays up and receives a notification per
	// write while the pool's connections fail: each wake must not become
	// an immediate retry and a log line (1 007 warnings a second, before).
	t.Run("pool only, listener up", func(t *testing.T) { t.Parallel(); hubOutage(t, true) })
}

func hubOutage(t *testing.T, listenerUp bool) {
	u := pgtest.URL(t)
	direct := pgtest.Pool(t, u)
	ctx := context.Background()
	if _, err := direct.Exec(ctx, `create table pe (id int generated always as identity primary key, v int);
grant all on pe to service_role; select tablegate.enable_events('pe')`); err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newFlakyProxy(t, pu.Host)
	pu.Host = proxy.l.Addr().String()
	cfg, err := pgxpool.ParseConfig(pu.String())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.ConnectTimeout = time.Second
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	logs := &countingHandler{}
	hc := &events.Config{DB: db.New(pool, nil), PollInterval: 100 * time.Millisecond, Logger: slog.New(logs)}
	if listenerUp {
		lc, err := pgx.ParseConfig(u)
		if err != nil {
			t.Fatal(err)
		}
		hc.ListenConfig = lc
	}
	h, err := events.New(ctx, hc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	outbox := func() int64 {
		var n int64
		if err := direct.QueryRow(ctx, `select count(*) from tablegate.events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	waitHead := func(what string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) { // sleep: poll step of the bounded wait around it
			want := outbox()
			if h.Stats().Head >= want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the hub read %d of %d events", what, h.Stats().Head, want)
			}
		}
	}
	// Write load throughout, straight to Postgres.
	stop := make(chan struct{})
	writer := make(chan struct{})
	go func() {
		defer close(writer)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_, _ = direct.Exec(ctx, `insert into pe (v) values (1)`)
		}
	}()
	time.Sleep(300 * time.Millisecond) // sleep: the writer runs for a while before the outage
	waitHead("before the outage")
	before := logs.count()

	proxy.setDown(true)
	time.Sleep(10 * time.Second) // sleep: the outage lasts 10 s: its length is the subject
	during := logs.since(before)
	attempts := proxy.attempts.Load()
	proxy.setDown(false)
	close(stop)
	<-writer
	waitHead("after the outage")
	time.Sleep(300 * time.Millisecond) // sleep: a window for recovery lines to appear; the check below bounds their number from above
	after := logs.since(before)

	t.Logf("10 s outage: %d connection attempts refused; %d log lines during it, %d in all: %q", attempts, len(during), len(after), after)
	if len(during) == 0 {
		t.Error("the outage was not logged")
	}
	// Each background operation (listen, number, read, check, prune)
	// logs its failure once and its recovery once.
	if len(during) > 5 || len(after) > 10 {
		t.Errorf("%d log lines during a 10 s outage, %d in all; want each failing operation logged once: %q", len(during), len(after), after)
	}
	// Backoff: 100 ms doubling to 5 s is about 8 rounds in 10 s, each
	// a few connection attempts (the listener's, the pool's).
	if attempts < 3 || attempts > 60 {
		t.Errorf("%d connection attempts in a 10 s outage; want a few per backoff round (about 8 rounds)", attempts)
	}
}
