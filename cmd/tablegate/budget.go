package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// databaseConfig tunes the pool and the per-request database time budget
// (the "database" object of the serve config; flags override it).
type databaseConfig struct {
	// MaxConns is the pool size (default db.DefaultMaxConns(): 8 per CPU,
	// 16..64).
	MaxConns int32 `json:"max_conns,omitempty"`
	// StatementTimeout bounds each statement of a request ("5s"; "-1s"
	// sets none and leaves the role's or server's value).
	StatementTimeout string `json:"statement_timeout,omitempty"`
	// AcquireTimeout bounds the wait for a free pooled connection ("2s").
	AcquireTimeout string `json:"acquire_timeout,omitempty"`
	// MaxConnsPerCaller bounds the connections one caller holds while
	// others wait (default half the pool; negative: no bound).
	MaxConnsPerCaller int `json:"max_conns_per_caller,omitempty"`
}

// parseDurationField parses a duration of the config, naming the field
// in the error.
func parseDurationField(field, v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %q is not a duration (e.g. \"5s\", \"500ms\")", field, v)
	}
	if d > 0 && d < time.Millisecond {
		return 0, fmt.Errorf("%s: %q is below 1ms", field, v)
	}
	return d, nil
}

func (c *databaseConfig) validate() error {
	if c.MaxConns < 0 {
		return fmt.Errorf("database.max_conns: %d is negative", c.MaxConns)
	}
	if _, err := parseDurationField("database.statement_timeout", c.StatementTimeout); err != nil {
		return err
	}
	_, err := parseDurationField("database.acquire_timeout", c.AcquireTimeout)
	return err
}

// budgetFlags are the pool, time budget and shutdown flags of serve and
// demo.
type budgetFlags struct {
	maxConns         int
	perCaller        int
	statementTimeout time.Duration
	acquireTimeout   time.Duration
	shutdownTimeout  time.Duration
}

// DefaultShutdownTimeout bounds a graceful shutdown.
const defaultShutdownTimeout = 10 * time.Second

func (b *budgetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&b.maxConns, "db-max-conns", 0, "database pool size `N` (default 8 per CPU, 16..64; or the URL's pool_max_conns)")
	fs.IntVar(&b.perCaller, "db-max-conns-per-caller", 0, "pooled connections one caller (a user, or every caller without a token together) may hold while others wait (a caller alone may use every idle connection); beyond it, on a full pool, the caller waits, then gets 429 (default half the pool; negative: no bound)")
	fs.DurationVar(&b.statementTimeout, "statement-timeout", 0, "time budget of each statement of a request, and of each pause a hook or action takes between them (default 5s; negative: none)")
	fs.DurationVar(&b.acquireTimeout, "acquire-timeout", 0, "longest wait for a free pooled connection before answering 503 (default 2s)")
	fs.DurationVar(&b.shutdownTimeout, "shutdown-timeout", defaultShutdownTimeout, "on SIGINT/SIGTERM, let running requests finish for this long, then cancel them")
}

func (b *budgetFlags) validate() error {
	if b.maxConns < 0 || b.maxConns > 10000 {
		return usagef("--db-max-conns must be between 1 and 10000")
	}
	if b.statementTimeout > 0 && b.statementTimeout < time.Millisecond {
		return usagef("--statement-timeout must be at least 1ms (negative: none)")
	}
	if b.shutdownTimeout <= 0 {
		return usagef("--shutdown-timeout must be positive")
	}
	return nil
}

// merge fills unset flags from the config's database object.
func (b *budgetFlags) merge(c databaseConfig) {
	if b.maxConns == 0 {
		b.maxConns = int(c.MaxConns)
	}
	if b.perCaller == 0 {
		b.perCaller = c.MaxConnsPerCaller
	}
	if b.statementTimeout == 0 {
		b.statementTimeout, _ = parseDurationField("", c.StatementTimeout)
	}
	if b.acquireTimeout == 0 {
		b.acquireTimeout, _ = parseDurationField("", c.AcquireTimeout)
	}
}

// dbConfig is the db.Config of the flags.
func (b *budgetFlags) dbConfig() *db.Config {
	return &db.Config{StatementTimeout: b.statementTimeout, AcquireTimeout: b.acquireTimeout, MaxConnsPerCaller: b.perCaller}
}

// readyCheck is the readiness of serve and demo: the database answers (a
// busy pool is not down; see db.Ready) and the resolver's signing keys are
// loaded. It returns nil when ready, else a problem saying what is missing.
// The admin listener's /readyz uses the same check.
func readyCheck(ctx context.Context, pool *pgxpool.Pool, rv *authctx.Resolver) *problem.Problem {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := db.Ready(ctx, pool); err != nil {
		return problem.New(problem.KindUnavailable, "The database does not answer.").WithHeader("Retry-After", "1")
	}
	if rv != nil {
		if err := rv.Ready(); err != nil {
			return problem.New(problem.KindUnavailable, "The signing keys (JWKS) are not loaded yet.").WithHeader("Retry-After", "1")
		}
	}
	return nil
}

// readyHandler answers /readyz with readyCheck.
func readyHandler(pool *pgxpool.Pool, rv *authctx.Resolver) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if p := readyCheck(r.Context(), pool, rv); p != nil {
			writeProblem(w, r, p)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}
