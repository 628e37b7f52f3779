// Package demo runs tablegate demo: a throwaway Postgres, the demo schema,
// signing keys and a server built with package server that serves the
// demo's todos, approvals, MCP tools, sign-in flows and an auth server
// stand-in, until its context ends.
package demo

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/envfile"
	"github.com/tablegate/tablegate/internal/hostport"
	signing "github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/internal/pgcluster"
	"github.com/tablegate/tablegate/server"
)

// SchemaSQL is the demo schema: tenants A and B, their members,
// public.todos with row-level security, a few rows.
//
//go:embed schema.sql
var SchemaSQL string

// vacuumSQL sets the visibility maps and statistics of the tables every
// demo read touches (VACUUM runs outside a transaction: one statement).
const vacuumSQL = `vacuum (analyze) tablegate.tenant_members, tablegate.memberships, tablegate.tenants, public.todos`

// Fixed identities of the demo schema (schema.sql).
const (
	TenantA     = "a0000000-0000-4000-8000-00000000000a"
	TenantB     = "b0000000-0000-4000-8000-00000000000b"
	UserID      = "11111111-1111-4111-8111-111111111111"
	AdminID     = "22222222-2222-4222-8222-222222222222"
	ApproverID  = "33333333-3333-4333-8333-333333333333"
	AnonUserID  = "44444444-4444-4444-8444-444444444444"
	OtherUserID = "55555555-5555-4555-8555-555555555555"
	// KeyName names the demo's secret key.
	KeyName = "demo"
	// TokenTTL is the default lifetime of the minted tokens.
	TokenTTL = 12 * time.Hour
)

// Options are the choices of tablegate demo (its flags).
type Options struct {
	// Addr is the listen address (port 0 picks a free one).
	Addr string
	// DatabaseURL, when set, is used instead of a throwaway cluster.
	DatabaseURL string
	// Replica starts a streaming replica of the throwaway cluster and
	// routes reads to it.
	Replica bool
	// SigningKeys is the signing keys file, loaded when it exists, else
	// created and kept; empty: a temporary key.
	SigningKeys string
	// AuthURL, when set, is the Supabase project (or GoTrue) that issues
	// and refreshes the tokens; empty: the demo is its own auth server.
	AuthURL string
	// Refresh refreshes expiring cookie sessions.
	Refresh bool
	// TokensOnly writes sessions in @supabase/ssr's tokens-only form.
	TokensOnly bool
	// TokenTTL is the lifetime of the minted tokens.
	TokenTTL time.Duration
	// EventsRetention is how long /api/todos/events can resume.
	EventsRetention time.Duration
	// PublishableKey is sent as apikey on refresh; empty: a demo key.
	PublishableKey string
	// PrintEnv, when set, is the file the KEY=VALUE lines go to.
	PrintEnv string
	// Server holds the server's operations settings (database budget,
	// timeouts, admin listener, access log, shutdown timeout,
	// observability providers); the demo sets the rest.
	Server server.Config
	// StandIn reaches the signing keys and the auth server stand-in.
	StandIn StandIn
	// Stdout receives the curl lines, Stderr the progress and the log.
	Stdout, Stderr io.Writer
}

// Token is a token the demo mints.
type Token struct {
	Sub       string
	Anonymous bool
	Tenant    string
	Roles     []string
	TTL       time.Duration
	Issuer    string
}

// Keys are the demo's signing keys.
type Keys interface {
	// KID is the signing key's id.
	KID() string
	// PublicJWKS is the JWK Set of the public keys.
	PublicJWKS() []byte
	// Mint signs t, issued at now.
	Mint(t Token, now time.Time) (string, error)
}

// AuthServer is the stand-in for the project's auth server (GoTrue's
// token, authorize, otp, verify and logout endpoints) the demo serves
// when it is its own auth server.
type AuthServer interface {
	// Routes mounts the endpoints under /auth/v1.
	Routes(mux *http.ServeMux)
	// AddAccount registers a user who may sign in.
	AddAccount(t Token, email, phone, password string)
	// SignIn starts a session of t: its access and refresh tokens.
	SignIn(t Token) (access, refresh string, err error)
}

// StandIn is how the demo reaches what lives beside it: the signing key
// files and the auth server stand-in.
type StandIn struct {
	// LoadKeys reads the signing keys file at path.
	LoadKeys func(path string) (Keys, error)
	// CreateKeys writes a new ES256 signing key to path and loads it.
	CreateKeys func(path string) (Keys, error)
	// NewAuthServer returns the auth server stand-in issuing tokens as
	// issuer with k, requiring the publishable key as apikey, redirecting
	// under siteURL and handing the one-time codes it sends to sent.
	NewAuthServer func(k Keys, issuer, publishableKey, siteURL string, sent func(email, code, link string)) (AuthServer, error)
}

