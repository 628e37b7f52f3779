package pgtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgcluster"
)

// Replicated is a throwaway primary with one streaming replica, both on
// this machine (see [StartReplicated]).
type Replicated struct {
	// Primary and Replica are the two clusters: stop, start or delay the
	// replica through them (StopServer, StartServer, SetApplyDelay).
	Primary, Replica *pgcluster.Cluster
	// PrimaryURL and ReplicaURL connect as superuser to the migrated
	// database "app" on each.
	PrimaryURL, ReplicaURL string
}

// StartReplicated starts a throwaway primary of the test's own, creates
// and migrates database "app" on it, then starts a streaming replica of
// it with pg_basebackup -R and a second postmaster. Both stop, and their
// files go, when the test ends.
func StartReplicated(tb testing.TB) *Replicated {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := pgcluster.StartPrimary(ctx, tb.Logf)
	if err != nil {
		tb.Fatalf("pgtest: start a throwaway primary (needs initdb/pg_ctl/pg_basebackup: apt-get install postgresql): %v", err)
	}
	stopP := sync.OnceValue(p.Stop)
	tb.Cleanup(func() { _ = stopP() })
	if _, err := p.SQL(ctx, "postgres", "create database app"); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	rep := &Replicated{Primary: p, PrimaryURL: p.URLFor("app")}
	pool, err := pgxpool.New(ctx, rep.PrimaryURL)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	err = db.Migrate(ctx, pool)
	pool.Close()
	if err != nil {
		tb.Fatalf("pgtest: migrate: %v", err)
	}
	r, err := p.StartReplica(ctx, tb.Logf)
	if err != nil {
		tb.Fatalf("pgtest: start a replica: %v", err)
	}
	stopR := sync.OnceValue(r.Stop)
	tb.Cleanup(func() { _ = stopR() })
	rep.Replica, rep.ReplicaURL = r, r.URLFor("app")
	return rep
}
