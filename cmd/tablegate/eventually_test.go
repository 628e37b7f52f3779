package main

import (
	"testing"
	"time"
)

// eventually calls cond every 20 ms until it returns true, for at most
// timeout; past it, it fails the test saying what did not happen.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond) // sleep: the poll step of the bounded wait on cond
	}
}
