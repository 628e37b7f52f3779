// Command tablegate runs, checks and demonstrates tablegate: Postgres tables
// served as REST resources bound to the caller, with Supabase-style auth.
//
// Usage:
//
//	tablegate <command> [flags]
//
// Commands:
//
//	init      start a project: serve config, signing key, a table migration with RLS, .env
//	demo      start a throwaway Postgres, a demo schema and a server; print curl lines
//	serve     serve the tables of a JSON config file against DATABASE_URL
//	migrate   apply or roll back tablegate's embedded migrations (up, down, status)
//	keys      create ES256, RS256 or EdDSA signing keys in the Supabase CLI signing_keys_path format
//	token     mint a development access token signed with those keys
//	doctor    check keys, JWKS, database, migrations, RLS and grants
//	openapi   print the OpenAPI description of a config's resources
//	version   print the tablegate version and the Go version it was built with
//
// Exit codes: 0 success, 1 failure (a check failed, the database is
// unreachable, ...), 2 usage error (unknown command or flag, missing
// argument). Run "tablegate <command> --help" for each command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tablegate/tablegate/internal/linewriter"

	// Time zone data in the binary: rows render timestamps in the
	// session's time zone, and images without /usr/share/zoneinfo
	// (distroless, scratch) would fall back to UTC.
	_ "time/tzdata"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError is a mistake in the command line: it exits with code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// env is what a command runs with: streams, environment and arguments.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"init", "start a project: serve config, signing key, a table migration with RLS, .env", runInit},
		{"demo", "start a throwaway Postgres, a demo schema and a server; print curl lines", runDemo},
		{"serve", "serve the tables of a JSON config file against DATABASE_URL", runServe},
		{"migrate", "apply or roll back tablegate's embedded migrations (up, down, status)", runMigrate},
		{"keys", "create ES256/RS256/EdDSA signing keys (Supabase CLI signing_keys_path format)", runKeys},
		{"token", "mint a development access token signed with those keys", runToken},
		{"doctor", "check keys, JWKS, database, migrations, RLS and grants", runDoctor},
		{"openapi", "print the OpenAPI description of a config's resources", runOpenAPI},
		{"version", "print the tablegate version and the Go version it was built with", runVersion},
	}
}

func mainUsage(w io.Writer) {
	fmt.Fprintf(w, `tablegate serves Postgres tables as REST resources bound to the caller.

Usage:
  tablegate <command> [flags]

Commands:
`)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Run "tablegate <command> --help" for the flags of a command.

Exit codes: 0 ok, 1 failure, 2 usage error.
`)
}

func main() {
	// A stderr whose reader went away must not kill the process (the
	// demo would leave its cluster and key behind): writes fail instead.
	signal.Ignore(syscall.SIGPIPE)
	// SIGHUP (a closed terminal or SSH session) stops as SIGINT does,
	// unless it is ignored (nohup): then it stays ignored. Once a signal
	// arrived, the next one stops the process at once.
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	go func() { <-ctx.Done(); stop() }()
	// Everything the commands print to stderr goes through a queue, so a
	// stalled reader (a full pipe) delays no shutdown message, and with it
	// no exit; what is queued is written out within linewriter.FlushTimeout.
	stderr := linewriter.New("stderr", os.Stderr, linewriter.DefaultLogQueue)
	restoreLog := linewriter.InstallDefault(stderr)
	code := run(ctx, &env{stdout: os.Stdout, stderr: stderr, getenv: os.Getenv}, os.Args[1:])
	stop()
	restoreLog()
	flushCtx, cancel := context.WithTimeout(context.Background(), linewriter.FlushTimeout)
	_ = stderr.Close(flushCtx)
	cancel()
	os.Exit(code)
}

// run dispatches args to a command and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 {
		mainUsage(e.stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "-h", "-help", "--help", "help":
		mainUsage(e.stdout)
		return exitOK
	case "-version", "--version":
		name, args = "version", []string{"version"}
	}
	for _, c := range commands() {
		if c.name != name {
			continue
		}
		err := c.run(ctx, e, args[1:])
		return exitCode(e, name, err)
	}
	fmt.Fprintf(e.stderr, "tablegate: unknown command %q\n\n", name)
	mainUsage(e.stderr)
	return exitUsage
}

func exitCode(e *env, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(e.stderr, "tablegate %s: %s\nRun \"tablegate %s --help\" for usage.\n", name, ue.msg, name)
		return exitUsage
	}
	if errors.Is(err, errReported) {
		return exitFailure
	}
	fmt.Fprintf(e.stderr, "tablegate %s: %v\n", name, err)
	return exitFailure
}

// errReported is a failure whose explanation was already printed.
var errReported = errors.New("failure reported")

// newFlagSet returns a flag set for a command that writes its usage to
// stderr and reports errors through parse.
func newFlagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet("tablegate "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args; a parse error becomes a usage error (the flag package
// already printed it with the usage), --help becomes flag.ErrHelp.
func parse(e *env, fs *flag.FlagSet, args []string) error {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			fs.SetOutput(e.stdout)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errReportedUsage
	}
	return nil
}

// errReportedUsage is a usage error whose message the flag package printed.
var errReportedUsage = &usageError{msg: "invalid flags"}
