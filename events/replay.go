package events

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/tablegate/tablegate/telemetry"
)

// A replay (a stream resuming with Last-Event-ID) reads the outbox in
// windows of Batch ids, aligned to multiples of Batch: window k covers the
// ids k*Batch < id <= (k+1)*Batch, so it holds at most Batch events. Each
// window is read and checked on one of the caller's places in the pool
// (db.DB.Hold), the place given back between windows: a caller replaying on
// many streams holds no more connections than its requests may, and waits
// behind nobody else. Streams of one caller identity replaying the same
// window at the same time share one read and one check (replayKey).

// replayKey names one shared window: the same stream, the same identity
// (role and claims: the same visibility), the same start.
type replayKey struct {
	st       *Stream
	identity string
	start    int64
}

// replayCall is a window read in flight, or done within replayLinger.
type replayCall struct {
	done chan struct{}
	w    *window
	err  error
}

// window is what one identity may see of one window of the outbox.
type window struct {
	recs []*record
	// frames holds the rendered events of recs a subscriber of the
	// identity without event or column filters receives.
	frames map[int64][]byte
	// end is the last id the window covers for good: every event with
	// start < id <= end is in recs. Events numbered after the read may
	// still follow end within the window's range.
	end int64
	// last: no event follows the window (the replay is done).
	last bool
}

// replayLinger keeps a finished window for streams a moment behind the
// first reader.
const replayLinger = 500 * time.Millisecond

// replayChunk is the size of one write of a replay.
const replayChunk = 32 << 10

// window returns the window of s's identity starting after start, shared
// with the other streams of the identity that ask for it meanwhile. A
// window read a moment ago that ends at or before pos (it was read before
// the events after pos were numbered) is read again.
func (h *Hub) window(ctx context.Context, s *subscriber, start, pos int64) (*window, error) {
	k := replayKey{st: s.st, identity: s.identity, start: start}
	for attempt := 0; ; attempt++ {
		h.replayMu.Lock()
		c := h.replays[k]
		if c != nil && c.finished() && (c.err != nil || c.w.end <= pos) {
			c = nil // stale: read it again
		}
		if c == nil {
			c = &replayCall{done: make(chan struct{})}
			h.replays[k] = c
			h.replayMu.Unlock()
			c.w, c.err = h.readWindow(ctx, s, start)
			close(c.done)
			if c.err != nil {
				h.forget(k, c)
			} else {
				time.AfterFunc(replayLinger, func() { h.forget(k, c) })
			}
			return c.w, c.err
		}
		h.replayMu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		// The reader's own failure (its client left, say) is not ours, nor
		// is a window read before what we need was numbered: read it
		// ourselves, a bounded number of times.
		if (c.err == nil && c.w.end > pos) || attempt >= 2 {
			return c.w, c.err
		}
	}
}

func (c *replayCall) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (h *Hub) forget(k replayKey, c *replayCall) {
	h.replayMu.Lock()
	if h.replays[k] == c {
		delete(h.replays, k)
	}
	h.replayMu.Unlock()
}

// readWindow reads and checks the window after start on one of the
// caller's places in the pool.
func (h *Hub) readWindow(ctx context.Context, s *subscriber, start int64) (*window, error) {
	release, err := h.d.Hold(ctx, s.auth.DBCaller())
	if err != nil {
		return nil, err
	}
	defer release()
	ctx, cancel := context.WithTimeout(ctx, h.cfg.CheckTimeout)
	defer cancel()
	size := int64(h.cfg.Batch)
	w := &window{end: start}
	// One statement, one snapshot: the window's events and the first one
	// after it. Ids become visible in order, so when an event after the
	// window exists the window is complete (ids are consecutive but for
	// rare holes, a numbering lost in a crash: a hole is skipped in one
	// step); else it is complete up to its last event.
	recs, err := h.read(ctx, start, math.MaxInt64, h.cfg.Batch+1)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.ID > start+size {
			w.end = (r.ID - 1) / size * size
			break
		}
		w.recs = append(w.recs, r)
		w.end = r.ID
	}
	w.last = len(recs) == 0
	if len(w.recs) == 0 {
		return w, nil
	}
	// The identity's check, for a subscriber of it without filters: each
	// stream then applies its own event and column filters.
	all := &subscriber{st: s.st, auth: s.auth, identity: s.identity, tenant: s.tenant}
	out, failed := h.deliver(ctx, w.recs, []*subscriber{all})
	if len(failed) > 0 {
		return nil, fmt.Errorf("events: the visibility check of a replay failed")
	}
	w.frames = make(map[int64][]byte, len(out[all]))
	for _, f := range out[all] {
		w.frames[f.id] = f.b
	}
	return w, nil
}

