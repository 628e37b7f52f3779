package db

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// txOn runs fn in a transaction on the connection of l.
func (d *DB) txOn(ctx context.Context, l lease, s settings, fn func(q Querier) error) (err error) {
	tq := &txQuerier{conn: l.conn, lease: l, s: s}
	if d.replicas != nil {
		tq.track = trackedPosition(ctx)
	}
	defer func() {
		if p := recover(); p != nil {
			tq.finish(ctx, false)
			panic(p)
		}
	}()
	err = fn(tq)
	if ferr := tq.finish(ctx, err == nil); err == nil {
		err = ferr
	}
	return err
}

// txQuerier begins its transaction lazily with the first statement. mu
// orders statements against finish: once finish has run, a Querier that
// escaped fn (a goroutine that outlives a hook) only ever gets errTxDone
// and never reaches the connection, which by then may serve another
// caller.
type txQuerier struct {
	mu      sync.Mutex
	conn    *pgxpool.Conn
	lease   lease // conn and the caller's place, given back by finish
	s       settings
	started bool
	done    bool
	track   *Position // where to record the commit's position; nil: nowhere
}

var errTxDone = errors.New("db: transaction already finished")

func (q *txQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done {
		return pgconn.CommandTag{}, errTxDone
	}
	if !q.started {
		q.started = true
		return execPrefixed(ctx, q.conn, true, q.s, sql, args)
	}
	return q.conn.Exec(ctx, sql, args...)
}

func (q *txQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done {
		return nil, errTxDone
	}
	if !q.started {
		q.started = true
		return queryPrefixed(ctx, q.conn, true, q.s, sql, args)
	}
	return q.conn.Query(ctx, sql, args...)
}

func (q *txQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := q.Query(ctx, sql, args...)
	return &prefixedRow{rows: rows, err: err}
}

// finish commits or rolls back and releases the connection. A connection
// whose transaction state is unknown is destroyed, never reused.
func (q *txQuerier) finish(ctx context.Context, commit bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.done {
		return nil
	}
	q.done = true
	defer q.lease.release() // pgxpool destroys a connection left inside a transaction
	if !q.started {
		return nil
	}
	// Finish even when the request context is gone: a half-open transaction
	// must not linger until the pool notices.
	fctx := context.WithoutCancel(ctx)
	if commit && q.track != nil {
		if err := commitTracked(fctx, q.conn, q.track); err != nil {
			return fmt.Errorf("db: commit: %w", err)
		}
		return nil
	}
	if commit {
		if _, err := q.conn.Exec(fctx, "commit"); err != nil {
			return fmt.Errorf("db: commit: %w", err)
		}
		return nil
	}
	_, _ = q.conn.Exec(fctx, "rollback")
	return nil
}
