package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/pgcluster"
)

//go:embed demo_schema.sql
var demoSchemaSQL string

// demoVacuumSQL sets the visibility maps and statistics of the tables
// every demo read touches (VACUUM runs outside a transaction: one
// statement).
const demoVacuumSQL = `vacuum (analyze) tablegate.tenant_members, tablegate.memberships, tablegate.tenants, public.todos`

// Fixed identities of the demo schema (demo_schema.sql).
const (
	demoTenantA     = "a0000000-0000-4000-8000-00000000000a"
	demoTenantB     = "b0000000-0000-4000-8000-00000000000b"
	demoUserID      = "11111111-1111-4111-8111-111111111111"
	demoAdminID     = "22222222-2222-4222-8222-222222222222"
	demoApproverID  = "33333333-3333-4333-8333-333333333333"
	demoAnonUserID  = "44444444-4444-4444-8444-444444444444"
	demoOtherUserID = "55555555-5555-4555-8555-555555555555"
	demoKeyName     = "demo"
	demoTokenTTL    = 12 * time.Hour
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

type demoOptions struct {
	addr        string
	databaseURL string
	signingKeys string
	authURL     string
	refresh     bool
	tokensOnly  bool
	tokenTTL    time.Duration
	// eventsRetention is how long /api/todos/events can resume.
	eventsRetention time.Duration
	// publishableKey is sent as apikey on refresh; default a demo key.
	publishableKey string
	printEnv       string
	// replica starts a streaming replica of the throwaway cluster and
	// routes reads to it.
	replica bool
	// budget sizes the pool, bounds database time and shutdown.
	budget   budgetFlags
	timeouts httpTimeouts
	ops      opsFlags
}

func runDemo(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(e, "demo", demoUsage)
	var o demoOptions
	fs.StringVar(&o.addr, "addr", "127.0.0.1:8080", "listen address `HOST:PORT` (port 0 picks a free one)")
	fs.StringVar(&o.databaseURL, "database-url", "", "use this Postgres `URL` instead of a throwaway cluster (default $DATABASE_URL)")
	fs.StringVar(&o.signingKeys, "signing-keys", "", "signing keys `file` (Supabase signing_keys_path format); default a temporary key")
	fs.StringVar(&o.authURL, "auth-url", "", "Supabase/GoTrue `URL`: verify tokens with {URL}/auth/v1/.well-known/jwks.json and refresh there instead of the demo's own JWKS")
	fs.BoolVar(&o.refresh, "refresh", false, "refresh expiring cookie sessions (against the demo's own refresh grant, or --auth-url)")
	fs.BoolVar(&o.tokensOnly, "tokens-only", false, "the sign-in flows write sessions in @supabase/ssr's cookies.encode \"tokens-only\" form (no user object)")
	fs.DurationVar(&o.tokenTTL, "token-ttl", demoTokenTTL, "lifetime of the minted tokens (a short one shows cookie refresh at work)")
	fs.DurationVar(&o.eventsRetention, "events-retention", events.DefaultRetention, "how long events stay in the outbox: the window in which a stream resumes with Last-Event-ID without a gap (at least 1m)")
	o.timeouts.flags(fs)
	fs.StringVar(&o.printEnv, "print-env", "", "once serving, write KEY=VALUE lines (URLs, tokens, ids) to `FILE`")
	fs.BoolVar(&o.replica, "replica", false, "also start a streaming replica of the throwaway cluster and route reads to it (read-your-writes with Tablegate-Position); with --database-url set "+envReplicaURLs+" instead")
	o.budget.register(fs)
	o.ops.register(fs)
	if err := parse(e, fs, args); err != nil {
		return err
	}
	if err := o.budget.validate(); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	if o.databaseURL == "" {
		o.databaseURL = e.getenv("DATABASE_URL")
	}
	if o.replica && o.databaseURL != "" {
		return usagef("--replica starts a replica of the demo's throwaway cluster; with --database-url/DATABASE_URL set %s to your replicas instead", envReplicaURLs)
	}
	if o.tokenTTL <= 0 {
		return usagef("--token-ttl must be positive")
	}
	if o.eventsRetention < minRetention {
		return usagef("--events-retention %s is below %s: a client reconnecting after a short outage would miss events", o.eventsRetention, minRetention)
	}
	tuneGC(e.getenv)
	o.publishableKey = e.getenv("SUPABASE_PUBLISHABLE_KEY")
	if o.publishableKey == "" {
		o.publishableKey = e.getenv("SUPABASE_ANON_KEY")
	}
	if o.authURL != "" {
		u, err := url.Parse(o.authURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usagef("--auth-url must be an http(s) URL such as http://127.0.0.1:54321")
		}
		o.authURL = strings.TrimRight(o.authURL, "/")
	}
	return demo(ctx, e, o)
}

// step prints a progress line and returns a func that completes it.
func step(w io.Writer, format string, args ...any) func(err error, detail string) {
	start := time.Now()
	fmt.Fprintf(w, "▸ "+format+"\n", args...)
	return func(err error, detail string) {
		d := time.Since(start).Round(time.Millisecond)
		if err != nil {
			fmt.Fprintf(w, "  ✗ %v\n", err)
			return
		}
		if detail != "" {
			detail = " " + detail
		}
		fmt.Fprintf(w, "  ✓%s (%s)\n", detail, d)
	}
}

func demo(ctx context.Context, e *env, o demoOptions) (err error) {
	out := e.stderr
	var cleanups []func()
	defer func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}()

	// 1. Postgres.
	dbURL := o.databaseURL
	replicaList, err := replicaURLs(e.getenv, nil)
	if err != nil {
		return err
	}
	if o.replica {
		primary, replica, err := startDemoReplica(ctx, out)
		if err != nil {
			return err
		}
		cleanups = append(cleanups, func() {
			done := step(out, "stopping Postgres (primary and replica) and removing their files")
			done(errors.Join(replica.Stop(), primary.Stop()), "")
		})
		dbURL, replicaList = primary.URL, []string{replica.URL}
	} else if dbURL == "" {
		done := step(out, "starting a throwaway Postgres (initdb + pg_ctl; no Docker)")
		cluster, err := pgcluster.Start(ctx, nil)
		done(err, "")
		if err != nil {
			if errors.Is(err, pgcluster.ErrNoBinaries) {
				return fmt.Errorf("%w; or pass --database-url postgres://USER@HOST:PORT/DB", err)
			}
			return err
		}
		fmt.Fprintf(out, "    data and socket in %s\n", cluster.Dir())
		cleanups = append(cleanups, func() {
			done := step(out, "stopping Postgres and removing %s", cluster.Dir())
			done(cluster.Stop(), "")
		})
		dbURL = cluster.URL
	} else {
		fmt.Fprintln(out, "▸ using the database of --database-url/DATABASE_URL (the demo adds tablegate's schema and public.todos to it)")
	}
	obs, err := setupObservability(ctx, e.getenv, o.ops.observeOpts(e))
	if err != nil {
		return err
	}
	cleanups = append(cleanups, obs.close)
	pool, err := connectPool(ctx, dbURL, int32(o.budget.maxConns), obs.tel)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, pool.Close)
	replicaPools, closeReplicas, err := connectReplicas(ctx, out, replicaList, int32(o.budget.maxConns), obs.tel)
	if err != nil {
		return err
	}
	cleanups = append(cleanups, closeReplicas)

	// 2. Migrations and the demo schema.
	done := step(out, "applying tablegate migrations")
	err = db.Migrate(ctx, pool)
	done(err, "")
	if err != nil {
		return err
	}
	done = step(out, "creating the demo schema (tenants A and B, public.todos with RLS, seed rows)")
	_, err = pool.Exec(ctx, demoSchemaSQL)
	if err == nil {
		// Fresh tables of a few rows: autovacuum would not visit them for
		// a long time. Vacuumed, the membership check of every read is an
		// index-only probe (no heap fetch) and the planner knows the sizes.
		_, err = pool.Exec(ctx, demoVacuumSQL)
	}
	done(err, "")
	if err != nil {
		return fmt.Errorf("demo schema: %w", err)
	}

	// 3. Signing keys.
	keysPath := o.signingKeys
	if keysPath == "" {
		dir, err := os.MkdirTemp("", "tablegate-demo-")
		if err != nil {
			return err
		}
		cleanups = append(cleanups, func() { _ = os.RemoveAll(dir) })
		keysPath = filepath.Join(dir, "signing_keys.json")
	}
	var ks *keySet
	if _, statErr := os.Stat(keysPath); statErr == nil {
		done = step(out, "loading signing keys from %s", keysPath)
		ks, err = loadKeyFile(keysPath)
		done(err, "")
	} else {
		done = step(out, "generating an ES256 signing key in %s", keysPath)
		var k jwk
		if k, err = newSigningJWK(); err == nil {
			if err = writeKeyFile(keysPath, []jwk{k}); err == nil {
				ks, err = loadKeyFile(keysPath)
			}
		}
		done(err, "")
	}
	if err != nil {
		return err
	}
	signer, err := ks.signer()
	if err != nil {
		return err
	}

	// 4. Listen first so that the JWKS URL knows the real port.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is the port in use? try --addr 127.0.0.1:0)", o.addr, err)
	}
	baseURL := "http://" + hostPort(ln.Addr())
	jwksURL := baseURL + "/auth/v1/.well-known/jwks.json"
	issuer := baseURL + "/auth/v1"
	if o.authURL != "" {
		jwksURL = o.authURL + "/auth/v1/.well-known/jwks.json"
		issuer = o.authURL + "/auth/v1"
	}
	secretKey := "sb_secret_" + strings.ReplaceAll(newUUID(), "-", "")
	publishableKey := o.publishableKey
	if publishableKey == "" {
		publishableKey = "sb_publishable_" + strings.ReplaceAll(newUUID(), "-", "")
	}

	srv := &demoServer{pool: pool, jwks: ks.publicJWKS()}
	if o.authURL == "" {
		srv.gotrue = newDemoAuthServer(ks, issuer, publishableKey)
	}
	httpSrv := o.timeouts.server(nil) // read, write and idle timeouts: no connection is pinned forever
	grace := newGraceful(httpSrv)
	serveErr := make(chan error, 1)
	// The resolver fetches the JWKS when it is built, possibly from this
	// very server: serve the JWKS before everything else is ready.
	var handler http.Handler
	ready := make(chan struct{})
	httpSrv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready:
			handler.ServeHTTP(w, r)
			return
		default:
		}
		if r.Method == http.MethodGet && r.URL.Path == "/auth/v1/.well-known/jwks.json" {
			srv.jwksHandler(w, r)
			return
		}
		w.Header().Set("Retry-After", "1")
		http.Error(w, "starting", http.StatusServiceUnavailable)
	})
	go func() { serveErr <- httpSrv.Serve(ln) }()
	cleanups = append(cleanups, func() {
		done := step(out, "stopping the server (running requests may finish for up to %s)", o.budget.shutdownTimeout)
		grace.shutdown(out, httpSrv, o.budget.shutdownTimeout)
		done(nil, "")
	})

	done = step(out, "starting the API on %s (JWKS from %s)", baseURL, jwksURL)
	projectURL := baseURL
	if o.authURL != "" {
		projectURL = o.authURL
	}
	rcfg := demoResolverConfig(projectURL, jwksURL, secretKey, publishableKey, o.refresh)
	rcfg.Telemetry = obs.tel
	rv, err := authctx.New(ctx, rcfg)
	if err != nil {
		done(err, "")
		return fmt.Errorf("auth (JWKS %s): %w", jwksURL, err)
	}
	cleanups = append(cleanups, rv.Close)
	d := db.New(pool, withReplicas(o.budget.dbConfig(), replicaPools))
	cleanups = append(cleanups, d.Close)
	if err := db.RecordReplicaStats(d, obs.tel); err != nil {
		done(err, "")
		return err
	}
	parts, err := buildDemoAPIWith(ctx, d, rv, baseURL, issuer,
		&events.Config{Retention: o.eventsRetention})
	if err != nil {
		done(err, "")
		return err
	}
	cleanups = append(cleanups, parts.hub.Close)
	srv.parts, srv.rv = parts, rv
	userSpec := tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: o.tokenTTL, Issuer: issuer}
	userPassword := ""
	if srv.gotrue != nil {
		userPassword = newDemoPassword()
		srv.gotrue.siteURL = baseURL
		srv.gotrue.addAccount(userSpec, demoUserEmail, "", userPassword)
		srv.gotrue.sent = func(m sentOTP) {
			fmt.Fprintf(out, "▸ magic link for %s (code %s): %s\n", m.Email, m.Code, m.Link)
		}
	}
	if srv.flows, err = demoFlows(rv, projectURL, baseURL, publishableKey, o.tokensOnly); err != nil {
		done(err, "")
		return err
	}
	handler = obs.tel.Handler(rv.Middleware(rv.CrossSite(srv.handler())))
	close(ready)
	done(nil, "")
	if o.ops.adminAddr != "" {
		_, stop, err := startAdmin(ctx, out, o.ops.adminAddr, adminHandler(readinessChecks(pool, rv), obs.metrics))
		if err != nil {
			return err
		}
		cleanups = append(cleanups, stop)
	}

	// 5. Tokens, env file, curl lines.
	now := time.Now()
	mint := func(sub string, anonymous bool, tenant string, roles ...string) string {
		if err != nil {
			return ""
		}
		var t string
		t, err = mintToken(ks, tokenSpec{Sub: sub, Anonymous: anonymous, Tenant: tenant, Roles: roles, TTL: o.tokenTTL, Issuer: issuer}, now)
		return t
	}
	var userToken, userRefresh string
	if srv.gotrue != nil {
		userToken, userRefresh, err = srv.gotrue.signIn(userSpec)
	} else {
		userToken, err = mintToken(ks, userSpec, now)
	}
	if err != nil {
		return err
	}
	vars := []envVar{
		{"BASE_URL", baseURL},
		{"JWKS_URL", jwksURL},
		{"SIGNING_KEYS_PATH", keysPath},
		{"DATABASE_URL", dbURL},
		{"COOKIE_NAME", rv.CookieName()},
		{"TENANT_A", demoTenantA},
		{"TENANT_B", demoTenantB},
		{"USER_ID", demoUserID},
		{"USER_TOKEN", userToken},
		{"ADMIN_TOKEN", mint(demoAdminID, false, demoTenantA, "admin")},
		{"APPROVER_TOKEN", mint(demoApproverID, false, demoTenantA, "approver")},
		{"ANON_USER_TOKEN", mint(demoAnonUserID, true, demoTenantA)},
		{"OTHER_TENANT_TOKEN", mint(demoOtherUserID, false, demoTenantB)},
		{"SERVICE_KEY", secretKey},
		{"PUBLISHABLE_KEY", publishableKey},
		// What "tablegate token" reads, so that after ". FILE" it mints
		// tokens this demo accepts: the issuer and the signing keys.
		{"SUPABASE_JWT_ISSUER", issuer},
	}
	if userRefresh != "" {
		vars = append(vars, envVar{"USER_REFRESH_TOKEN", userRefresh})
	}
	if userPassword != "" {
		vars = append(vars, envVar{"USER_EMAIL", demoUserEmail}, envVar{"USER_PASSWORD", userPassword})
	}
	if err != nil {
		return err
	}
	if o.printEnv != "" {
		if err := writeFileAtomic(o.printEnv, formatEnv(vars), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(out, "▸ wrote %s\n", o.printEnv)
	}
	printCurls(e.stdout, vars, signer.kid)
	if d.HasReplicas() {
		if err := showReadYourWrites(ctx, e.stdout, d, baseURL, userToken); err != nil {
			fmt.Fprintf(out, "! read-your-writes check: %v\n", err)
		}
	}

	select {
	case <-ctx.Done():
		fmt.Fprintln(out, "\n▸ shutting down")
		return nil
	case err := <-serveErr:
		return fmt.Errorf("server: %w", err)
	}
}