// Run runs the demo until ctx ends, then stops the server and removes
// what it started (the cluster, the temporary key).
func Run(ctx context.Context, o *Options) error {
	r := &runner{o: o, out: o.Stderr}
	defer r.cleanup()
	for _, step := range []func(context.Context) error{
		r.startPostgres,
		r.applySchema,
		r.loadKeys,
		r.listen,
		r.startServer,
		r.printAccess,
	} {
		if err := step(ctx); err != nil {
			return err
		}
	}
	return r.wait(ctx)
}

// runner holds the state of one demo run between its steps.
type runner struct {
	o        *Options
	out      io.Writer
	cleanups []func()

	dbURL       string
	replicaURLs []string
	keysPath    string
	keys        Keys
	ln          net.Listener
	baseURL     string
	jwksURL     string
	issuer      string
	secretKey   string
	publishable string
	auth        AuthServer // nil with AuthURL
	password    string     // the demo user's, with the stand-in
	srv         *server.Server
	hub         *events.Hub // the todos' events, closed before the shutdown
	serveErr    chan error
}

func (r *runner) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// startPostgres starts the throwaway cluster (and its replica), unless a
// database URL is given.
func (r *runner) startPostgres(ctx context.Context) error {
	r.dbURL, r.replicaURLs = r.o.DatabaseURL, r.o.Server.ReadReplicas
	switch {
	case r.o.Replica:
		primary, replica, err := startReplica(ctx, r.out)
		if err != nil {
			return err
		}
		r.cleanups = append(r.cleanups, func() {
			done := step(r.out, "stopping Postgres (primary and replica) and removing their files")
			done(errors.Join(replica.Stop(), primary.Stop()), "")
		})
		r.dbURL, r.replicaURLs = primary.URL, []string{replica.URL}
	case r.dbURL == "":
		done := step(r.out, "starting a throwaway Postgres (initdb + pg_ctl; no Docker)")
		cluster, err := pgcluster.Start(ctx, nil)
		done(err, "")
		if err != nil {
			if errors.Is(err, pgcluster.ErrNoBinaries) {
				return fmt.Errorf("%w; or pass --database-url postgres://USER@HOST:PORT/DB", err)
			}
			return err
		}
		fmt.Fprintf(r.out, "    data and socket in %s\n", cluster.Dir())
		r.cleanups = append(r.cleanups, func() {
			done := step(r.out, "stopping Postgres and removing %s", cluster.Dir())
			done(cluster.Stop(), "")
		})
		r.dbURL = cluster.URL
	default:
		fmt.Fprintln(r.out, "▸ using the database of --database-url/DATABASE_URL (the demo adds tablegate's schema and public.todos to it)")
	}
	return nil
}

// applySchema applies tablegate's migrations and the demo schema.
func (r *runner) applySchema(ctx context.Context) error {
	pool, err := connect(ctx, r.dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	done := step(r.out, "applying tablegate migrations")
	err = db.Migrate(ctx, pool)
	done(err, "")
	if err != nil {
		return err
	}
	done = step(r.out, "creating the demo schema (tenants A and B, public.todos with RLS, seed rows)")
	_, err = pool.Exec(ctx, SchemaSQL)
	if err == nil {
		// Fresh tables of a few rows: autovacuum would not visit them for
		// a long time. Vacuumed, the membership check of every read is an
		// index-only probe (no heap fetch) and the planner knows the sizes.
		_, err = pool.Exec(ctx, vacuumSQL)
	}
	done(err, "")
	if err != nil {
		return fmt.Errorf("demo schema: %w", err)
	}
	return nil
}

// connect opens a pool to url for the schema, with an error that says
// what to check.
func connect(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, errors.New("invalid database URL: cannot parse the URL (check its syntax)")
	}
	db.ConfigurePool(cfg)
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = pool.Ping(pctx)
		cancel()
		if err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, db.ExplainConnectError(err, &cfg.ConnConfig.Config)
	}
	return pool, nil
}

