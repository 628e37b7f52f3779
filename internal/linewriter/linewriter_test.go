package linewriter

import (
	"bytes"
	"context"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockedWriter never returns from Write until released.
type blockedWriter struct {
	release chan struct{}
	buf     bytes.Buffer
	mu      sync.Mutex
}

func (b *blockedWriter) Write(p []byte) (int, error) {
	<-b.release
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// A stalled reader costs lines, counted, never a blocked Write; close
// writes what is queued and the count, bounded by its context.
func TestLineWriterNeverBlocks(t *testing.T) {
	t.Parallel()
	bw := &blockedWriter{release: make(chan struct{})}
	lw := New("test", bw, 4)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			fmt.Fprintf(lw, "line %d\n", i)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Write blocked behind a stalled reader")
	}
	// One line is in the stalled Write, at most 4 queued: the rest dropped.
	if n := lw.Dropped(); n < 95 {
		t.Fatalf("dropped %d of 100 lines with room for 5, want ≥ 95", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := lw.Close(ctx); err == nil {
		t.Fatal("close returned while the reader was still stalled")
	}
	close(bw.release)
	for range 2 {
		if err := lw.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	bw.mu.Lock()
	out := bw.buf.String()
	bw.mu.Unlock()
	if !strings.HasPrefix(out, "line 0\n") || strings.Count(out, "lines dropped") != 1 {
		t.Fatalf("written after release (want the lines, then one count):\n%s", out)
	}
	if _, err := lw.Write([]byte("late\n")); err != nil {
		t.Fatal(err)
	}
}

// The process's default logger (slog.Default, and the log package through
// it) writes through a queue too: a warning of the events hub or an
// unexpected error's log line never waits on a stalled stderr. Not
// parallel: it replaces the process's default logger while it runs.
func TestDefaultLoggerNeverBlocks(t *testing.T) {
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	bw := &blockedWriter{release: make(chan struct{})}
	restore := InstallDefault(bw)
	restored := false
	defer func() {
		if !restored {
			close(bw.release)
			restore()
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 3 * DefaultLogQueue {
			slog.Warn("events: visibility check failed", "n", i)
		}
		log.Print("http: TLS handshake error")
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("slog.Default blocked behind a stalled stderr")
	}
	close(bw.release)
	restore()
	restored = true
	bw.mu.Lock()
	out := bw.buf.String()
	bw.mu.Unlock()
	if !strings.Contains(out, "level=WARN msg=\"events: visibility check failed\" n=0\n") ||
		!strings.Contains(out, "! log: ") || !strings.Contains(out, "lines dropped") {
		t.Fatalf("written after release (want the first warning and a count of dropped lines):\n%.600s", out)
	}
	if slog.Default() != prev || log.Writer() != prevOut || log.Flags() != prevFlags {
		t.Fatal("restore left the default logger or the log package redirected")
	}
}

// countingWriter records each Write; the first one waits for release.
type countingWriter struct {
	release chan struct{}
	mu      sync.Mutex
	writes  []string
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	first := len(c.writes) == 0
	c.writes = append(c.writes, string(p))
	c.mu.Unlock()
	if first {
		<-c.release
	}
	return len(p), nil
}

// Lines queued while a write is under way go out together, in order, in
// one write.
func TestLineWriterBatchesQueuedLines(t *testing.T) {
	t.Parallel()
	cw := &countingWriter{release: make(chan struct{})}
	lw := New("test", cw, 100)
	fmt.Fprintf(lw, "line 0\n")
	for i := 0; ; i++ { // the first line is in its (stalled) write
		cw.mu.Lock()
		n := len(cw.writes)
		cw.mu.Unlock()
		if n == 1 {
			break
		}
		if i > 500 {
			t.Fatal("the first line was never written")
		}
		time.Sleep(10 * time.Millisecond) // sleep: the poll step of the bounded wait for the first write
	}
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(lw, "line %d\n", i)
	}
	close(cw.release)
	if err := lw.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	cw.mu.Lock()
	defer cw.mu.Unlock()
	var want strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if len(cw.writes) != 2 || cw.writes[0] != "line 0\n" || cw.writes[1] != want.String() {
		t.Fatalf("%d writes %q, want line 0, then lines 1-20 in one write", len(cw.writes), cw.writes)
	}
	if n := lw.Dropped(); n != 0 {
		t.Fatalf("dropped %d", n)
	}
}