// demoResolverConfig is the caller resolution of the demo: tokens of the
// project at projectURL verified against jwksURL, the secret key as a
// service apikey, and the publishable key.
func demoResolverConfig(projectURL, jwksURL, secretKey, publishableKey string, refresh bool) *authctx.Config {
	return &authctx.Config{
		ProjectURL:     projectURL,
		VerifierConfig: authctx.VerifierConfig{JWKSURL: jwksURL},
		Secret:         true,
		SecretKeys:     map[string]string{demoKeyName: secretKey},
		// A Bearer equal to the publishable key counts as no credential
		// (supabase-js sends it when signed out); refresh sends it as apikey.
		PublishableKeys: []string{publishableKey},
		Refresh:         refresh,
	}
}

// hostPort renders a listener address for URLs (loopback 0.0.0.0 → 127.0.0.1).
func hostPort(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port))
}

// everywhere notes a listener bound to every interface: hostPort names
// 127.0.0.1 for it, which must not read as loopback only.
func everywhere(a net.Addr) string {
	if tcp, ok := a.(*net.TCPAddr); ok && (tcp.IP == nil || tcp.IP.IsUnspecified()) {
		return " — listening on every interface, reachable from the network"
	}
	return ""
}

type envVar struct{ key, value string }

// formatEnv renders vars as lines a POSIX shell can source (". FILE"):
// KEY=VALUE, the value single-quoted whenever it holds a character the
// shell would interpret (the database URL's "&" and "?", spaces, quotes).
// Values made only of safe characters (tokens, UUIDs, plain URLs) stay
// bare, so line-oriented KEY=VALUE readers keep working for them.
func formatEnv(vars []envVar) []byte {
	var b strings.Builder
	for _, v := range vars {
		fmt.Fprintf(&b, "export %s=%s\n", v.key, shellQuote(v.value))
	}
	return []byte(b.String())
}

