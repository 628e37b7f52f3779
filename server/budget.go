package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// DatabaseConfig tunes the pool and the per-request database time budget
// (the "database" object of the serve config; flags override it).
type DatabaseConfig struct {
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

func (c *DatabaseConfig) validate() error {
	if c.MaxConns < 0 {
		return fmt.Errorf("database.max_conns: %d is negative", c.MaxConns)
	}
	if _, err := parseDurationField("database.statement_timeout", c.StatementTimeout); err != nil {
		return err
	}
	_, err := parseDurationField("database.acquire_timeout", c.AcquireTimeout)
	return err
}

// dbConfig is the db.Config of the time budget (the durations were
// validated with the config).
func (c *DatabaseConfig) dbConfig() *db.Config {
	st, _ := parseDurationField("", c.StatementTimeout)
	at, _ := parseDurationField("", c.AcquireTimeout)
	return &db.Config{StatementTimeout: st, AcquireTimeout: at, MaxConnsPerCaller: c.MaxConnsPerCaller}
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
