package db

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
)

// Tx runs fn in one transaction bound to the caller. BEGIN and the caller
// settings travel in the same round trip as fn's first statement; later
// statements run in the same transaction. The transaction commits when fn
// returns nil and rolls back when fn returns an error or panics (the panic
// is re-raised after the rollback). A fn that sends no statement costs no
// round trip at all.
//
// The Querier must not be used after fn returns (it then only returns an
// error) nor from several goroutines at once: a transaction is one
// connection, and statements on it run one after the other.
//
// Every statement runs under the statement timeout of [Config], and so
// does every pause between statements, with at least one second (while fn
// works in Go with the transaction open: past it, Postgres ends the
// transaction and the next statement or the commit fails with SQLSTATE
// 25P03). The wait for a pooled connection is bounded by
// Config.AcquireTimeout.
func (d *DB) Tx(ctx context.Context, c authctx.Caller, fn func(q Querier) error) (err error) {
	return d.TxWith(ctx, c, nil, fn)
}

// TxWith is [DB.Tx] with per-call options; opts may be nil.
func (d *DB) TxWith(ctx context.Context, c authctx.Caller, opts *ScopeOpts, fn func(q Querier) error) (err error) {
	s, err := d.settingsFor(c)
	if err != nil {
		return err
	}
	s.timeout = d.timeoutFor(opts)
	if opts != nil && opts.Unshared {
		s.key = callerKey{}
	}
	l, err := d.acquire(ctx, s.key)
	if err != nil {
		return err
	}
	return d.txOn(ctx, l, s, fn)
}

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
