package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestStopLeavesNoProcess: when StopServer and Stop return, the
// postmaster has exited (not merely removed postmaster.pid), and Stop has
// removed the directory. Checked once, right after each call: the calls
// themselves wait.
func TestStopLeavesNoProcess(t *testing.T) {
	t.Parallel()
	c, err := Start(context.Background(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(c.Dir(), "data")
	pid := postmasterPID(data)
	if pid == 0 || !running(pid, data) {
		t.Fatalf("postmaster %d of a started cluster does not run", pid)
	}
	if err := c.StopServer(); err != nil {
		t.Fatal(err)
	}
	if running(pid, data) {
		t.Fatalf("postmaster %d still runs after StopServer", pid)
	}
	if err := c.StartServer(); err != nil {
		t.Fatal(err)
	}
	pid = postmasterPID(data)
	if pid == 0 || !running(pid, data) {
		t.Fatalf("postmaster %d does not run after StartServer", pid)
	}
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	if running(pid, data) {
		t.Fatalf("postmaster %d still runs after Stop", pid)
	}
	if _, err := os.Stat(c.Dir()); !os.IsNotExist(err) {
		t.Fatalf("%s still exists after Stop (%v)", c.Dir(), err)
	}
}
