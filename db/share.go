package db

import (
	"context"
	"sync"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/authctx"
)

// shares bounds the pooled connections each caller holds at once, so that
// one caller's slow requests (a list no index serves, a flood of them)
// leave connections for everybody else. A caller over its share waits for
// one of its own connections, within the acquire timeout.
type shares struct {
	max   int // connections per caller
	mu    sync.Mutex
	slots map[callerKey]*share
}

// callerKey names the share a caller draws on; the zero value (service
// callers) draws on none.
type callerKey struct {
	kind authctx.ActorType // ActorUser or ActorAnon; "" for none
	id   string            // the user id
}

// share is one caller's semaphore, kept while any request of the caller
// holds or waits for a connection.
type share struct {
	sem  chan struct{}
	refs int
}

// newShares returns the bound of [Config.MaxConnsPerCaller] over pool, nil
// for none.
func newShares(pool *pgxpool.Pool, n int) *shares {
	if n < 0 || (n == 0 && pool == nil) {
		return nil
	}
	if n == 0 {
		n = max(int(pool.Config().MaxConns)/2, 1)
	}
	return &shares{max: n, slots: map[callerKey]*share{}}
}

// shareKey names the share a caller draws on: a user by id, every caller
// without a token together; none for service callers, which are the
// server's own.
func shareKey(c authctx.Caller) callerKey {
	switch c.Actor.Type {
	case authctx.ActorUser:
		return callerKey{kind: authctx.ActorUser, id: c.Actor.ID}
	case authctx.ActorService:
		return callerKey{}
	default:
		return callerKey{kind: authctx.ActorAnon}
	}
}

// enter takes one of key's places, waiting until ctx is done. It returns
// nil (and takes nothing) for an unbounded key or DB.
func (s *shares) enter(ctx context.Context, key callerKey) (*share, error) {
	if s == nil || key.kind == "" {
		return nil, nil
	}
	s.mu.Lock()
	sh := s.slots[key]
	if sh == nil {
		sh = &share{sem: make(chan struct{}, s.max)}
		s.slots[key] = sh
	}
	sh.refs++
	s.mu.Unlock()
	select {
	case sh.sem <- struct{}{}:
		return sh, nil
	default:
	}
	select {
	case sh.sem <- struct{}{}:
		return sh, nil
	case <-ctx.Done():
		s.drop(key, sh)
		return nil, ctx.Err()
	}
}

// leave gives back a place taken by enter.
func (s *shares) leave(key callerKey, sh *share) {
	if sh == nil {
		return
	}
	<-sh.sem
	s.drop(key, sh)
}

func (s *shares) drop(key callerKey, sh *share) {
	s.mu.Lock()
	if sh.refs--; sh.refs == 0 {
		delete(s.slots, key)
	}
	s.mu.Unlock()
}

// lease is a pooled connection and the caller's place it holds.
type lease struct {
	conn  *pgxpool.Conn
	d     *DB
	key   callerKey
	share *share
}

// release gives back the connection, then the caller's place.
func (l *lease) release() {
	l.conn.Release()
	l.d.shares.leave(l.key, l.share)
}

// Hold takes one place in c's share of the pool (Config.MaxConnsPerCaller)
// and keeps it until release is called, waiting for it until ctx is done.
// It is for the server's own work on a caller's behalf that must count
// against the caller's share like the caller's requests, such as an events
// stream replaying the outbox: run that work with [ScopeOpts.Unshared] (or
// as a service caller) while holding the place, so that it holds at most
// one pooled connection at a time per place. For service callers, or
// without a bound per caller, it takes nothing and returns at once.
// release is safe to call more than once.
func (d *DB) Hold(ctx context.Context, c authctx.Caller) (release func(), err error) {
	key := shareKey(c)
	sh, err := d.shares.enter(ctx, key)
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { d.shares.leave(key, sh) }) }, nil
}

// PerCaller returns the number of pooled connections one caller may hold
// at once (Config.MaxConnsPerCaller as resolved), 0 for no bound.
func (d *DB) PerCaller() int {
	if d.shares == nil {
		return 0
	}
	return d.shares.max
}
