package db

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
)

// shares bounds the pooled connections each caller holds while others
// wait, so that one caller's slow requests (a list no index serves, a
// flood of them) leave connections for everybody else. The bound is
// work-conserving: a caller over its share still takes a connection
// nobody else wants (one is idle and no request is queued for one);
// once the pool is full, a caller over its share waits for one of its own
// connections, within the acquire timeout, and the connections coming
// back go to the others queued for them.
type shares struct {
	max      int          // connections per caller while others wait
	poolMax  int64        // the pool's size
	inflight atomic.Int64 // requests holding or queued for a connection of the pool
	mu       sync.Mutex
	slots    map[callerKey]*share
	free     []*share // shares no longer in slots, their places all given back: for reuse
}

// maxFreeShares bounds the shares kept for reuse.
const maxFreeShares = 64

// callerKey names the share a caller draws on; the zero value (service
// callers) draws on none.
type callerKey struct {
	kind shareKind // shareUser or shareAnon; shareNone for none
	id   string    // the user id
}

// share is one caller's semaphore, kept while any request of the caller
// holds or waits for a connection.
type share struct {
	sem  chan struct{} // places within the share
	refs int
}

// place is what enter gave: a place within sh, or (over) a connection
// beyond the share that nobody else wanted.
type place struct {
	sh   *share
	over bool
}

// newShares returns the bound of [Config.MaxConnsPerCaller] over pool, nil
// for none.
func newShares(pool *pgxpool.Pool, n int) *shares {
	if n < 0 || (n == 0 && pool == nil) {
		return nil
	}
	poolMax := 0
	if pool != nil {
		poolMax = int(pool.Config().MaxConns)
	}
	if n == 0 {
		n = max(poolMax/2, 1)
	}
	return &shares{max: n, poolMax: int64(poolMax), slots: map[callerKey]*share{}}
}

// shareKind is the kind of share a callerKey names.
type shareKind uint8

const (
	shareNone shareKind = iota
	shareAnon
	shareUser
)

// shareKey names the share a caller draws on: a user by id, every caller
// without a token together; none for service callers, which are the
// server's own.
func shareKey(c Caller) callerKey {
	switch c.kind {
	case callerUser:
		return callerKey{kind: shareUser, id: c.id}
	case callerService:
		return callerKey{}
	default:
		return callerKey{kind: shareAnon}
	}
}

// enter takes one of key's places, waiting until ctx (the acquire
// timeout) or req (the request) is done; over the share, when spare, it
// takes a connection nobody else wants without waiting. It returns the
// zero place (and takes nothing) for an unbounded key or DB.
func (s *shares) enter(ctx, req context.Context, key callerKey, spare bool) (place, error) {
	if s == nil || key.kind == shareNone {
		return place{}, nil
	}
	s.mu.Lock()
	sh := s.slots[key]
	if sh == nil {
		if n := len(s.free); n > 0 {
			sh, s.free = s.free[n-1], s.free[:n-1]
		} else {
			sh = &share{sem: make(chan struct{}, s.max)}
		}
		s.slots[key] = sh
	}
	sh.refs++
	s.mu.Unlock()
	select {
	case sh.sem <- struct{}{}:
		return place{sh: sh}, nil
	default:
	}
	if spare && s.inflight.Load() < s.poolMax {
		// A connection is idle and nobody queues for one: take it. Two
		// callers racing for the last one both go; one of them queues
		// briefly in the pool.
		return place{sh: sh, over: true}, nil
	}
	select {
	case sh.sem <- struct{}{}:
		return place{sh: sh}, nil
	case <-ctx.Done():
		s.drop(key, sh)
		return place{}, ctx.Err()
	case <-req.Done(): // asked for here only: Done makes the request's channel
		s.drop(key, sh)
		return place{}, req.Err()
	}
}

// acquiring counts a request holding or queued for a pooled connection,
// until done.
func (s *shares) acquiring() {
	if s != nil {
		s.inflight.Add(1)
	}
}

func (s *shares) done() {
	if s != nil {
		s.inflight.Add(-1)
	}
}

// leave gives back a place taken by enter.
func (s *shares) leave(key callerKey, p place) {
	if p.sh == nil {
		return
	}
	if !p.over {
		<-p.sh.sem
	}
	s.drop(key, p.sh)
}

func (s *shares) drop(key callerKey, sh *share) {
	s.mu.Lock()
	if sh.refs--; sh.refs == 0 {
		// No request holds or waits for one of its places: nothing
		// refers to it any more.
		delete(s.slots, key)
		if len(s.free) < maxFreeShares {
			s.free = append(s.free, sh)
		}
	}
	s.mu.Unlock()
}

// lease is a pooled connection and the caller's place it holds.
type lease struct {
	conn  *pgxpool.Conn
	d     *DB
	key   callerKey
	place place
}

// release gives back the connection, then the caller's place.
func (l *lease) release() {
	l.conn.Release()
	l.d.shares.done()
	l.d.shares.leave(l.key, l.place)
}

// Hold takes one place in c's share of the pool (Config.MaxConnsPerCaller)
// and keeps it until release is called, waiting for it until ctx is done.
// It is for the server's own work on a caller's behalf that must count
// against the caller's share like the caller's requests, such as an events
// stream replaying the outbox: run that work with [RunOpts.Unshared] (or
// as a service caller) while holding the place, so that it holds at most
// one pooled connection at a time per place. Unlike a request, it never
// borrows an idle connection beyond the share. For service callers, or
// without a bound per caller, it takes nothing and returns at once.
// release is safe to call more than once.
func (d *DB) Hold(ctx context.Context, c Caller) (release func(), err error) {
	key := shareKey(c)
	// Strictly within the share: the work runs on connections the bound
	// does not see, so it may not borrow idle ones.
	sh, err := d.shares.enter(ctx, ctx, key, false)
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
