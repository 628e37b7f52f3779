package main

import (
	"context"
	"net/url"
	"strings"

	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/demo"
	"github.com/tablegate/tablegate/server"
)

const demoUsage = `Usage:
  tablegate demo [--addr HOST:PORT] [--database-url URL] [--signing-keys FILE]
                 [--auth-url URL] [--refresh] [--tokens-only] [--token-ttl DURATION]
                 [--print-env FILE] [--replica]
                 [--read-header-timeout D] [--read-timeout D]
                 [--write-timeout D] [--idle-timeout D]

Runs the whole stack on your machine in one command:

  1. Postgres: without --database-url or DATABASE_URL, starts a throwaway
     local cluster with initdb/pg_ctl from your PostgreSQL installation
     (socket only, in a temporary directory; removed on exit). Docker and
     testcontainers are not used by the CLI.
  2. applies tablegate's migrations and the demo schema (tenants A and B,
     members, public.todos with row-level security, a few rows);
  3. signing keys: a temporary ES256 key, or --signing-keys FILE (created
     there when missing, and kept);
  4. serves the demo API and prints curl lines with minted tokens, until
     Ctrl-C or SIGTERM; then stops Postgres and removes its files.

--replica also starts a streaming replica of the throwaway cluster
(pg_basebackup -R, a second postmaster) and routes gets and lists to it:
the demo writes a todo and reads it back carrying its Tablegate-Position.
With --database-url, DATABASE_REPLICA_URLS (comma-separated) names
replicas instead. See docs/scale-out.md.

Routes: /api/todos (list, get, create, update, delete, actions complete,
export, purge), /api/todos/events (live events, curl -N), /api/openapi.json,
/api/openapi.yaml, /api/docs (the
description of the same resource), /api/approvals (purge needs another
user's approval),
/mcp (the same operations as MCP tools, Streamable HTTP), /whoami, /guard/{user,
user-anon,user-anonymous,anonymous}, /auth/v1/.well-known/jwks.json, /livez,
/readyz; /account (a server-rendered page: who am I, sign in, sign out) and
the sign-in flows under /auth/ (sign-in, otp, verify, oauth, callback,
sign-out; see package authflow).

--print-env FILE writes "export KEY=VALUE" lines once the server answers
(atomically; values quoted for sh, so ". FILE" exports them):
BASE_URL JWKS_URL SIGNING_KEYS_PATH DATABASE_URL COOKIE_NAME TENANT_A TENANT_B
USER_ID USER_TOKEN ADMIN_TOKEN APPROVER_TOKEN ANON_USER_TOKEN
OTHER_TENANT_TOKEN SERVICE_KEY PUBLISHABLE_KEY SUPABASE_JWT_ISSUER (so that
"tablegate token" mints tokens the demo accepts), and USER_REFRESH_TOKEN
USER_EMAIL USER_PASSWORD when the demo is its own auth server (no
--auth-url): it then also answers GoTrue's refresh grant (rotating refresh
tokens with a 10 s reuse interval), the password and PKCE grants,
/authorize (the demo is its own OAuth provider), /otp (magic links are
printed), /verify and /logout, so sign-in, refresh and sign-out run offline. Use --addr 127.0.0.1:0 for a free port; the file and the
output show the real one.
`

func runDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "demo", demoUsage)
	o := demo.Options{Stdout: e.stdout, Stderr: e.stderr, StandIn: demoStandIn()}
	var budget budgetFlags
	var timeouts timeoutFlags
	var ops opsFlags
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:8080", "listen address `HOST:PORT` (port 0 picks a free one)")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "use this Postgres `URL` instead of a throwaway cluster (default $DATABASE_URL)")
	fs.StringVar(&o.SigningKeys, "signing-keys", "", "signing keys `file` (Supabase signing_keys_path format); default a temporary key")
	fs.StringVar(&o.AuthURL, "auth-url", "", "Supabase/GoTrue `URL`: verify tokens with {URL}/auth/v1/.well-known/jwks.json and refresh there instead of the demo's own JWKS")
	fs.BoolVar(&o.Refresh, "refresh", false, "refresh expiring cookie sessions (against the demo's own refresh grant, or --auth-url)")
	fs.BoolVar(&o.TokensOnly, "tokens-only", false, "the sign-in flows write sessions in @supabase/ssr's cookies.encode \"tokens-only\" form (no user object)")
	fs.DurationVar(&o.TokenTTL, "token-ttl", demo.TokenTTL, "lifetime of the minted tokens (a short one shows cookie refresh at work)")
	fs.DurationVar(&o.EventsRetention, "events-retention", events.DefaultRetention, "how long events stay in the outbox: the window in which a stream resumes with Last-Event-ID without a gap (at least 1m)")
	timeouts.register(fs)
	fs.StringVar(&o.PrintEnv, "print-env", "", "once serving, write KEY=VALUE lines (URLs, tokens, ids) to `FILE`")
	fs.BoolVar(&o.Replica, "replica", false, "also start a streaming replica of the throwaway cluster and route reads to it (read-your-writes with Tablegate-Position); with --database-url set "+envReplicaURLs+" instead")
	budget.register(fs)
	ops.register(fs)
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if err := budget.validate(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.DatabaseURL == "" {
		o.DatabaseURL = e.getenv("DATABASE_URL")
	}
	if o.Replica && o.DatabaseURL != "" {
		return usagef("--replica starts a replica of the demo's throwaway cluster; with --database-url/DATABASE_URL set %s to your replicas instead", envReplicaURLs)
	}
	if o.TokenTTL <= 0 {
		return usagef("--token-ttl must be positive")
	}
	if o.EventsRetention < server.MinRetention {
		return usagef("--events-retention %s is below %s: a client reconnecting after a short outage would miss events", o.EventsRetention, server.MinRetention)
	}
	tuneGC(e.getenv)
	o.PublishableKey = e.getenv("SUPABASE_PUBLISHABLE_KEY")
	if o.PublishableKey == "" {
		o.PublishableKey = e.getenv("SUPABASE_ANON_KEY")
	}
	if o.AuthURL != "" {
		u, err := url.Parse(o.AuthURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--auth-url must be an http(s) URL such as http://127.0.0.1:54321")
		}
		o.AuthURL = strings.TrimRight(o.AuthURL, "/")
	}
	budget.apply(&o.Server.Database)
	timeouts.apply(&o.Server.Timeouts)
	ops.apply(fs, &o.Server)
	o.Server.Log, o.Server.ShutdownTimeout = e.stderr, budget.shutdownTimeout
	// Only the replicas come from the environment: the demo sets its own
	// keys and issuer.
	o.Server.Getenv = func(k string) string {
		if k == envReplicaURLs {
			return e.getenv(k)
		}
		return ""
	}
	obs, err := setupObservability(ctx, e.getenv)
	if err != nil {
		return err
	}
	defer obs.close()
	obs.apply(&o.Server)
	return usage(demo.Run(ctx, &o))
}

// envReplicaURLs lists read replica URLs, comma-separated.
const envReplicaURLs = "DATABASE_REPLICA_URLS"
