// Package linewriter hands log lines to a writer from a goroutine of its
// own, through a bounded queue: a reader that stalls (a full pipe, a stuck
// log shipper) costs lines, counted, instead of blocking the writers.
package linewriter

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLogQueue is how many lines of the process's default logger
// (slog.Default and the log package: warnings, errors) may wait for
// stderr.
const DefaultLogQueue = 1024

// FlushTimeout bounds writing out a queue of log lines at exit.
const FlushTimeout = 2 * time.Second

// InstallDefault points slog.Default, and with it the log package
// (net/http's server errors, the OpenTelemetry SDK's), at a [Writer]
// over w: the library's warnings (JWKS fetches, the events hub) and
// unexpected errors then never wait on a stalled stderr, in a request or
// in the events hub's delivery loop. The returned function restores the
// previous default and writes out what is queued, within
// FlushTimeout.
func InstallDefault(w io.Writer) (restore func()) {
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	lw := New("log", w, DefaultLogQueue)
	slog.SetDefault(slog.New(slog.NewTextHandler(lw, nil)))
	return func() {
		// slog.SetDefault redirected the log package; put it back too.
		slog.SetDefault(prev)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
		ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
		defer cancel()
		_ = lw.Close(ctx)
	}
}

// Writer hands log lines to w from a goroutine of its own, through a
// queue of at most n lines. A reader of stderr that stalls (a full pipe, a
// stuck log shipper) then costs lines, counted in dropped, instead of
// every request waiting on its log line's write. Each Write is one whole
// line (slog's handlers write a record at once). The lines queued while
// the goroutine writes are written together, in one write: under load a
// write carries many lines, not one each.
type Writer struct {
	what      string // names the lines in the count of dropped ones
	w         io.Writer
	max       int // lines queued or being written, at most
	mu        sync.Mutex
	buf       []byte // the queued lines
	queued    int    // lines in buf
	pending   int    // lines in buf and in the write under way
	closed    bool
	kick      chan struct{} // buf went from empty to not; closed by close
	done      chan struct{} // the queue is written out
	wrote     chan struct{} // and the count of dropped lines after it
	closeOnce sync.Once
	dropped   atomic.Int64
}

// New starts a Writer of at most n queued lines to w; what names the lines
// in the count of dropped ones it writes at Close.
func New(what string, w io.Writer, n int) *Writer {
	l := &Writer{what: what, w: w, max: n, kick: make(chan struct{}, 1), done: make(chan struct{}), wrote: make(chan struct{})}
	go l.run()
	return l
}

func (l *Writer) run() {
	defer close(l.done)
	var spare []byte
	flush := func() {
		l.mu.Lock()
		b, n := l.buf, l.queued
		l.buf, l.queued = spare[:0], 0
		l.mu.Unlock()
		if n == 0 {
			spare = b
			return
		}
		_, _ = l.w.Write(b)
		if cap(b) > 1<<20 { // a burst's buffer is not kept for ever
			b = nil
		}
		spare = b
		l.mu.Lock()
		l.pending -= n
		l.mu.Unlock()
	}
	for range l.kick {
		// Let the goroutines that are ready run first: under load they
		// queue more lines for this write; idle, it goes on at once.
		runtime.Gosched()
		flush()
	}
	flush()
}

// Write queues a copy of p, or drops it when the queue is full or the
// writer closed. It never blocks and never fails.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	if l.closed || l.pending >= l.max {
		l.mu.Unlock()
		l.dropped.Add(1)
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	l.queued++
	l.pending++
	if l.queued == 1 {
		select {
		case l.kick <- struct{}{}:
		default: // the writer is already due to run
		}
	}
	l.mu.Unlock()
	return len(p), nil
}

// Close stops taking lines and waits, within ctx, for the queued ones to
// be written, followed by a line counting the dropped ones, if any. It may
// be called again (to wait longer); the count is written once.
func (l *Writer) Close(ctx context.Context) error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		l.closed = true
		close(l.kick)
		l.mu.Unlock()
		go func() {
			defer close(l.wrote)
			<-l.done
			if n := l.dropped.Load(); n > 0 {
				_, _ = fmt.Fprintf(l.w, "! %s: %d lines dropped (stderr was not read fast enough)\n", l.what, n)
			}
		}()
	})
	select {
	case <-l.wrote:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Dropped returns how many lines were dropped so far.
func (l *Writer) Dropped() int64 { return l.dropped.Load() }