// loadKeys loads the signing keys file, or creates it (a temporary one
// without SigningKeys).
func (r *runner) loadKeys(context.Context) error {
	r.keysPath = r.o.SigningKeys
	if r.keysPath == "" {
		dir, err := os.MkdirTemp("", "tablegate-demo-")
		if err != nil {
			return err
		}
		r.cleanups = append(r.cleanups, func() { _ = os.RemoveAll(dir) })
		r.keysPath = filepath.Join(dir, "signing_keys.json")
	}
	var err error
	if _, statErr := os.Stat(r.keysPath); statErr == nil {
		done := step(r.out, "loading signing keys from %s", r.keysPath)
		r.keys, err = r.o.StandIn.LoadKeys(r.keysPath)
		done(err, "")
	} else {
		done := step(r.out, "generating an ES256 signing key in %s", r.keysPath)
		r.keys, err = r.o.StandIn.CreateKeys(r.keysPath)
		done(err, "")
	}
	return err
}

// listen listens first, so that the URLs name the real port, and picks
// the keys and the auth server.
func (r *runner) listen(context.Context) error {
	ln, err := net.Listen("tcp", r.o.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is the port in use? try --addr 127.0.0.1:0)", r.o.Addr, err)
	}
	r.ln = ln
	r.cleanups = append(r.cleanups, func() { ln.Close() })
	r.baseURL = "http://" + hostport.Of(ln.Addr())
	project := r.baseURL
	if r.o.AuthURL != "" {
		project = r.o.AuthURL
	}
	r.jwksURL = project + "/auth/v1/.well-known/jwks.json"
	r.issuer = project + "/auth/v1"
	r.secretKey = "sb_secret_" + strings.ReplaceAll(signing.NewUUID(), "-", "")
	r.publishable = r.o.PublishableKey
	if r.publishable == "" {
		r.publishable = "sb_publishable_" + strings.ReplaceAll(signing.NewUUID(), "-", "")
	}
	if r.o.AuthURL == "" {
		out := r.out
		auth, err := r.o.StandIn.NewAuthServer(r.keys, r.issuer, r.publishable, r.baseURL, func(email, code, link string) {
			fmt.Fprintf(out, "▸ magic link for %s (code %s): %s\n", email, code, link)
		})
		if err != nil {
			return err
		}
		r.auth = auth
		r.password = newPassword()
		r.auth.AddAccount(r.userToken(), UserEmail, "", r.password)
	}
	return nil
}

// userToken describes the demo user's tokens.
func (r *runner) userToken() Token {
	return Token{Sub: UserID, Tenant: TenantA, TTL: r.o.TokenTTL, Issuer: r.issuer}
}

// startServer builds the server (package server) with the demo's routes
// and serves it on the listener.
func (r *runner) startServer(ctx context.Context) error {
	done := step(r.out, "starting the API on %s (JWKS from %s)", r.baseURL, r.jwksURL)
	project := r.baseURL
	if r.o.AuthURL != "" {
		project = r.o.AuthURL
	}
	cfg := r.o.Server
	cfg.PublicURL, cfg.DatabaseURL, cfg.ReadReplicas = r.baseURL, r.dbURL, r.replicaURLs
	cfg.Auth = server.AuthConfig{URL: project, Refresh: r.o.Refresh,
		SecretKeys: map[string]string{KeyName: r.secretKey},
		// A Bearer equal to the publishable key counts as no credential
		// (supabase-js sends it when signed out); refresh sends it as apikey.
		PublishableKeys: []string{r.publishable}}
	if r.auth != nil {
		// The demo's own keys, inline: the resolver starts before the
		// listener answers.
		cfg.Auth.JWKS = r.keys.PublicJWKS()
	} else {
		cfg.Auth.JWKSURL = r.jwksURL
	}
	cfg.Routes = r.routes
	if r.o.Replica {
		cfg.Getenv = nil // the replica started here, not DATABASE_REPLICA_URLS
	}
	srv, err := server.New(ctx, &cfg)
	done(err, "")
	if err != nil {
		return err
	}
	r.srv = srv
	r.cleanups = append(r.cleanups, func() { srv.Close() }, r.hub.Close)
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.serveErr = make(chan error, 1)
	go func() { r.serveErr <- srv.Serve(sctx, r.ln) }()
	r.cleanups = append(r.cleanups, func() {
		// The stream's hub ends first, so that the shutdown does not wait
		// for its subscribers (they resume with Last-Event-ID).
		r.hub.Close()
		done := step(r.out, "stopping the server (running requests may finish for up to %s)", cfg.ShutdownTimeout)
		stop()
		<-r.serveErr
		done(nil, "")
	})
	return nil
}

