// Package pgtest gives each test its own isolated, migrated PostgreSQL
// database, cloned from a template that is migrated once per run.
//
// The server is found once per test process, in this order:
//
//  1. TEST_DATABASE_URL, else DATABASE_URL (a role that may CREATE DATABASE);
//  2. a server answering on 127.0.0.1:5432 as user postgres;
//  3. a throwaway cluster from local initdb/pg_ctl (see package pgcluster);
//  4. [Fallback], which the integration module sets to start a
//     testcontainers Postgres when a Docker engine answers.
//
// With none, the test fails (it never skips) with one line saying how to get
// a server. Use [Main] in TestMain so that a throwaway cluster is stopped.
//
// The template is named after a hash of the embedded migrations, built under
// an advisory lock, and shared by every test package of the run; clones are
// dropped at cleanup (kept, with their URL logged, when the test failed).
package pgtest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgcluster"
	"github.com/tablegate/tablegate/sql/migrations"
)

// Fallback, when set before the first test asks for a database, starts a
// server when no other source answers (testcontainers, in the integration
// module). It returns an admin URL and a stop function.
var Fallback func(ctx context.Context) (adminURL string, stop func() error, err error)

// MaxConns caps the pool of each test database, so that parallel packages
// stay under the server's max_connections.
const MaxConns = 4

const localURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

type server struct {
	adminURL string
	stop     func() error
	source   string
}

var (
	serverOnce = sync.OnceValues(resolveServer)
	tplMu      sync.Mutex
	tplName    string
	seq        atomic.Int64
)

// Main runs the tests of a package and stops a throwaway cluster, if one was
// started. Call it from TestMain: func TestMain(m *testing.M) { pgtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	runLoose.cleanup()
	if s, err := serverOnce(); err == nil && s.stop != nil {
		_ = s.stop()
	}
	os.Exit(code)
}

func resolveServer() (*server, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if u := cmp.Or(os.Getenv("TEST_DATABASE_URL"), os.Getenv("DATABASE_URL")); u != "" {
		if err := ping(ctx, u); err != nil {
			return nil, fmt.Errorf("TEST_DATABASE_URL/DATABASE_URL does not answer: %w", err)
		}
		return &server{adminURL: u, source: "env"}, nil
	}
	if err := ping(ctx, localURL); err == nil {
		return &server{adminURL: localURL, source: "127.0.0.1:5432"}, nil
	}
	if c, err := pgcluster.Start(ctx, nil); err == nil {
		return &server{adminURL: c.URL, stop: c.Stop, source: "local cluster"}, nil
	} else if !errors.Is(err, pgcluster.ErrNoBinaries) {
		return nil, err
	}
	if Fallback != nil {
		u, stop, err := Fallback(ctx)
		if err == nil {
			return &server{adminURL: u, stop: stop, source: "fallback"}, nil
		}
	}
	return nil, errors.New("no PostgreSQL server: set TEST_DATABASE_URL, start one on 127.0.0.1:5432, install postgresql (initdb), or start a Docker engine")
}

func ping(ctx context.Context, u string) error {
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := pgx.Connect(pctx, u)
	if err != nil {
		return err
	}
	return conn.Close(pctx)
}

// AdminURL returns the URL of the server's admin connection (a role that can
// create databases). It fails the test when no server can be had.
func AdminURL(tb testing.TB) string {
	tb.Helper()
	s, err := serverOnce()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return s.adminURL
}

// withDatabase returns u with its database name replaced.
func withDatabase(u, name string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return u
	}
	pu.Path = "/" + name
	return pu.String()
}

// migrationsHash names the template after the embedded migration files.
func migrationsHash() string {
	h := sha256.New()
	_ = fs.WalkDir(migrations.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(migrations.FS, p)
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(b))
		h.Write(b)
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// template returns the name of the migrated template database, building it
// once per server (under an advisory lock shared by concurrent processes).
func template(tb testing.TB, admin *pgx.Conn) string {
	tb.Helper()
	tplMu.Lock()
	defer tplMu.Unlock()
	if tplName != "" {
		return tplName
	}
	ctx := context.Background()
	name := "tg_tpl_" + migrationsHash()
	if _, err := admin.Exec(ctx, "select pg_advisory_lock(hashtext($1))", name); err != nil {
		tb.Fatalf("pgtest: lock: %v", err)
	}
	defer admin.Exec(ctx, "select pg_advisory_unlock(hashtext($1))", name) //nolint:errcheck
	var isTemplate *bool
	err := admin.QueryRow(ctx, "select datistemplate from pg_database where datname = $1", name).Scan(&isTemplate)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		tb.Fatalf("pgtest: %v", err)
	}
	if isTemplate == nil || !*isTemplate {
		// Missing, or left half-built by a crashed run: build it afresh.
		if _, err := admin.Exec(ctx, `drop database if exists "`+name+`" with (force)`); err != nil {
			tb.Fatalf("pgtest: drop stale template: %v", err)
		}
		if _, err := admin.Exec(ctx, `create database "`+name+`"`); err != nil {
			tb.Fatalf("pgtest: create template: %v", err)
		}
		pool, err := pgxpool.New(ctx, withDatabase(AdminURL(tb), name))
		if err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
		err = db.Migrate(ctx, pool)
		pool.Close() // no session may stay connected to a template
		if err != nil {
			tb.Fatalf("pgtest: migrate template: %v", err)
		}
		if _, err := admin.Exec(ctx, `alter database "`+name+`" is_template true`); err != nil {
			tb.Fatalf("pgtest: %v", err)
		}
	}
	tplName = name
	return name
}

