package db

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

type ctxKey struct{}

// The acquire context is done at its deadline, carries the request's
// values, and is reused only when its wait ended in time: a reused one is
// never done early, and one that expired stays done.
func TestAcquireCtxReuse(t *testing.T) {
	parent := context.WithValue(context.Background(), ctxKey{}, "v")
	c := newAcquireCtx(parent, 20*time.Millisecond)
	if c.Value(ctxKey{}) != "v" || c.Err() != nil {
		t.Fatalf("fresh: value %v err %v", c.Value(ctxKey{}), c.Err())
	}
	if dl, ok := c.Deadline(); !ok || time.Until(dl) > 20*time.Millisecond {
		t.Fatalf("deadline %v %v", dl, ok)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("not done after its deadline")
	}
	if !errors.Is(c.Err(), context.DeadlineExceeded) {
		t.Fatalf("err %v", c.Err())
	}
	c.release() // expired: not kept

	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				d := time.Second
				if i%50 == 0 {
					d = time.Microsecond // some expire while held
				}
				c := newAcquireCtx(parent, d)
				if d == time.Second {
					select {
					case <-c.Done():
						t.Error("a reused context was done before its deadline")
						return
					default:
					}
					if c.Err() != nil {
						t.Errorf("err %v before the deadline", c.Err())
						return
					}
				} else {
					<-c.Done()
				}
				c.release()
			}
		}()
	}
	wg.Wait()
}

// A request whose own context ends while it waits for its share gives up
// at once, not at the acquire timeout.
func TestShareWaitStopsWithTheRequest(t *testing.T) {
	s := &shares{max: 1, poolMax: 1, slots: map[callerKey]*share{}}
	key := callerKey{kind: shareUser, id: "u"}
	s.inflight.Add(1) // the pool is full
	held, err := s.enter(context.Background(), context.Background(), key, true)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ac := newAcquireCtx(ctx, 10*time.Second)
	defer ac.release()
	// sleep: the cancel lands while enter waits; were it earlier, enter must still return Canceled
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err = s.enter(ac, ctx, key, true)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("enter after the request ended: %v after %v", err, time.Since(start))
	}
	s.leave(key, held)
	if len(s.slots) != 0 {
		t.Fatalf("slots left: %v", s.slots)
	}
}
