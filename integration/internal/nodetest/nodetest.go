// Package nodetest runs the pinned npm packages in integration/node (the
// real @supabase/ssr and supabase-js, eventsource, and headless Chromium
// through playwright-core) and integration/oas from the integration tests.
// It fails a test — never skips it — when node, the packages or Chromium are
// missing, with one line that says how to install them: `make test` installs
// the packages first (make node-deps), so a skip would hide a broken setup.
package nodetest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Dir returns the absolute path of integration/node, the node project
// holding the pinned packages and the scripts the tests drive.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "node")
}

// OASDir returns the absolute path of integration/oas, the node project
// holding the pinned OpenAPI tools (Redocly, Spectral, openapi-typescript,
// openapi-fetch, tsc).
func OASDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "oas")
}

// Require fails t when node or the packages of integration/node are
// missing and returns the node executable.
func Require(t testing.TB) string {
	t.Helper()
	return require(t, Dir(), "integration/node")
}

// RequireOAS fails t when node or the packages of integration/oas are
// missing and returns OASDir.
func RequireOAS(t testing.TB) string {
	t.Helper()
	require(t, OASDir(), "integration/oas")
	return OASDir()
}

func require(t testing.TB, dir, name string) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not on PATH: install Node.js 20+ and npm (Debian: apt-get install nodejs npm), then run `make node-deps`")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		t.Fatalf("%s/node_modules is missing: run `make node-deps`", name)
	}
	return node
}

// RequireChromium fails t when Debian's Chromium is missing and returns its
// path (CHROMIUM_PATH overrides /usr/bin/chromium).
func RequireChromium(t testing.TB) string {
	t.Helper()
	p := os.Getenv("CHROMIUM_PATH")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("chromium is not installed at %s: apt-get install chromium (or set CHROMIUM_PATH), then run `make node-deps` for the playwright-core that drives it", p)
	}
	return p
}

// Run runs `node script` in Dir with input encoded as JSON on stdin and
// decodes the script's stdout (one JSON value) into out, unless out is nil.
// The script's stderr is shown when it fails. timeout bounds the run.
func Run(t testing.TB, timeout time.Duration, script string, input, out any) {
	t.Helper()
	node := Require(t)
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = Dir()
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	if out == nil {
		return
	}
	if err := json.Unmarshal(stdout, out); err != nil {
		t.Fatalf("node %s output %q: %v\n%s", script, stdout, err, stderr.String())
	}
}
