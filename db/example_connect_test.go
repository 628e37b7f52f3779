package db_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
)

// A pool that cannot connect says why and what to do: here no server
// listens at the address.
func ExampleExplainConnectError() {
	cfg, _ := pgxpool.ParseConfig("postgres://app:secret@127.0.0.1:1/app?connect_timeout=2")
	ctx := context.Background()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		err = pool.Ping(ctx)
		pool.Close()
	}
	err = db.ExplainConnectError(err, &cfg.ConnConfig.Config)
	var ce *db.ConnectError
	if errors.As(err, &ce) {
		fmt.Println(ce.Cause)
		fmt.Println(ce.Problem)
		fmt.Println(ce.Fix)
	}
	// Output:
	// unreachable
	// no Postgres server answers at 127.0.0.1:1
	// start it (supabase start, or pg_ctl start / your service manager) or fix the host and port in the URL
}
