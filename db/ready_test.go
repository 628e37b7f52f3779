package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// Ready is green while Postgres answers and red, within its bound, once
// Postgres is stopped (its own throwaway cluster here, stopped for real).
func TestReadyRedWhenPostgresStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, stop := pgtest.Cluster(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(cfg)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := db.Ready(ctx, pool); err != nil {
		t.Fatalf("Ready with Postgres up: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = db.Ready(ctx, pool)
	if !errors.Is(err, db.ErrNotReady) {
		t.Fatalf("Ready with Postgres stopped: %v, want ErrNotReady", err)
	}
	if d := time.Since(start); d > db.DefaultReadyTimeout+time.Second {
		t.Fatalf("Ready took %v with Postgres stopped", d)
	}
}
