// Package pgconnect opens the connection pools of tablegate's commands
// and server with its pool defaults, and says why a connection failed
// without quoting a password.
package pgconnect

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/telemetry"
)

// ErrInvalidURL is returned, wrapped with what is wrong, when a database
// URL cannot be parsed; the message never quotes the URL.
var ErrInvalidURL = errors.New("invalid database URL")

// Pool opens a pool with tablegate's pool defaults (db.ConfigurePool: a
// client that disconnects mid-query costs a cancel request, not a
// connection) and pings it. The size is maxConns, else the URL's
// pool_max_conns, else db.DefaultMaxConns(). tel instruments the pool: a
// span per round trip and the pool's metrics (nil: none).
func Pool(ctx context.Context, url string, maxConns int32, tel *telemetry.Telemetry) (*pgxpool.Pool, error) {
	cfg, err := Config(url, maxConns, tel)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, connectError(err, cfg)
	}
	if err := db.RecordPoolStats(pool, tel); err != nil {
		pool.Close()
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, connectError(err, cfg)
	}
	return pool, nil
}

// Config is the pool configuration Pool opens: url with tablegate's pool
// defaults, sized maxConns, else by the URL's pool_max_conns, else
// db.DefaultMaxConns(), and instrumented by tel (nil: not). A URL that
// does not parse fails with [ErrInvalidURL], without quoting it.
func Config(url string, maxConns int32, tel *telemetry.Telemetry) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrInvalidURL, Redact(err))
	}
	db.ConfigurePool(cfg)
	switch {
	case maxConns > 0:
		cfg.MaxConns = maxConns
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = db.DefaultMaxConns()
	}
	db.Instrument(cfg, tel)
	return cfg, nil
}

// connectError says why the pool of cfg could not connect and what to do
// (db.ExplainConnectError tells a missing database, a missing role, a
// refused password and a server that does not answer apart), never
// quoting the password.
func connectError(err error, cfg *pgxpool.Config) error {
	var ce *db.ConnectError
	if !errors.As(db.ExplainConnectError(err, &cfg.ConnConfig.Config), &ce) {
		return err
	}
	if ce.Cause == db.CauseUnreachable {
		ce.Problem = fmt.Sprintf("database unreachable: %s (database %s, user %s)", ce.Problem, cfg.ConnConfig.Database, cfg.ConnConfig.User)
	}
	return ce
}

// Redact hides a parse error that may quote the URL (and a password).
func Redact(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "@") || strings.Contains(msg, "password") {
		return "cannot parse the URL (check its syntax)"
	}
	return msg
}
