package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

	"github.com/tablegate/tablegate/db"
)

const migrateUsage = `Usage:
  tablegate migrate up     [--database-url URL] [--to VERSION]
  tablegate migrate down   [--database-url URL] [--to VERSION]
  tablegate migrate status [--database-url URL]

Applies tablegate's embedded SQL migrations (roles, auth.* helpers, the
tablegate schema with current_tenant_id(), tenants and memberships) with goose.
The version table is tablegate_migrations, so an application's own goose
migrations can share the database. "up" applies every pending migration (or
up to --to); "down" rolls back the latest one (or down to --to; --to 0 rolls
back all). Several processes may migrate at once: a session advisory lock
serializes them.

The database comes from --database-url, else DATABASE_URL.
`

func runMigrate(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, migrateUsage)
		return usagef("missing subcommand: up, down or status")
	}
	sub := args[0]
	switch sub {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(e.stdout, migrateUsage)
		return nil
	case "up", "down", "status":
	default:
		return usagef("unknown subcommand %q: want up, down or status", sub)
	}
	fs := newFlagSet(e, "migrate "+sub, migrateUsage)
	dbURL := fs.String("database-url", "", "Postgres `URL` (default $DATABASE_URL)")
	to := fs.Int64("to", -1, "target `version` (up: apply up to it; down: roll back to it, 0 = all)")
	if err := parse(e, fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if sub == "status" && *to >= 0 {
		return usagef("--to applies to up and down only")
	}
	url, err := databaseURL(e.getenv, *dbURL, "")
	if err != nil {
		return err
	}
	pool, err := connect(ctx, url)
	if err != nil {
		return err
	}
	defer pool.Close()
	switch sub {
	case "up":
		return migrateUp(ctx, e.stdout, pool, *to)
	case "down":
		return migrateDown(ctx, e.stdout, pool, *to)
	}
	return migrateStatus(ctx, e.stdout, pool)
}

// databaseURL returns the first database URL given: the --database-url
// flag, else $DATABASE_URL, else the config file's database_url (pass ""
// where a command has no config). None is a usage error saying how to give
// one.
func databaseURL(getenv func(string) string, flagValue, configValue string) (string, error) {
	for _, v := range []string{flagValue, getenv("DATABASE_URL"), configValue} {
		if v != "" {
			return v, nil
		}
	}
	return "", usagef("no database: pass --database-url or set DATABASE_URL (e.g. postgres://postgres@127.0.0.1:5432/postgres)")
}

// connect opens a pool and pings it, with an error that says what to check.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, usagef("invalid database URL: %v", redactErr(err))
	}
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to the database: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("database unreachable at %s: %w (is Postgres running? check the URL)", redactURL(cfg), err)
	}
	return pool, nil
}

// redactURL names host, port and database of a config, never the password.
func redactURL(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	host := c.Host
	if filepath.IsAbs(host) {
		host = "socket " + host
	}
	return fmt.Sprintf("%s:%d/%s (user %s)", host, c.Port, c.Database, c.User)
}

// redactErr hides a parse error that may quote the URL (and a password).
func redactErr(err error) string {
	msg := err.Error()
	if strings.Contains(msg, "@") || strings.Contains(msg, "password") {
		return "cannot parse the URL (check its syntax)"
	}
	return msg
}

func migrateUp(ctx context.Context, w io.Writer, pool *pgxpool.Pool, to int64) error {
	p, closeDB, err := db.NewMigrator(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("read migration versions: %w", err)
	}
	if to >= 0 && to < target {
		target = to
	}
	if cur >= target {
		fmt.Fprintf(w, "✓ migrations current (version %d)\n", cur)
		return nil
	}
	n := 0
	for {
		r, err := p.UpByOne(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			break
		}
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		n++
		fmt.Fprintf(w, "✓ applied %s (%s)\n", filepath.Base(r.Source.Path), r.Duration.Round(time.Millisecond))
		if r.Source.Version >= target {
			break
		}
	}
	cur, _, _ = p.GetVersions(ctx)
	fmt.Fprintf(w, "✓ %d migration(s) applied; version %d\n", n, cur)
	return nil
}

func migrateDown(ctx context.Context, w io.Writer, pool *pgxpool.Pool, to int64) error {
	p, closeDB, err := db.NewMigrator(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	var results []*goose.MigrationResult
	if to >= 0 {
		results, err = p.DownTo(ctx, to)
	} else {
		var r *goose.MigrationResult
		r, err = p.Down(ctx)
		if r != nil {
			results = append(results, r)
		}
	}
	for _, r := range results {
		if r.Error == nil {
			fmt.Fprintf(w, "✓ rolled back %s (%s)\n", filepath.Base(r.Source.Path), r.Duration.Round(time.Millisecond))
		}
	}
	if errors.Is(err, goose.ErrNoNextVersion) || (err == nil && len(results) == 0) {
		fmt.Fprintln(w, "✓ nothing to roll back")
		return nil
	}
	if err != nil {
		return fmt.Errorf("migrate down: %w", err)
	}
	cur, _, _ := p.GetVersions(ctx)
	fmt.Fprintf(w, "✓ version %d\n", cur)
	return nil
}

func migrateStatus(ctx context.Context, w io.Writer, pool *pgxpool.Pool) error {
	p, closeDB, err := db.NewMigrator(pool)
	if err != nil {
		return err
	}
	defer closeDB()
	st, err := p.Status(ctx)
	if err != nil {
		return fmt.Errorf("migration status: %w", err)
	}
	pending := 0
	for _, s := range st {
		mark, when := "✓", ""
		if s.State == goose.StatePending {
			mark, when = "·", "pending"
			pending++
		} else {
			when = "applied " + s.AppliedAt.Local().Format(time.DateTime)
		}
		fmt.Fprintf(w, "%s %05d %-40s %s\n", mark, s.Source.Version, filepath.Base(s.Source.Path), when)
	}
	if pending > 0 {
		fmt.Fprintf(w, "%d pending: run \"tablegate migrate up\"\n", pending)
	} else {
		fmt.Fprintln(w, "all migrations applied")
	}
	return nil
}
