package main

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
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
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "✓ serving"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start: %s", stderr.String())
		}
	}
	_ = cmd.Process.Signal(syscall.SIGHUP)
	time.Sleep(500 * time.Millisecond)
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
