package linewriter

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
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
	lw := newLineWriter("test", bw, 4)
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
	if n := lw.dropped.Load(); n < 95 {
		t.Fatalf("dropped %d of 100 lines with room for 5, want ≥ 95", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := lw.close(ctx); err == nil {
		t.Fatal("close returned while the reader was still stalled")
	}
	close(bw.release)
	for range 2 {
		if err := lw.close(context.Background()); err != nil {
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
	restore := installDefaultLogger(bw)
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
		for i := range 3 * defaultLogQueue {
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

// serve whose stderr nobody reads (a stuck log shipper: the pipe fills)
// keeps answering: access log lines are dropped and counted instead of
// every request waiting on its line. Once stderr flows again it stops
// cleanly and reports the drops.
func TestServeAnswersWithStalledStderr(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	t.Parallel()
	url := pgtest.URL(t)
	if _, err := pgtest.Pool(t, url).Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	cfgPath, _ := serveFixture(t, nil)
	addr := freeAddr(t)
	cmd := exec.Command(buildCLI(t), "serve", "--config", cfgPath, "--addr", addr)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	_ = w.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var drained bytes.Buffer
	reading := make(chan struct{})
	stopped := false
	defer func() {
		if !stopped {
			go io.Copy(io.Discard, r) // never leave the child blocked
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	base := "http://" + addr
	client := &http.Client{Timeout: 5 * time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := client.Get(base + "/livez"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			out, _ := io.ReadAll(r)
			t.Fatalf("serve did not answer /livez within 30 s:\n%s", out)
		}
	}
	// Far more lines than a pipe (64 KiB) and the queue (4096) hold.
	const workers, each = 4, 1500
	var wg sync.WaitGroup
	failures := make(chan string, workers)
	for range workers {
		wg.Go(func() {
			for range each {
				resp, err := client.Get(base + "/livez")
				if err != nil {
					failures <- err.Error()
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failures <- resp.Status
					return
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Fatalf("a request while stderr was stalled: %s", f)
	}
	go func() {
		_, _ = io.Copy(&drained, r)
		close(reading)
	}()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		stopped = true
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20 s of SIGTERM once stderr flowed")
	}
	<-reading
	if !strings.Contains(drained.String(), "lines dropped") {
		t.Errorf("no count of dropped lines in stderr:\n%.2000s", drained.String())
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
	lw := newLineWriter("test", cw, 100)
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
		time.Sleep(10 * time.Millisecond)
	}
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(lw, "line %d\n", i)
	}
	close(cw.release)
	if err := lw.close(context.Background()); err != nil {
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
	if n := lw.dropped.Load(); n != 0 {
		t.Fatalf("dropped %d", n)
	}
}
