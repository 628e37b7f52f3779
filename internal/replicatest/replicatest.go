// Package replicatest holds what the read-replica tests of several
// packages share: waiting until a db.DB's replica has caught up.
package replicatest

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
)

// WaitReplayed waits until d's view of its first replica has replayed
// pos, or the primary's current position when pos is zero; after that
// the replica serves reads that carry pos. It gives up after 30 s.
func WaitReplayed(ctx context.Context, d *db.DB, primary *pgxpool.Pool, pos db.Position) error {
	if pos == 0 {
		var lsn string
		if err := primary.QueryRow(ctx, "select pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
			return err
		}
		var err error
		if pos, err = db.ParsePosition(lsn); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for d.ReplicaStats().Replicas[0].Replay < pos {
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica has not replayed %s within 30 s: %+v", pos, d.ReplicaStats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}
