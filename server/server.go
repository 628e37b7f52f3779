package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/metric"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/linewriter"
	"github.com/tablegate/tablegate/internal/pgconnect"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
	"github.com/tablegate/tablegate/telemetry"
)

// DefaultAddr is the listen address when [Config.Addr] is empty.
const DefaultAddr = "127.0.0.1:8080"

// DefaultShutdownTimeout is [Config.ShutdownTimeout]'s default.
const DefaultShutdownTimeout = 10 * time.Second

// accessLogQueue is how many access log lines may wait for the log.
const accessLogQueue = 4096

// UsageError is a mistake in the configuration or the environment that
// [New] finds before it serves anything: a value that contradicts
// another, a missing key or URL, a database URL that does not parse. Its
// message says what to set. (tablegate serve exits with status 2 on it.)
type UsageError struct{ msg string }

// Error returns the message.
func (e *UsageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// Server is a running tablegate server: the database pool, the caller
// resolver, the tables' resources and event streams, and the handlers
// that serve them. Build one with [New]; serve [Server.Handler] (or call
// [Server.Serve]); [Server.Close] releases it.
type Server struct {
	cfg       *Config
	log       io.Writer
	tel       *telemetry.Telemetry
	accessLog *linewriter.Writer
	pool      *pgxpool.Pool
	replicas  []*pgxpool.Pool
	db        *db.DB
	rv        *authctx.Resolver
	resources map[string]*rest.Resource
	handler   http.Handler
	admin     http.Handler

	closeStreams func()
	closeOnce    sync.Once
}

// New checks cfg, connects to the database (refusing one tablegate's
// migrations were never applied to), loads the signing keys and builds
// every table's resource: a table row-level security does not protect
// stops it, naming the SQL that fixes it. Warnings (a table served
// without RLS, a missing grant, pending migrations) go to cfg.Log.
//
// cfg is used, and completed with its defaults, as [ParseConfig] does; it
// must not change afterwards. On error everything New started is
// released.
func New(ctx context.Context, cfg *Config) (*Server, error) {
	return newServer(ctx, cfg)
}

func newServer(ctx context.Context, cfg *Config) (_ *Server, err error) {
	if cfg == nil {
		return nil, errors.New("server: nil Config")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Log, closeStreams: func() {}}
	if s.log == nil {
		s.log = os.Stderr
	}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	timeouts := cfg.Timeouts.withDefaults()
	if f := cfg.Auth.Flows; f != nil {
		// A flow still waiting on the auth server when the write deadline
		// passes would answer nothing at all.
		if w := time.Duration(timeouts.Write); w > 0 && flowsTimeout(f) >= w {
			return nil, usagef("auth.flows.timeout (%s) must be shorter than the write timeout (%s)", flowsTimeout(f), w)
		}
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	// Configuration mistakes first, before the database is touched.
	acfg, err := authConfigFor(cfg, getenv)
	if err != nil {
		return nil, err
	}
	replicaList, err := replicaURLs(getenv, cfg.ReadReplicas)
	if err != nil {
		return nil, err
	}
	if cfg.DatabaseURL == "" {
		return nil, usagef("no database: set database_url (e.g. postgres://postgres@127.0.0.1:5432/postgres)")
	}
	if err := s.setupTelemetry(); err != nil {
		return nil, err
	}
	s.pool, err = connectPool(ctx, cfg.DatabaseURL, cfg.Database.MaxConns, s.tel)
	if err != nil {
		return nil, err
	}
	if err := checkMigrated(ctx, s.log, s.pool); err != nil {
		return nil, err
	}
	acfg.Telemetry = s.tel
	if s.rv, err = authctx.New(ctx, &acfg); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	var flows *authflow.Flows // authflow.New checks redirect_urls and timeout
	if f := cfg.Auth.Flows; f != nil {
		flows, err = authflow.New(&authflow.Config{
			ProjectURL: acfg.ProjectURL, PublishableKey: acfg.PublishableKeys[0], CookieName: s.rv.CookieName(),
			CookieOptions: acfg.CookieOptions, SiteURL: cfg.flowsSite(), RedirectURLs: f.RedirectURLs,
			TokensOnly: f.TokensOnly, Timeout: flowsTimeout(f), Sessions: s.rv,
			AttemptsPerAccount: f.AttemptsPerAccount, AttemptsPerAddress: f.AttemptsPerAddress,
			AttemptWindow: time.Duration(f.AttemptWindow), TrustedProxyHeader: f.TrustedProxyHeader,
		})
		if err != nil {
			return nil, fmt.Errorf("auth.flows: %w", err)
		}
	}
	if s.replicas, err = connectReplicas(ctx, s.log, replicaList, cfg.Database.MaxConns, s.tel); err != nil {
		return nil, err
	}
	dcfg := cfg.Database.dbConfig()
	dcfg.Replicas = s.replicas
	s.db = db.New(s.pool, dcfg)
	if err := db.RecordReplicaStats(s.db, s.tel); err != nil {
		return nil, err
	}
	if err := s.buildHandler(ctx, authServerOf(acfg), flows); err != nil {
		return nil, err
	}
	s.admin = adminHandler(readinessChecks(s.pool, s.rv), cfg.Metrics)
	return s, nil
}

// setupTelemetry builds the access log and the telemetry of the server
// over the configured providers.
func (s *Server) setupTelemetry() error {
	cfg := s.cfg
	tcfg := &telemetry.Config{TracerProvider: cfg.TracerProvider, MeterProvider: cfg.MeterProvider}
	if cfg.AccessLog == nil || *cfg.AccessLog {
		lw := linewriter.New("access log", s.log, accessLogQueue)
		s.accessLog = lw
		tcfg.AccessLog = slog.New(newJSONLineHandler(lw))
		tcfg.LogSubject = cfg.LogSubject
		if mp := cfg.MeterProvider; mp != nil {
			if _, err := mp.Meter("github.com/tablegate/tablegate/cmd/tablegate").Int64ObservableCounter(
				"tablegate.access_log.dropped", metric.WithUnit("{line}"),
				metric.WithDescription("Access log lines dropped because stderr was not read fast enough."),
				metric.WithInt64Callback(func(_ context.Context, o metric.Int64Observer) error {
					o.Observe(lw.Dropped())
					return nil
				})); err != nil {
				return fmt.Errorf("access log metric: %w", err)
			}
		}
	}
	tel, err := telemetry.New(tcfg)
	if err != nil {
		return err
	}
	s.tel = tel
	return nil
}

// buildHandler builds the public handler: /livez and /readyz, the tables
// under base_path behind the caller resolver, the sign-in flows, the
// Routes of the embedding program, CORS and telemetry.
func (s *Server) buildHandler(ctx context.Context, authServer string, flows *authflow.Flows) error {
	cfg := s.cfg
	var app http.Handler
	if len(cfg.Tables) > 0 {
		h, resources, closeStreams, err := buildServeHandler(ctx, cfg, s.db, s.rv, s.publicURL(), authServer, slog.New(slog.NewTextHandler(s.log, nil)))
		if err != nil {
			return err
		}
		app, s.resources, s.closeStreams = h, resources, closeStreams
	}
	if cfg.Routes != nil {
		inner := http.NewServeMux()
		if app != nil {
			inner.Handle("/", app)
		}
		if err := cfg.Routes(ctx, inner, s); err != nil {
			return err
		}
		app = problemFallback(inner)
	}
	// mux holds "/" (the app) and literal paths only, and every path
	// registered on it must be in literal below: skipCatchAll sends any
	// other clean path straight to the app, past the mux.
	mux := http.NewServeMux()
	health(mux, s.pool, s.rv)
	if cfg.CORS != nil {
		app = refuseBrowserServices(app)
	}
	app = s.rv.Middleware(s.rv.CrossSite(app))
	mux.Handle("/", app)
	literal := healthPaths
	if flows != nil {
		mountFlows(mux, flows)
		literal = append(slices.Clip(literal), flowPatterns...)
	}
	var h http.Handler = skipCatchAll(literal, app, problemFallback(mux))
	if cfg.CORS != nil {
		h = corsHandler(cfg.CORS, h)
	}
	s.handler = s.tel.Handler(h)
	return nil
}

// publicURL is the URL clients reach the server at: public_url, else
// http://{Addr}.
func (s *Server) publicURL() string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	addr := s.cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	if a, err := net.ResolveTCPAddr("tcp", addr); err == nil && a.IP != nil && !a.IP.IsUnspecified() {
		return "http://" + addr
	}
	_, port, _ := net.SplitHostPort(addr)
	return "http://" + net.JoinHostPort("127.0.0.1", port)
}

// Handler returns the handler of every public route: the tables under
// base_path (with openapi.json and docs), their event streams, /mcp, the
// data API, the sign-in flows under /auth, the Routes of [Config.Routes],
// /livez and /readyz. It resolves the caller of each request, writes the
// access log and records telemetry.
func (s *Server) Handler() http.Handler { return s.handler }

// AdminHandler returns the handler of the admin listener: /livez, /readyz
// (every readiness check named: the database, the signing keys, the
// migrations) and /metrics ([Config.Metrics]; 404 without it).
func (s *Server) AdminHandler() http.Handler { return s.admin }

// DB returns the server's database handle (the primary's pool and the
// read replicas, with the request time budget).
func (s *Server) DB() *db.DB { return s.db }

// Resolver returns the server's caller resolver.
func (s *Server) Resolver() *authctx.Resolver { return s.rv }

// Serve serves [Server.Handler] on ln, with the configured timeouts, and
// [Server.AdminHandler] on [Config.AdminAddr] when set, until ctx ends.
// Then it shuts down within [Config.ShutdownTimeout]: it stops accepting
// connections and ends the event streams (subscribers resume with
// Last-Event-ID), lets running requests finish, cancels those still
// running near the limit (they answer 503) and closes what remains. It
// returns nil after such a shutdown. Serve does not close the Server.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.cfg.AdminAddr != "" {
		stop, err := startAdmin(s.log, s.cfg.AdminAddr, s.admin)
		if err != nil {
			return err
		}
		defer stop()
	}
	// Event streams never end by themselves: end them when the shutdown
	// starts, so that it waits only for ordinary requests.
	defer context.AfterFunc(ctx, s.closeStreams)()
	srv := s.cfg.Timeouts.server(s.handler)
	g := newGraceful(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	limit := s.cfg.ShutdownTimeout
	if limit <= 0 {
		limit = DefaultShutdownTimeout
	}
	g.shutdown(s.log, srv, limit)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Close ends the event streams and releases the database pools, the
// resolver and the access log (writing out its queued lines, within a
// few seconds). Serve must have returned; Close may be called again.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		if s.closeStreams != nil {
			s.closeStreams()
		}
		if s.db != nil {
			s.db.Close()
		}
		for _, p := range s.replicas {
			p.Close()
		}
		if s.rv != nil {
			s.rv.Close()
		}
		if s.pool != nil {
			s.pool.Close()
		}
		if s.accessLog != nil {
			ctx, cancel := context.WithTimeout(context.Background(), linewriter.FlushTimeout)
			_ = s.accessLog.Close(ctx)
			cancel()
		}
	})
	return nil
}

// connectPool is pgconnect.Pool with an unparsable URL as a usage error.
func connectPool(ctx context.Context, url string, maxConns int32, tel *telemetry.Telemetry) (*pgxpool.Pool, error) {
	pool, err := pgconnect.Pool(ctx, url, maxConns, tel)
	if errors.Is(err, pgconnect.ErrInvalidURL) {
		return nil, usagef("%s", err)
	}
	return pool, err
}

// Describe returns the OpenAPI description of cfg's tables as [New]
// would serve it, reading their columns over pool; warnings go to
// cfg.Log. Nothing is served and no signing key is needed.
func Describe(ctx context.Context, cfg *Config, pool *pgxpool.Pool) (*spec.API, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = os.Stderr
	}
	api, _, hub, err := defineAPI(ctx, cfg, db.New(pool, nil), nil, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		return nil, err
	}
	if hub != nil {
		hub.Close() // the streams are described, never served
	}
	return api, nil
}