// shellQuote returns s unchanged when every byte is shell-safe, else s in
// single quotes with each single quote written as quote, backslash, quote, quote.
func shellQuote(s string) string {
	safe := s != ""
	for i := 0; i < len(s) && safe; i++ {
		c := s[i]
		safe = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("-_.,:/@%+=", c) >= 0
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func printCurls(w io.Writer, vars []envVar, kid string) {
	get := func(k string) string {
		for _, v := range vars {
			if v.key == k {
				return v.value
			}
		}
		return ""
	}
	base := get("BASE_URL")
	defer func() {
		if pw := get("USER_PASSWORD"); pw != "" {
			fmt.Fprintf(w, "\nIn a browser: %s/account — sign in as %s / %s (or with the demo OAuth provider, or a magic link).\n",
				base, get("USER_EMAIL"), pw)
		}
	}()
	fmt.Fprintf(w, `
tablegate demo is ready at %[1]s (signing kid %[2]s). Paste:

  export BASE_URL=%[1]s
  export USER_TOKEN=%[3]s
  export ADMIN_TOKEN=%[4]s
  export APPROVER_TOKEN=%[5]s
  export ANON_USER_TOKEN=%[6]s
  export OTHER_TENANT_TOKEN=%[7]s
  export SERVICE_KEY=%[8]s

  curl -s $BASE_URL/whoami -H "Authorization: Bearer $USER_TOKEN"
  curl -s $BASE_URL/whoami -H "apikey: $SERVICE_KEY"
  curl -s $BASE_URL/guard/user -H "Authorization: Bearer $ANON_USER_TOKEN"      # 403 ANONYMOUS_USER
  curl -s $BASE_URL/guard/user-anonymous -H "Authorization: Bearer $ANON_USER_TOKEN"
  curl -s $BASE_URL/api/todos -H "Authorization: Bearer $USER_TOKEN"
  curl -s $BASE_URL/api/todos -H "Authorization: Bearer $OTHER_TENANT_TOKEN"    # tenant B only
  curl -s $BASE_URL/api/todos -H "Authorization: Bearer $USER_TOKEN" -H 'Content-Type: application/json' -d '{"title":"Try tablegate"}'
  curl -s -X POST $BASE_URL/api/todos/1/complete -H "Authorization: Bearer $USER_TOKEN"
  curl -N $BASE_URL/api/todos/events -H "Authorization: Bearer $USER_TOKEN"      # live: todos.created/updated/deleted, todo.completed (run in a second terminal)
  curl -s "$BASE_URL/api/todos/export?done=true" -H "Authorization: Bearer $USER_TOKEN"
  curl -s -X DELETE $BASE_URL/api/todos/1 -H "Authorization: Bearer $USER_TOKEN"   # 403 PERMISSION_DENIED
  curl -s -X POST $BASE_URL/api/todos/purge -H "Authorization: Bearer $USER_TOKEN" # 403 APPROVAL_REQUIRED with approval.id
  APPROVAL_ID=$(curl -s -X POST $BASE_URL/api/todos/purge -H "Authorization: Bearer $USER_TOKEN" | sed -n 's/.*"approval":{"id":"\([^"]*\)".*/\1/p'); echo $APPROVAL_ID
  curl -s -X POST $BASE_URL/api/approvals/$APPROVAL_ID/approve -H "Authorization: Bearer $APPROVER_TOKEN"
  curl -s -X POST $BASE_URL/api/todos/purge -H "Authorization: Bearer $USER_TOKEN" # now 200 {"deleted": n}
  curl -s $BASE_URL/api/openapi.json     # and $BASE_URL/api/docs in a browser

Ctrl-C stops the server and removes Postgres and the temporary files.
`, base, kid, get("USER_TOKEN"), get("ADMIN_TOKEN"), get("APPROVER_TOKEN"), get("ANON_USER_TOKEN"), get("OTHER_TENANT_TOKEN"), get("SERVICE_KEY"))
}
