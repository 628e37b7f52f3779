package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// result is the outcome of one in-process CLI run.
type result struct {
	code           int
	stdout, stderr string
}

// runCLI runs the CLI in-process with vars as its whole environment.
func runCLI(t *testing.T, vars map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code := run(context.Background(), e, args)
	return result{code, out.String(), errb.String()}
}

func TestUsageAndExitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{nil, exitUsage, "", "Commands:"},
		{[]string{"--help"}, exitOK, "Exit codes: 0 ok, 1 failure, 2 usage error.", ""},
		{[]string{"nope"}, exitUsage, "", `unknown command "nope"`},
		{[]string{"demo", "--help"}, exitOK, "--print-env", ""},
		{[]string{"demo", "--no-such-flag"}, exitUsage, "", "flag provided but not defined"},
		{[]string{"migrate"}, exitUsage, "", "missing subcommand"},
		{[]string{"migrate", "sideways"}, exitUsage, "", `unknown subcommand "sideways"`},
		{[]string{"migrate", "up"}, exitUsage, "", "pass --database-url or set DATABASE_URL"},
		{[]string{"keys"}, exitUsage, "", "missing subcommand"},
		{[]string{"token", "--sub", "not-a-uuid"}, exitUsage, "", "--sub must be a UUID"},
		{[]string{"token", "--signing-keys", "/nonexistent/keys.json"}, exitFailure, "", "tablegate keys new --path /nonexistent/keys.json"},
		{[]string{"doctor", "--help"}, exitOK, "RLS enabled and forced", ""},
		{[]string{"version"}, exitOK, "tablegate ", ""},
		{[]string{"--version"}, exitOK, "(go1.", ""},
		{[]string{"version", "extra"}, exitUsage, "", `unexpected argument "extra"`},
	}
	for _, c := range cases {
		r := runCLI(t, nil, c.args...)
		if r.code != c.code {
			t.Errorf("%v: exit %d, want %d\nstdout: %s\nstderr: %s", c.args, r.code, c.code, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, c.inStdout) {
			t.Errorf("%v: stdout lacks %q:\n%s", c.args, c.inStdout, r.stdout)
		}
		if !strings.Contains(r.stderr, c.inStderr) {
			t.Errorf("%v: stderr lacks %q:\n%s", c.args, c.inStderr, r.stderr)
		}
	}
}