// catchUp sends s the events after last from the outbox, through the same
// visibility checks as live delivery, and returns the id it reached: the
// stream's live delivery starts after it. A position at or beyond head
// (this instance has read less of the outbox than the client has received,
// on another instance) replays nothing: live delivery skips what the
// client has.
func (st *Stream) catchUp(ctx context.Context, s *subscriber, last, head int64, write func([]byte) bool) (int64, bool) {
	h := st.h
	s.skipThrough(last)
	if last >= head {
		return last, true
	}
	// The horizon too is read on one of the caller's places.
	release, err := h.d.Hold(ctx, s.auth.DBCaller())
	if err != nil {
		return 0, false
	}
	hctx, cancel := context.WithTimeout(ctx, h.cfg.CheckTimeout)
	pruned, err := h.horizon(hctx)
	cancel()
	release()
	if err != nil {
		return 0, false
	}
	gap := func(through int64, reason string) bool {
		return write([]byte(fmt.Sprintf("event: tablegate.gap\ndata: {\"last_event_id\":%d,\"pruned_through\":%d,\"reason\":%q}\n\n",
			last, through, reason)))
	}
	if last < pruned {
		// Events after last were pruned: say so, then send what is left.
		if !gap(pruned, "retention") {
			return 0, false
		}
		last = pruned
	}
	if bound := head - int64(h.cfg.MaxReplay); last < bound {
		// Further behind than one stream may replay: say so, then send
		// the last MaxReplay events.
		if !gap(bound, "replay_limit") {
			return 0, false
		}
		last = bound
	}
	s.skipThrough(last)
	size := int64(h.cfg.Batch)
	pos, reached := last, head
	// Frames are written in chunks of up to replayChunk bytes, one write
	// and flush each, not one per event.
	var buf []byte
	pending := 0
	flush := func() bool {
		if len(buf) == 0 {
			return true
		}
		if ctx.Err() != nil || !write(buf) {
			return false
		}
		h.delivered.Add(uint64(pending))
		telemetry.FromContext(ctx).EventsDelivered(ctx, pending)
		buf, pending = buf[:0], 0
		return true
	}
	for pos < head {
		select {
		case <-s.done: // cut off: the hub closed, or the stream failed
			return 0, false
		default:
		}
		if ctx.Err() != nil { // the token expired, MaxStream passed or the client left
			return 0, false
		}
		w, err := h.window(ctx, s, pos/size*size, pos)
		if err != nil {
			return 0, false
		}
		for _, rec := range w.recs {
			if rec.ID <= pos {
				continue
			}
			reached = max(reached, rec.ID)
			var b []byte
			switch s.classify(rec) {
			case checkSkipped:
				continue
			case checkNone:
				var ok bool
				if b, ok = w.frames[rec.ID]; !ok {
					if b, err = st.render(rec); err != nil {
						continue
					}
				}
			default:
				var ok bool
				if b, ok = w.frames[rec.ID]; !ok {
					continue // not visible to this identity
				}
			}
			if buf == nil {
				buf = make([]byte, 0, replayChunk)
			}
			buf = append(buf, b...)
			pending++
			if len(buf) >= replayChunk && !flush() {
				return 0, false
			}
		}
		if !flush() {
			return 0, false
		}
		// Live delivery need not queue what the replay covered.
		s.skipThrough(reached)
		if w.last || w.end <= pos {
			// Nothing after pos (pruned meanwhile, or not numbered yet,
			// which live delivery then brings).
			break
		}
		pos = w.end
	}
	return reached, true
}
