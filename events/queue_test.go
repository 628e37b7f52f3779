package events

import "testing"

// TestSubscriberQueueBounds: a subscriber's queue refuses frames that
// would take it past either bound (the hub then cuts the subscriber
// off), and taking the queue frees both.
func TestSubscriberQueueBounds(t *testing.T) {
	t.Parallel()
	s := &subscriber{done: make(chan struct{}), wake: make(chan struct{}, 1)}
	f := func(n int) frame { return frame{b: make([]byte, n)} }
	const maxFrames, maxBytes = 4, 1000
	if !s.push([]frame{f(600)}, maxFrames, maxBytes) {
		t.Fatal("600 of 1000 bytes refused")
	}
	if s.push([]frame{f(401)}, maxFrames, maxBytes) {
		t.Fatal("1001 of 1000 bytes queued")
	}
	if !s.push([]frame{f(400)}, maxFrames, maxBytes) {
		t.Fatal("exactly 1000 bytes refused")
	}
	if s.push([]frame{f(1)}, maxFrames, maxBytes) {
		t.Fatal("a byte past a full queue queued")
	}
	if q := s.take(); len(q) != 2 {
		t.Fatalf("took %d frames, want 2", len(q))
	}
	if !s.push([]frame{f(1), f(1), f(1), f(1)}, maxFrames, maxBytes) {
		t.Fatal("4 frames of 4 refused after take")
	}
	if s.push([]frame{f(1)}, maxFrames, maxBytes) {
		t.Fatal("a 5th frame queued with a bound of 4")
	}
	if q := s.take(); len(q) != 4 {
		t.Fatalf("took %d frames, want 4", len(q))
	}
}
