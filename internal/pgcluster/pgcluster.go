// Package pgcluster starts a throwaway local PostgreSQL cluster from the
// initdb and pg_ctl binaries on this machine. The test harness and
// "tablegate demo" use it when no server is configured.
//
// initdb refuses to run as root; when the process is root the cluster runs
// as the "postgres" system user. The cluster listens only on a unix socket
// inside its temporary directory and is tuned for throwaway use (fsync off).
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoBinaries is returned by [Start] when initdb or pg_ctl is not found.
var ErrNoBinaries = errors.New("pgcluster: initdb/pg_ctl not found (install postgresql)")

// Cluster is a running throwaway cluster. Stop it to remove every file.
type Cluster struct {
	dir    string
	binDir string
	cred   *syscall.Credential
	opts   string
	// URL connects as superuser postgres to database postgres over the socket.
	URL string
}

// FindBinaries returns the directory holding initdb and pg_ctl: PATH first,
// then the highest /usr/lib/postgresql/*/bin.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if _, err := exec.LookPath("pg_ctl"); err == nil {
			// A symlink into the installation (/usr/local/bin/initdb):
			// its directory holds pg_basebackup and psql too.
			if real, err := filepath.EvalSymlinks(p); err == nil {
				if _, err := os.Stat(filepath.Join(filepath.Dir(real), "pg_ctl")); err == nil {
					p = real
				}
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func versionOf(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start creates and starts a cluster in a new temporary directory. Progress
// lines go to logf when it is not nil.
func Start(ctx context.Context, logf func(format string, args ...any)) (*Cluster, error) {
	return start(ctx, logf, false)
}

func start(ctx context.Context, logf func(format string, args ...any), replicated bool) (*Cluster, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	binDir, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	base := os.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	dir, err := os.MkdirTemp(base, "tablegate-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: temp dir: %w", err)
	}
	c := &Cluster{dir: dir, binDir: binDir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: running as root needs a 'postgres' system user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("pgcluster: chown: %w", err)
		}
	}
	data := filepath.Join(dir, "data")
	logf("initdb %s", data)
	if out, err := c.run(ctx, "initdb", "--no-sync", "-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C", "-D", data); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgcluster: initdb: %w: %s", err, out)
	}
	opts := fmt.Sprintf("-c listen_addresses='' -c unix_socket_directories=%s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", dir)
	if replicated {
		opts = replicatedOpts(dir)
	}
	logf("pg_ctl start")
	c.opts = opts
	if out, err := c.run(ctx, "pg_ctl", "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		logText, _ := os.ReadFile(filepath.Join(dir, "log"))
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("pgcluster: pg_ctl start: %w: %s %s", err, out, logText)
	}
	c.URL = "postgres://postgres@/postgres?host=" + url.QueryEscape(dir) + "&sslmode=disable"
	return c, nil
}

// Dir is the cluster's temporary directory.
func (c *Cluster) Dir() string { return c.dir }

// StopServer stops the server (fast shutdown: connections are closed)
// and keeps its files, so that [Cluster.StartServer] can bring it back.
// Tests use it to watch a database outage.
func (c *Cluster) StopServer() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := filepath.Join(c.dir, "data")
	pid := postmasterPID(data)
	if out, err := c.run(ctx, "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("pgcluster: pg_ctl stop: %w: %s", err, out)
	}
	return waitExit(ctx, pid, data)
}

// StartServer starts a server stopped by [Cluster.StopServer] again, on
// the same socket.
func (c *Cluster) StartServer() error {
	ctx, cancel := context.WithTimeout(context.Background(), 70*time.Second)
	defer cancel()
	data := filepath.Join(c.dir, "data")
	if out, err := c.run(ctx, "pg_ctl", "-D", data, "-o", c.opts, "-l", filepath.Join(c.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("pgcluster: pg_ctl start: %w: %s", err, out)
	}
	return nil
}

// Stop stops the server immediately and removes its directory. It
// returns once no process of the server runs any more.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	data := filepath.Join(c.dir, "data")
	pid := postmasterPID(data)
	_, err := c.run(ctx, "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
	if err == nil {
		err = waitExit(ctx, pid, data)
	}
	if rerr := os.RemoveAll(c.dir); err == nil {
		err = rerr
	}
	return err
}

// postmasterPID returns the postmaster's process id from the first line
// of data's postmaster.pid; 0 when the file is missing or unreadable.
func postmasterPID(data string) int {
	b, err := os.ReadFile(filepath.Join(data, "postmaster.pid"))
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// waitExit waits until process pid no longer runs as the postmaster of
// data. "pg_ctl stop -w" returns once postmaster.pid is gone, and the
// postmaster removes that file a moment before it exits (after its
// children): on a loaded machine a caller that returned from pg_ctl could
// still see it run.
func waitExit(ctx context.Context, pid int, data string) error {
	if pid <= 0 {
		return nil
	}
	for running(pid, data) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("pgcluster: postmaster %d still runs after pg_ctl stop: %w", pid, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

// running reports whether process pid is alive and still the postmaster
// of data. Where /proc exists, an exited process waiting to be reaped (a
// zombie, whose cmdline reads empty) and a reused pid count as not
// running; elsewhere the process's mere existence decides.
func running(pid int, data string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil {
		return bytes.Contains(b, []byte(data))
	}
	if _, serr := os.Stat("/proc/self"); serr == nil {
		return false // /proc answers: pid is gone
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(c.binDir, name), args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd.CombinedOutput()
}
