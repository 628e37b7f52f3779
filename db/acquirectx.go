package db

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// acquireCtx bounds the wait for a pooled connection (the acquire
// timeout) without the cost of a context.WithTimeout per request (a
// context, a timer, and a registration with the request's context, about
// 4% of the CPU of a GET): it is reused, timer included, by the requests
// whose wait ended before its deadline. It carries the request's values.
// Its Done closes at the deadline only: a request whose own context ends
// while it waits in the pool's queue (its client went away) keeps its
// place until it gets a connection or the deadline, then fails at once
// without sending anything, as a cancelled context makes pgx do.
type acquireCtx struct {
	parent   context.Context
	deadline time.Time
	done     chan struct{}
	expired  atomic.Bool
	timer    *time.Timer
}

func (c *acquireCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *acquireCtx) Done() <-chan struct{}       { return c.done }
func (c *acquireCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *acquireCtx) Err() error {
	if c.expired.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (c *acquireCtx) expire() {
	c.expired.Store(true)
	close(c.done)
}

// acquireCtxs holds the acquireCtx whose timer was stopped in time.
var acquireCtxs sync.Pool

// newAcquireCtx returns a context of parent that is done after d; put it
// back with release when the wait is over.
func newAcquireCtx(parent context.Context, d time.Duration) *acquireCtx {
	c, _ := acquireCtxs.Get().(*acquireCtx)
	if c == nil {
		c = &acquireCtx{done: make(chan struct{})}
		c.parent, c.deadline = parent, time.Now().Add(d)
		c.timer = time.AfterFunc(d, c.expire)
		return c
	}
	c.parent, c.deadline = parent, time.Now().Add(d)
	c.timer.Reset(d)
	return c
}

// release stops c's timer and keeps c for another wait, unless it
// expired (or is expiring): its Done is closed for good then.
func (c *acquireCtx) release() {
	if c.timer.Stop() {
		acquireCtxs.Put(c)
	}
}
