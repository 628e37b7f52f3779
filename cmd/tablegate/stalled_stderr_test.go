package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestServeStopsWithStalledStderr: with a reader of stderr that stopped
// reading (a full pipe), SIGTERM still ends serve within its shutdown
// limit plus the bounded flush of what it printed; before, the shutdown
// message blocked on the pipe and serve went on serving.
func TestServeStopsWithStalledStderr(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	t.Parallel()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	cmd, addr, token := serveBinaryCommand(t, nil, "--shutdown-timeout", "1s")
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
	}()
	// Read until it serves, then never again.
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "✓ serving") {
			break
		}
	}
	// Fill the pipe with access log lines.
	client := &http.Client{Timeout: 5 * time.Second}
	for range 1500 {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/todos?limit=1", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		if res, err := client.Do(req); err == nil {
			res.Body.Close()
		}
	}
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if el := time.Since(start); el > 8*time.Second {
			t.Errorf("serve took %v to stop", el)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20 s of SIGTERM with a stalled stderr")
	}
}

// TestServeUnderNohupIgnoresSIGHUP: started with SIGHUP ignored (nohup),
// serve keeps it ignored and goes on serving when the terminal closes;
// SIGTERM still stops it.
func TestServeUnderNohupIgnoresSIGHUP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("no nohup on this machine")
	}
	t.Parallel()
	var stderr syncBuffer
	cmd, addr, _ := serveBinaryCommand(t, []string{nohup})
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	if !within(30*time.Second, func() bool { return strings.Contains(stderr.String(), "✓ serving") }) {
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	// Serving, serve has set up its signals: SIGHUP is still ignored by
	// the process, so the kernel discards the one sent below at once, and
	// nothing of it is left to arrive later.
	if ign, ok := ignoredSignals(cmd.Process.Pid); !ok {
		t.Skip("no /proc/<pid>/status SigIgn on this machine")
	} else if ign&(1<<(uint(syscall.SIGHUP)-1)) == 0 {
		t.Fatalf("serve under nohup no longer ignores SIGHUP (SigIgn %#x)", ign)
	}
	_ = cmd.Process.Signal(syscall.SIGHUP)
	select {
	case <-exited:
		t.Fatalf("serve stopped on SIGHUP under nohup: %s", stderr.String())
	default:
	}
	if res, err := http.Get("http://" + addr + "/livez"); err != nil || res.StatusCode != 200 {
		t.Fatalf("after SIGHUP: %v", err)
	} else {
		res.Body.Close()
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on SIGTERM")
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
	// sleep: the poll step of the bounded wait for /livez
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

// ignoredSignals returns the mask of the signals process pid ignores
// (bit n-1 for signal n), from /proc/<pid>/status; false where there is
// none.
func ignoredSignals(pid int) (uint64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigIgn:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return mask, err == nil
		}
	}
	return 0, false
}
