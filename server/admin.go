package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/hostport"
	"github.com/tablegate/tablegate/problem"
)

// readyTimeout bounds each readiness check.
const readyTimeout = 2 * time.Second

// namedCheck is one named condition of the admin listener's /readyz.
type namedCheck struct {
	name  string
	check func(ctx context.Context) error
}

// readinessChecks are the conditions of the admin listener's /readyz:
// those of the public /readyz (readyCheck: the database answers — a busy
// pool is not down, see db.Ready — and the JWKS is loaded), each named,
// plus the database's tablegate migrations at least at the version this
// build embeds.
func readinessChecks(pool *pgxpool.Pool, rv *authctx.Resolver) []namedCheck {
	return []namedCheck{
		{"database", func(ctx context.Context) error { return databaseReady(ctx, pool) }},
		{"jwks", func(ctx context.Context) error { return jwksReady(rv) }},
		{"migrations", migrationsReady(pool)},
	}
}

// checkError is a readiness failure: reason is what /readyz shows, in
// words of its own (never a driver's message, which names the database,
// its user and its host); cause, the error behind it, goes to the log.
type checkError struct {
	reason string
	cause  error
}

func (e *checkError) Error() string { return e.reason }

func (e *checkError) Unwrap() error { return e.cause }

// databaseReady reports whether the database answers (db.Ready: a pool
// whose connections are all busy still counts as answering).
func databaseReady(ctx context.Context, pool *pgxpool.Pool) error {
	if err := db.Ready(ctx, pool); err != nil {
		return &checkError{"the database does not answer", err}
	}
	return nil
}

// jwksReady reports whether the resolver holds keys to verify with.
func jwksReady(rv *authctx.Resolver) error {
	if err := rv.Ready(); err != nil {
		return &checkError{"the signing keys (JWKS) are not loaded yet", err}
	}
	return nil
}

// migrationsRecheck is how often migrationsReady reads the version again
// once it has seen the expected one.
const migrationsRecheck = 30 * time.Second

// migrationsReady compares the database's migration version with the
// newest migration embedded in this build; see migrationsCheck.
func migrationsReady(pool *pgxpool.Pool) func(ctx context.Context) error {
	m := &migrationsCheck{pool: pool, recheck: migrationsRecheck, turn: make(chan struct{}, 1)}
	return m.check
}

// migrationsCheck reads the migration version over a connection of its
// own (not the requests' pool, which may be busy). Until it has
// seen the expected version, a probe reads it, one at a time, within the
// probe's deadline. Once seen, a probe never waits: it answers at once and,
// every recheck, starts a read in the background, which makes the check
// fail again only if it finds a version below the build's (a read that
// fails — every connection busy, the database down, which the database
// check reports — keeps the answer until the next recheck).
type migrationsCheck struct {
	pool    *pgxpool.Pool
	recheck time.Duration
	turn    chan struct{} // one read at a time

	mu   sync.Mutex
	okAt time.Time // when the expected version was last confirmed; zero: not yet
	p    *goose.Provider
}

func (m *migrationsCheck) check(ctx context.Context) error {
	m.mu.Lock()
	okAt := m.okAt
	m.mu.Unlock()
	if !okAt.IsZero() {
		if time.Since(okAt) >= m.recheck {
			go m.refresh()
		}
		return nil
	}
	select {
	case m.turn <- struct{}{}:
	case <-ctx.Done():
		return &checkError{"the migration version could not be read in time", ctx.Err()}
	}
	defer func() { <-m.turn }()
	if _, err := m.read(ctx); err != nil {
		var ce *checkError
		if errors.As(err, &ce) {
			return ce
		}
		return &checkError{"the migration version could not be read", err}
	}
	return nil
}

// refresh reads the version in the background, unless a read runs.
func (m *migrationsCheck) refresh() {
	select {
	case m.turn <- struct{}{}:
	default:
		return
	}
	defer func() { <-m.turn }()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	if behind, err := m.read(ctx); err != nil && !behind {
		m.mu.Lock()
		if !m.okAt.IsZero() {
			m.okAt = time.Now() // keep the answer; try again after recheck
		}
		m.mu.Unlock()
	}
}

// read reads the version (the caller holds a turn) and records the answer:
// behind reports a version below the build's.
func (m *migrationsCheck) read(ctx context.Context) (behind bool, err error) {
	if m.p == nil {
		// The provider reads over a pool of its own, of one connection
		// opened only while a read runs: a read never queues behind
		// requests that hold every connection of theirs (a busy server
		// is ready). It lives as long as the process.
		cfg := m.pool.Config()
		cfg.MaxConns, cfg.MinConns = 1, 0
		cfg.MaxConnIdleTime, cfg.HealthCheckPeriod = time.Second, time.Second
		own, err := pgxpool.NewWithConfig(context.Background(), cfg)
		if err != nil {
			return false, err
		}
		p, err := db.NewMigrator(own)
		if err != nil {
			own.Close()
			return false, err
		}
		m.p = p
	}
	var want int64
	for _, s := range m.p.ListSources() {
		want = max(want, s.Version)
	}
	got, err := m.p.GetDBVersion(ctx)
	if err != nil {
		if !errors.Is(err, goose.ErrNoMigrations) {
			return false, fmt.Errorf("read the migration version: %w", err)
		}
		got = 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if got < want {
		m.okAt = time.Time{}
		return true, &checkError{fmt.Sprintf("at version %d, this build expects %d (run: tablegate migrate up)", got, want), nil}
	}
	m.okAt = time.Now()
	return false, nil
}

// adminHandler serves /livez (the process answers), /readyz (every check
// passes: 200 with each check's status; else 503 problem+json naming the
// failing checks) and /metrics (Prometheus text format; 404 when metrics
// are off).
func adminHandler(checks []namedCheck, metrics http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	causes := make([]causeLog, len(checks))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		status := map[string]string{}
		var failed []string
		for i, c := range checks {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			err := c.check(ctx)
			cancel()
			causes[i].note(c.name, err)
			if err != nil {
				status[c.name] = "failing"
				why := "failing"
				var ce *checkError
				if errors.As(err, &ce) {
					why = ce.reason
				}
				failed = append(failed, c.name+": "+why)
				continue
			}
			status[c.name] = "ok"
		}
		if len(failed) > 0 {
			p := problem.New(problem.KindUnavailable, "Not ready: "+strings.Join(failed, "; ")+".").WithHeader("Retry-After", "1")
			problem.Write(w, p)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"status": "ready", "checks": status})
	})
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}
	return problemFallback(mux)
}

// causeLog logs what makes a readiness check fail (the driver's error,
// which /readyz does not show) each time it changes, not at every probe.
type causeLog struct {
	mu   sync.Mutex
	last string
}

func (c *causeLog) note(check string, err error) {
	var ce *checkError
	if errors.As(err, &ce) && ce.cause != nil {
		err = ce.cause
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	c.mu.Lock()
	changed := msg != c.last
	c.last = msg
	c.mu.Unlock()
	if changed && err != nil {
		slog.Warn("readiness check failing", "check", check, "error", msg)
	}
}

// startAdmin listens on addr and serves h until stop is called (which
// shuts down within 5 s).
func startAdmin(out io.Writer, addr string, h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener on %s: %w (is the port in use?)", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: time.Minute}
	go func() { _ = srv.Serve(ln) }()
	base := "http://" + hostport.Of(ln.Addr())
	fmt.Fprintf(out, "✓ admin on %s (/livez, /readyz, /metrics)%s\n", base, hostport.Everywhere(ln.Addr()))
	stop = func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return stop, nil
}
