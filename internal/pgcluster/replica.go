package pgcluster

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// replicatedOpts are the server options of a primary that streams to
// replicas, and of its replicas: WAL for streaming, and local commits that
// reach the WAL file before COMMIT returns (so a standby receives a commit
// at once, not at the WAL writer's next round; fsync stays off).
func replicatedOpts(dir string) string {
	return fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=local "+
		"-c full_page_writes=on -c max_connections=200 -c wal_level=replica -c max_wal_senders=8 "+
		"-c hot_standby=on -c wal_receiver_status_interval=1s", dir)
}

// StartPrimary is [Start] for a cluster that streaming replicas can
// follow ([Cluster.StartReplica]): wal_level=replica, WAL senders, and
// pg_hba trusting local replication connections (initdb's -A trust).
func StartPrimary(ctx context.Context, logf func(format string, args ...any)) (*Cluster, error) {
	return start(ctx, logf, true)
}

// StartReplica copies the running cluster c with pg_basebackup -R (which
// writes standby.signal and primary_conninfo) into a new temporary
// directory and starts a second postmaster on it: a hot standby streaming
// from c, on its own unix socket. c must have been started by
// [StartPrimary]. Stop the replica with its own [Cluster.Stop].
func (c *Cluster) StartReplica(ctx context.Context, logf func(format string, args ...any)) (*Cluster, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	dir, err := os.MkdirTemp(filepath.Dir(c.dir), "tablegate-pg-replica-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: temp dir: %w", err)
	}
	r := &Cluster{dir: dir, binDir: c.binDir, cred: c.cred}
	if c.cred != nil {
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: chown: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	logf("pg_basebackup -R -D %s", data)
	if out, err := r.run(ctx, "pg_basebackup", "-h", c.dir, "-U", "postgres", "-D", data, "-R", "-X", "stream",
		"--no-sync", "-c", "fast"); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgcluster: pg_basebackup: %w: %s", err, out)
	}
	r.opts = replicatedOpts(dir)
	logf("pg_ctl start (replica)")
	if out, err := r.run(ctx, "pg_ctl", "-D", data, "-o", r.opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		logText, _ := os.ReadFile(filepath.Join(dir, "log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgcluster: pg_ctl start (replica): %w: %s %s", err, out, logText)
	}
	r.URL = "postgres://postgres@/postgres?host=" + url.QueryEscape(dir) + "&sslmode=disable"
	return r, nil
}

// URLFor returns the URL of database name on the cluster.
func (c *Cluster) URLFor(name string) string {
	return "postgres://postgres@/" + url.PathEscape(name) + "?host=" + url.QueryEscape(c.dir) + "&sslmode=disable"
}

// SetApplyDelay sets recovery_min_apply_delay on a replica (commits are
// replayed no sooner than d after the primary made them; 0 for none) and
// reloads its configuration, returning once new sessions see the setting.
// Tests use it to watch a lagging replica.
func (c *Cluster) SetApplyDelay(d time.Duration) error {
	conf := filepath.Join(c.dir, "data", "postgresql.auto.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		return fmt.Errorf("pgcluster: read %s: %w", conf, err)
	}
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if !strings.HasPrefix(line, "recovery_min_apply_delay") {
			keep = append(keep, line)
		}
	}
	keep = append(keep, fmt.Sprintf("recovery_min_apply_delay = '%dms'", d.Milliseconds()))
	if err := os.WriteFile(conf, []byte(strings.Join(keep, "\n")+"\n"), 0o600); err != nil {
		return fmt.Errorf("pgcluster: write %s: %w", conf, err)
	}
	if c.cred != nil {
		_ = os.Chown(conf, int(c.cred.Uid), int(c.cred.Gid))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if out, err := c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "reload"); err != nil {
		return fmt.Errorf("pgcluster: pg_ctl reload: %w: %s", err, out)
	}
	// The reload is asynchronous: return once a new session sees the
	// setting, so that callers need not guess how long it takes.
	want := fmt.Sprint(d.Milliseconds())
	for {
		got, err := c.SQL(ctx, "postgres", "select setting from pg_settings where name = 'recovery_min_apply_delay'")
		if err == nil && got == want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: recovery_min_apply_delay is %q, not %sms, 30 s after the reload (%v)", got, want, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// SQL runs statements with psql as superuser postgres on database db of
// the cluster and returns psql's unaligned, tuples-only output.
func (c *Cluster) SQL(ctx context.Context, db, sql string) (string, error) {
	out, err := c.run(ctx, "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", c.dir, "-U", "postgres", "-d", db, "-c", sql)
	if err != nil {
		return "", fmt.Errorf("pgcluster: psql: %w: %s", err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// Promote ends recovery on a replica (pg_ctl promote): it becomes a
// primary of its own, no longer following the cluster it was copied from.
func (c *Cluster) Promote() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if out, err := c.run(ctx, "pg_ctl", "-D", filepath.Join(c.dir, "data"), "-w", "promote"); err != nil {
		return fmt.Errorf("pgcluster: pg_ctl promote: %w: %s", err, out)
	}
	return nil
}