// routes mounts the demo's routes on the server's mux.
func (r *runner) routes(ctx context.Context, mux *http.ServeMux, s *server.Server) error {
	project := r.baseURL
	if r.o.AuthURL != "" {
		project = r.o.AuthURL
	}
	parts, err := BuildAPIWith(ctx, s.DB(), s.Resolver(), r.baseURL, r.issuer, &events.Config{Retention: r.o.EventsRetention})
	if err != nil {
		return err
	}
	flows, err := NewFlows(s.Resolver(), project, r.baseURL, r.publishable, r.o.TokensOnly)
	if err != nil {
		parts.Hub.Close()
		return err
	}
	r.hub = parts.Hub
	(&Routes{JWKS: r.keys.PublicJWKS(), API: parts, Auth: r.auth, Flows: flows}).Mount(mux)
	return nil
}

// printAccess mints the tokens, writes the env file and prints the curl
// lines (and, with replicas, reads a write back).
func (r *runner) printAccess(ctx context.Context) error {
	now := time.Now()
	var err error
	mint := func(sub string, anonymous bool, tenant string, roles ...string) string {
		if err != nil {
			return ""
		}
		var t string
		t, err = r.keys.Mint(Token{Sub: sub, Anonymous: anonymous, Tenant: tenant, Roles: roles, TTL: r.o.TokenTTL, Issuer: r.issuer}, now)
		return t
	}
	var userToken, userRefresh string
	if r.auth != nil {
		userToken, userRefresh, err = r.auth.SignIn(r.userToken())
	} else {
		userToken, err = r.keys.Mint(r.userToken(), now)
	}
	if err != nil {
		return err
	}
	vars := []envfile.Var{
		{Key: "BASE_URL", Value: r.baseURL},
		{Key: "JWKS_URL", Value: r.jwksURL},
		{Key: "SIGNING_KEYS_PATH", Value: r.keysPath},
		{Key: "DATABASE_URL", Value: r.dbURL},
		{Key: "COOKIE_NAME", Value: r.srv.Resolver().CookieName()},
		{Key: "TENANT_A", Value: TenantA},
		{Key: "TENANT_B", Value: TenantB},
		{Key: "USER_ID", Value: UserID},
		{Key: "USER_TOKEN", Value: userToken},
		{Key: "ADMIN_TOKEN", Value: mint(AdminID, false, TenantA, "admin")},
		{Key: "APPROVER_TOKEN", Value: mint(ApproverID, false, TenantA, "approver")},
		{Key: "ANON_USER_TOKEN", Value: mint(AnonUserID, true, TenantA)},
		{Key: "OTHER_TENANT_TOKEN", Value: mint(OtherUserID, false, TenantB)},
		{Key: "SERVICE_KEY", Value: r.secretKey},
		{Key: "PUBLISHABLE_KEY", Value: r.publishable},
		// What "tablegate token" reads, so that after ". FILE" it mints
		// tokens this demo accepts: the issuer and the signing keys.
		{Key: "SUPABASE_JWT_ISSUER", Value: r.issuer},
	}
	if userRefresh != "" {
		vars = append(vars, envfile.Var{Key: "USER_REFRESH_TOKEN", Value: userRefresh})
	}
	if r.password != "" {
		vars = append(vars, envfile.Var{Key: "USER_EMAIL", Value: UserEmail}, envfile.Var{Key: "USER_PASSWORD", Value: r.password})
	}
	if err != nil {
		return err
	}
	if r.o.PrintEnv != "" {
		if err := signing.WriteFileAtomic(r.o.PrintEnv, envfile.Format(vars), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(r.out, "▸ wrote %s\n", r.o.PrintEnv)
	}
	printCurls(r.o.Stdout, vars, r.keys.KID())
	if d := r.srv.DB(); d.HasReplicas() {
		if err := showReadYourWrites(ctx, r.o.Stdout, d, r.baseURL, userToken); err != nil {
			fmt.Fprintf(r.out, "! read-your-writes check: %v\n", err)
		}
	}
	return nil
}

// wait serves until ctx ends or the server fails.
func (r *runner) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		fmt.Fprintln(r.out, "\n▸ shutting down")
		return nil
	case err := <-r.serveErr:
		r.serveErr <- err // for the cleanup
		return err
	}
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

// printCurls prints the demo's access: the variables and curl lines.
func printCurls(w io.Writer, vars []envfile.Var, kid string) {
	get := func(k string) string {
		for _, v := range vars {
			if v.Key == k {
				return v.Value
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
