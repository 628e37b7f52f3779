package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/tablegate/tablegate/server"
)

// budgetFlags are the pool, time budget and shutdown flags of serve and
// demo.
type budgetFlags struct {
	maxConns         int
	perCaller        int
	statementTimeout time.Duration
	acquireTimeout   time.Duration
	shutdownTimeout  time.Duration
}

func (b *budgetFlags) register(fs *flag.FlagSet) {
	fs.IntVar(&b.maxConns, "db-max-conns", 0, "database pool size `N` (default 8 per CPU, 16..64; or the URL's pool_max_conns)")
	fs.IntVar(&b.perCaller, "db-max-conns-per-caller", 0, "pooled connections one caller (a user, or every caller without a token together) may hold while others wait (a caller alone may use every idle connection); beyond it, on a full pool, the caller waits, then gets 429 (default half the pool; negative: no bound)")
	fs.DurationVar(&b.statementTimeout, "statement-timeout", 0, "time budget of each statement of a request, and of each pause a hook or action takes between them (default 5s; negative: none)")
	fs.DurationVar(&b.acquireTimeout, "acquire-timeout", 0, "longest wait for a free pooled connection before answering 503 (default 2s)")
	fs.DurationVar(&b.shutdownTimeout, "shutdown-timeout", server.DefaultShutdownTimeout, "on SIGINT/SIGTERM, let running requests finish for this long, then cancel them")
}

func (b *budgetFlags) validate() error {
	if b.maxConns < 0 || b.maxConns > 10000 {
		return usagef("--db-max-conns must be between 1 and 10000")
	}
	if b.statementTimeout > 0 && b.statementTimeout < time.Millisecond {
		return usagef("--statement-timeout must be at least 1ms (negative: none)")
	}
	if b.shutdownTimeout <= 0 {
		return usagef("--shutdown-timeout must be positive")
	}
	return nil
}

// apply writes the flags given (non-zero) over the config's database
// object.
func (b *budgetFlags) apply(c *server.DatabaseConfig) {
	if b.maxConns != 0 {
		c.MaxConns = int32(b.maxConns)
	}
	if b.perCaller != 0 {
		c.MaxConnsPerCaller = b.perCaller
	}
	if b.statementTimeout != 0 {
		c.StatementTimeout = b.statementTimeout.String()
	}
	if b.acquireTimeout != 0 {
		c.AcquireTimeout = b.acquireTimeout.String()
	}
}

// opsFlags are the operations flags of serve and demo.
type opsFlags struct {
	adminAddr  string
	accessLog  bool
	logSubject bool
}

func (f *opsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.adminAddr, "admin-addr", "", "serve /livez, /readyz and /metrics (Prometheus) on this separate `HOST:PORT` (default none; config key admin_addr)")
	fs.BoolVar(&f.accessLog, "access-log", true, "write one JSON access log line per request to stderr (config key access_log)")
	fs.BoolVar(&f.logSubject, "log-subject", false, "add the caller's user id to the access log (config key log_subject)")
}

// apply writes the flags the command line set over the config's keys.
func (f *opsFlags) apply(fs *flag.FlagSet, cfg *server.Config) {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "admin-addr":
			cfg.AdminAddr = f.adminAddr
		case "access-log":
			cfg.AccessLog = &f.accessLog
		case "log-subject":
			cfg.LogSubject = f.logSubject
		}
	})
}

// timeoutFlags are --read-header-timeout, --read-timeout, --write-timeout
// and --idle-timeout; a flag overwrites the config's timeout only when
// given, so a config file's value survives an absent flag.
type timeoutFlags struct{ server.Timeouts }

func (t *timeoutFlags) register(fs *flag.FlagSet) {
	def := server.DefaultTimeouts
	for _, f := range []struct {
		p, def     *server.Duration
		flag, what string
	}{
		{&t.ReadHeader, &def.ReadHeader, "read-header-timeout", "reading a request's headers"},
		{&t.Read, &def.Read, "read-timeout", "reading a whole request, body included"},
		{&t.Write, &def.Write, "write-timeout", "writing a response (from the end of the request headers)"},
		{&t.Idle, &def.Idle, "idle-timeout", "a keep-alive connection waiting for its next request"},
	} {
		fs.Var(f.p, f.flag, fmt.Sprintf("`duration` bound on %s (default %s)", f.what, f.def))
	}
}

// apply writes the timeouts given over c.
func (t *timeoutFlags) apply(c *server.Timeouts) {
	for _, f := range []struct{ from, to *server.Duration }{
		{&t.ReadHeader, &c.ReadHeader}, {&t.Read, &c.Read}, {&t.Write, &c.Write}, {&t.Idle, &c.Idle},
	} {
		if *f.from != 0 {
			*f.to = *f.from
		}
	}
}
