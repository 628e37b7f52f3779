package db

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
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

// Requests of a few callers entering and leaving at once never hold more
// than a share's places, and leave no share behind.
func TestSharesConcurrentEnterLeave(t *testing.T) {
	s := &shares{max: 2, poolMax: 1, slots: map[callerKey]*share{}}
	s.inflight.Add(1) // the pool is full: no place beyond the share
	var held [3]atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := (g + i) % len(held)
				key := callerKey{kind: shareUser, id: strconv.Itoa(k)}
				p, err := s.enter(context.Background(), context.Background(), key, true)
				if err != nil {
					t.Error(err)
					return
				}
				if n := held[k].Add(1); n > int64(s.max) {
					t.Errorf("caller %d holds %d places", k, n)
				}
				held[k].Add(-1)
				s.leave(key, p)
			}
		}()
	}
	wg.Wait()
	if len(s.slots) != 0 {
		t.Fatalf("slots left: %v", s.slots)
	}
}

// BenchmarkShareEnterLeave: a request's entry into its caller's share and
// its exit, from parallel requests of one caller (one share) and of a
// caller each (a share per request), the pool not full.
func BenchmarkShareEnterLeave(b *testing.B) {
	for _, name := range []string{"one-caller", "caller-each"} {
		b.Run(name, func(b *testing.B) {
			s := &shares{max: 1 << 10, poolMax: 1 << 20, slots: map[callerKey]*share{}}
			var seq atomic.Int64
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				key := callerKey{kind: shareUser, id: "u"}
				if name == "caller-each" {
					key.id = strconv.FormatInt(seq.Add(1), 10)
				}
				for pb.Next() {
					p, err := s.enter(context.Background(), context.Background(), key, true)
					if err != nil {
						b.Error(err)
						return
					}
					s.leave(key, p)
				}
			})
		})
	}
}
