package integration

import (
	"context"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestIsolatedDatabase proves the harness hands out isolated, migrated
// databases and reports how long one takes (README quotes the figure).
func TestIsolatedDatabase(t *testing.T) {
	ctx := context.Background()
	pgtest.DB(t) // build the template once, outside the measurement
	const n = 5
	start := time.Now()
	for range n {
		pool := pgtest.DB(t)
		var ok bool
		if err := pool.QueryRow(ctx, "select to_regprocedure('tablegate.current_tenant_id()') is not null").Scan(&ok); err != nil || !ok {
			t.Fatalf("clone not migrated: %v", err)
		}
		if _, err := pool.Exec(ctx, "create table scratch (id int)"); err != nil {
			t.Fatal(err) // each clone is its own database: no clash
		}
	}
	t.Logf("one isolated migrated database: %v (mean of %d, incl. connect)", time.Since(start)/n, n)
}
