package db

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ConfigurePool applies tablegate's pool defaults to cfg:
//
//   - A cancelled request context (a client that disconnects mid-query)
//     makes pgx send a cancel request to the server instead of closing the
//     connection, so a burst of disconnects does not empty the pool. The
//     connection is closed only when the server does not react within
//     five seconds.
//
// Call it on a config from [pgxpool.ParseConfig] before creating the pool,
// or use [NewPool].
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
