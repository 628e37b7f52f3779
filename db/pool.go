package db

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// DefaultMaxConns returns the pool size tablegate uses when none is
// configured: eight connections per CPU this process may use
// (GOMAXPROCS), at least 16 and at most 64. A request holds its connection
// only while its statements run, so a few connections per core keep the
// CPUs busy while others wait on the network. Fewer make requests queue
// twice under load (for the pool in Go, then for a CPU): measured from
// outside on 2 CPUs (make bench-floor), 16 connections served the
// demo's GET about 15% faster than 8. Size the sum over every instance below the server's
// max_connections (docs/operations.md).
func DefaultMaxConns() int32 {
	n := 8 * runtime.GOMAXPROCS(0)
	return int32(min(max(n, 16), 64))
}

// ConfigurePool applies tablegate's pool defaults to cfg:
//
//   - A cancelled request context (a client that disconnects mid-query)
//     makes pgx send a cancel request to the server instead of closing the
//     connection, so a burst of disconnects does not empty the pool. The
//     connection is closed only when the server does not react within
//     five seconds.
//
// It leaves the pool size alone (see [DefaultMaxConns]). Call it on a
// config from [pgxpool.ParseConfig] before creating the pool, or use
// [NewPool].
func ConfigurePool(cfg *pgxpool.Config) {
	cfg.ConnConfig.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{
			Conn:               c,
			CancelRequestDelay: 0,
			DeadlineDelay:      5 * time.Second,
		}
	}
}

// NewPool opens a pool on url with [ConfigurePool]'s defaults.
func NewPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("db: parse url: %w", err)
	}
	ConfigurePool(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("db: open pool: %w", err)
	}
	return pool, nil
}

// acquire takes a pooled connection for the caller of share key, waiting
// at most the acquire timeout, first for a place in the caller's share
// (see Config.MaxConnsPerCaller), then for a connection.
func (d *DB) acquire(ctx context.Context, key callerKey) (lease, error) {
	actx := ctx
	if d.acquireTimeout > 0 {
		if err := ctx.Err(); err != nil {
			return lease{}, acquireErr(ctx, err)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d.acquireTimeout {
			// The request's own deadline comes first: it bounds the wait.
		} else {
			ac := newAcquireCtx(ctx, d.acquireTimeout)
			defer ac.release()
			actx = ac
		}
	}
	pl, err := d.shares.enter(actx, ctx, key, true)
	if err != nil {
		if ctx.Err() == nil {
			return lease{}, ErrCallerBusy
		}
		return lease{}, acquireErr(ctx, err)
	}
	d.shares.acquiring()
	conn, err := d.pool.Acquire(actx)
	if err != nil {
		d.shares.done()
		d.shares.leave(key, pl)
		return lease{}, acquireErr(ctx, err)
	}
	return lease{conn: conn, d: d, key: key, place: pl}, nil
}

// acquireErr names why no connection was acquired.
func acquireErr(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, puddle.ErrClosedPool):
		return ErrPoolClosed
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return ErrPoolBusy
	}
	return fmt.Errorf("db: acquire: %w", err)
}

// DefaultReadyTimeout bounds [Ready] when its context has no deadline.
const DefaultReadyTimeout = 2 * time.Second

// ErrNotReady wraps every error [Ready] returns.
var ErrNotReady = errors.New("db: the database does not answer")

// Ready reports whether the database behind pool answers: nil when it
// does, else an error wrapping [ErrNotReady]. It is what a readiness
// probe (/readyz) should call: a pool whose connections are all busy is
// NOT a database that is down, so Ready never queues behind requests.
// With an idle connection (or room to open one) it pings through the pool;
// when every connection is busy it opens one short-lived connection of its
// own (one at a time per pool, its answer shared by every call within a
// second), and a server that answers "too many connections" (SQLSTATE
// 53300) counts as answering. It waits at most ctx's deadline, or
// [DefaultReadyTimeout] without one. Safe for concurrent use.
func Ready(ctx context.Context, pool *pgxpool.Pool) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultReadyTimeout)
		defer cancel()
	}
	st := pool.Stat()
	if st.IdleConns() > 0 || st.TotalConns() < st.MaxConns() {
		// A short acquire: when the pool fills up meanwhile, fall through.
		actx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		conn, err := pool.Acquire(actx)
		cancel()
		if err == nil {
			defer conn.Release()
			if err := conn.Ping(ctx); err != nil {
				return fmt.Errorf("%w: %w", ErrNotReady, err)
			}
			return nil
		}
		if errors.Is(err, puddle.ErrClosedPool) {
			return fmt.Errorf("%w: %w", ErrNotReady, ErrPoolClosed)
		}
		if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrNotReady, err)
		}
	}
	// Saturated: ask the server directly, sharing the answer.
	return directProbes.ask(ctx, pool)
}

// directProbeTTL is how long the answer of a direct probe stands for
// every Ready call on the same pool.
const directProbeTTL = time.Second

// directProbes shares the connections Ready opens beside saturated pools:
// at most one in flight per pool, its answer reused for directProbeTTL, so
// that probes (a public /readyz among them) open at most about one
// connection a second whatever their rate, never one each.
var directProbes = probeTable{m: map[*pgxpool.Pool]*directProbe{}}

type probeTable struct {
	mu sync.Mutex
	m  map[*pgxpool.Pool]*directProbe // running probes and answers of the last directProbeTTL
}

// directProbe is one direct connection's answer, err set before done
// closes.
type directProbe struct {
	done chan struct{}
	err  error
}

func (t *probeTable) ask(ctx context.Context, pool *pgxpool.Pool) error {
	t.mu.Lock()
	p := t.m[pool]
	if p == nil {
		p = &directProbe{done: make(chan struct{})}
		t.m[pool] = p
		// The probe has its own bound, not the first caller's (which may
		// be short), and outlives a caller that gives up, so that every
		// caller of the next second gets a fair answer.
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultReadyTimeout)
		go func() {
			defer cancel()
			p.err = probe(pctx, pool)
			close(p.done)
			time.AfterFunc(directProbeTTL, func() {
				t.mu.Lock()
				if t.m[pool] == p {
					delete(t.m, pool)
				}
				t.mu.Unlock()
			})
		}()
	}
	t.mu.Unlock()
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", ErrNotReady, ctx.Err())
	}
}

// probe opens one connection of its own and pings through it.
func probe(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "53300" {
			return nil // it answers: it is full, not down
		}
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if err := conn.Ping(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return nil
}

// Ready reports whether the database answers; see the package function
// [Ready].
func (d *DB) Ready(ctx context.Context) error { return Ready(ctx, d.pool) }