// URL returns the URL of a fresh database cloned from the migrated template,
// dropped when the test ends (kept and logged when it failed).
func URL(tb testing.TB) string {
	tb.Helper()
	return create(tb, true)
}

// EmptyURL returns the URL of a fresh database with no migrations applied
// (for migration tests), dropped like [URL]'s.
func EmptyURL(tb testing.TB) string {
	tb.Helper()
	return create(tb, false)
}

func create(tb testing.TB, migrated bool) string {
	tb.Helper()
	adminURL := AdminURL(tb)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		tb.Fatalf("pgtest: connect: %v", err)
	}
	defer admin.Close(ctx)
	sweepOnce.Do(func() { sweep(admin) })
	name := fmt.Sprintf("tg_t_%d_%d_%d", time.Now().Unix(), os.Getpid(), seq.Add(1))
	stmt := `create database "` + name + `"`
	if migrated {
		stmt += ` template "` + template(tb, admin) + `"`
	}
	if _, err := admin.Exec(ctx, stmt); err != nil {
		tb.Fatalf("pgtest: create database: %v", err)
	}
	u := withDatabase(adminURL, name)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("pgtest: kept database %s for inspection", u)
			return
		}
		c, err := pgx.Connect(context.Background(), adminURL)
		if err != nil {
			tb.Logf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(context.Background(), `drop database if exists "`+name+`" with (force)`); err != nil {
			tb.Logf("pgtest: drop %s: %v", name, err)
		}
	})
	return u
}

// DB returns a pool on a fresh migrated database (see [URL]), capped at
// [MaxConns] connections and closed when the test ends. It connects as the
// admin role (a superuser here): bind work to a caller with package db so
// that row-level security applies.
func DB(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	return Pool(tb, URL(tb))
}

// Pool opens a capped pool on u, closed when the test ends.
func Pool(tb testing.TB, u string) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	cfg.MaxConns = MaxConns
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

var sweepOnce sync.Once

// sweep drops test databases left behind by runs that ended more than two
// hours ago (crashed processes, or failures kept for inspection).
func sweep(admin *pgx.Conn) {
	ctx := context.Background()
	rows, err := admin.Query(ctx, `select datname from pg_database where datname like 'tg\_t\_%'`)
	if err != nil {
		return
	}
	names, _ := pgx.CollectRows(rows, pgx.RowTo[string])
	cutoff := time.Now().Add(-2 * time.Hour).Unix()
	for _, n := range names {
		var ts int64
		parts := strings.Split(n, "_")
		if len(parts) < 3 {
			continue
		}
		if _, err := fmt.Sscan(parts[2], &ts); err != nil || ts >= cutoff {
			continue
		}
		_, _ = admin.Exec(ctx, `drop database if exists "`+n+`" with (force)`)
	}
}

// Cluster starts a throwaway cluster of the test's own (see package
// pgcluster), for tests that stop Postgres for real. It returns the
// superuser URL and stop, which stops the cluster and removes its files;
// cleanup calls stop when the test did not. The cluster is not migrated.
func Cluster(tb testing.TB) (url string, stop func() error) {
	tb.Helper()
	c, err := pgcluster.Start(context.Background(), tb.Logf)
	if err != nil {
		tb.Fatalf("pgtest: start a throwaway cluster (needs initdb/pg_ctl: apt-get install postgresql): %v", err)
	}
	stop = sync.OnceValue(c.Stop)
	tb.Cleanup(func() { _ = stop() })
	return c.URL, stop
}

// runLoose is the testing.TB of the databases [ExampleURL] creates: their
// cleanup runs when [Main] returns.
var runLoose = &looseTB{}

// ExampleURL returns the URL of a migrated database of its own, for code
// that has no testing.TB (an Example function); [Main] drops it after the
// run. It is created once per test process.
func ExampleURL() (string, error) {
	return exampleOnce()
}

var exampleOnce = sync.OnceValues(func() (u string, err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(looseFatal)
			if !ok {
				panic(r)
			}
			err = errors.New(string(f))
		}
	}()
	return URL(runLoose), nil
})

// looseTB is a testing.TB outside a test: Fatalf panics with a
// looseFatal (ExampleURL recovers it), Cleanup collects for Main.
type looseTB struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
}

type looseFatal string

func (*looseTB) Helper()      {}
func (*looseTB) Failed() bool { return false }
func (*looseTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}
func (*looseTB) Fatalf(format string, args ...any) { panic(looseFatal(fmt.Sprintf(format, args...))) }
func (t *looseTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}

func (t *looseTB) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
