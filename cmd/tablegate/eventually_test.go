package main

import (
	"testing"
	"time"
)

// within calls cond every 20 ms until it returns true, for at most
// timeout, and reports whether it did.
func within(timeout time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(timeout); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond) // sleep: the poll step of the bounded wait on cond
	}
	return true
}

// eventually waits until cond returns true, for at most timeout; past
// it, it fails the test saying what did not happen.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !within(timeout, cond) {
		t.Fatalf("after %v: %s", timeout, what)
	}
}
