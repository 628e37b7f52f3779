package mcptools

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/internal/streamauth"
	"github.com/tablegate/tablegate/problem"
)

// HTTPConfig configures [Server.Handler].
type HTTPConfig struct {
	// Resolver resolves the caller of every HTTP request: the same custom
	// resolvers, apikey check, Bearer verification and claims schema as
	// the REST routes. The request it sees carries no cookies: MCP clients
	// authenticate with Bearer tokens, and there is no cookie path here.
	// Required unless Caller is set.
	Resolver *authctx.Resolver

	// Caller replaces Resolver with any resolution function (it too sees
	// the request without cookies).
	Caller func(*http.Request) authctx.Auth

	// Allow is the guard's allow list, as for [authctx.Guard] (default
	// {authctx.AllowUser}): callers it does not admit are answered with
	// [authctx.Admit]'s Problem Details — 401 with WWW-Authenticate for an
	// invalid credential or none, 403 ANONYMOUS_USER for an anonymous
	// sign-in, 403 CALLER_NOT_ALLOWED for other kinds.
	Allow []authctx.Allow

	// Admit replaces the allow-list guard: it returns nil to admit a
	// caller, else the Problem to answer.
	Admit func(authctx.Auth) *problem.Problem

	// ResourceMetadataURL, when set, is added to the WWW-Authenticate
	// header of every 401 as resource_metadata (RFC 9728), so MCP clients
	// can discover the authorization server. Serve the document itself
	// with the SDK's auth.ProtectedResourceMetadataHandler.
	ResourceMetadataURL string

	// Streamable passes options to the SDK's Streamable HTTP handler
	// (stateless mode, JSON responses, session timeout, body limit). A
	// zero SessionTimeout becomes [DefaultSessionTimeout]; a negative one
	// keeps idle sessions open until the client deletes them.
	Streamable *mcp.StreamableHTTPOptions

	// MaxSessionsPerCaller bounds the sessions one caller (same kind and
	// subject) may hold open at once (default
	// [DefaultMaxSessionsPerCaller]; negative: no bound). An initialize
	// beyond it is answered 429 with Retry-After until one of the
	// caller's sessions is deleted or times out.
	MaxSessionsPerCaller int
}

const (
	// DefaultSessionTimeout closes an MCP session after this long without a
	// request from its client; the client's next request gets 404 and, as
	// the MCP specification asks, it starts a new session.
	DefaultSessionTimeout = 30 * time.Minute
	// DefaultMaxSessionsPerCaller is the default of
	// [HTTPConfig.MaxSessionsPerCaller].
	DefaultMaxSessionsPerCaller = 32
)

// ResolverCaller returns the caller function of a resolver: the Auth of
// [authctx.Resolver.Resolve]. Use it with [CallerFromEnv].
func ResolverCaller(rv *authctx.Resolver) func(*http.Request) authctx.Auth {
	return func(r *http.Request) authctx.Auth { return rv.Resolve(r).Auth }
}

// AllowList returns the guard admitting the callers in allow (default
// {authctx.AllowUser}) with [authctx.Admit], for [Server.Connect] and
// [ServeStdio].
func AllowList(allow ...authctx.Allow) func(authctx.Auth) *problem.Problem {
	allow = append([]authctx.Allow(nil), allow...)
	return func(a authctx.Auth) *problem.Problem { return authctx.Admit(a, allow...) }
}

// callHeader carries, inside the server only, the id under which the
// caller of an HTTP request is registered for the tool calls it carries.
// A client-sent value is always removed first.
const callHeader = "Tablegate-Mcp-Call"

// validate checks an HTTPConfig before a handler is built.
func (cfg *HTTPConfig) validate() error {
	if cfg.Caller == nil && cfg.Resolver == nil {
		return fmt.Errorf("%w: HTTPConfig needs a Resolver or a Caller", ErrConfig)
	}
	if strings.ContainsAny(cfg.ResourceMetadataURL, "\"\r\n") {
		return fmt.Errorf("%w: HTTPConfig.ResourceMetadataURL holds a quote or newline", ErrConfig)
	}
	return nil
}

// Handler returns the Streamable HTTP transport of the server as an
// http.Handler; mount it anywhere (the demo uses /mcp). Every HTTP request
// — initialize, tools/list, tools/call, … — is resolved (cookies removed)
// and admitted by the guard before the SDK sees it; a refusal is answered
// with the guard's Problem Details. Each tool call then runs as the caller
// of the HTTP request that carried it. A session (Mcp-Session-Id) belongs
// to the caller that opened it — same kind and subject (user id, or
// service key name); any other caller naming it gets 404, as for a
// session that does not exist. It fails, wrapping [ErrConfig],
// without a Resolver or Caller (a nil cfg has neither).
func (s *Server) Handler(cfg *HTTPConfig) (http.Handler, error) {
	if cfg == nil {
		cfg = &HTTPConfig{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := *cfg
	if opts.Caller == nil {
		opts.Caller = ResolverCaller(opts.Resolver)
	}
	if opts.Admit == nil {
		opts.Admit = AllowList(opts.Allow...)
	}
	if opts.MaxSessionsPerCaller == 0 {
		opts.MaxSessionsPerCaller = DefaultMaxSessionsPerCaller
	}
	so := &mcp.StreamableHTTPOptions{Logger: s.log}
	if opts.Streamable != nil {
		c := *opts.Streamable
		so = &c
	}
	if so.SessionTimeout == 0 {
		so.SessionTimeout = DefaultSessionTimeout
	}
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, so)
	return &httpHandler{s: s, opts: opts, inner: inner, stateless: so.Stateless,
		owners: map[string]string{}, open: map[string]int{}}, nil
}

type httpHandler struct {
	s         *Server
	opts      HTTPConfig
	inner     http.Handler
	stateless bool

	mu sync.Mutex
	// owners binds each session (Mcp-Session-Id) to the caller that
	// opened it (ownerOf); requests of anyone else naming it get 404.
	owners map[string]string
	// open counts each caller's sessions, and the initializes in flight
	// that may open one.
	open map[string]int
}

// sessionHeader is the Streamable HTTP session id header.
const sessionHeader = "Mcp-Session-Id"

// ownerOf names a caller for session binding and the per-caller cap: its
// kind and subject (the user id, or the service key's name). Callers
// without a subject (anon, when admitted) are told apart by their client
// address, so that one of them cannot fill every other's places.
func ownerOf(a authctx.Auth, r *http.Request) string {
	switch {
	case a.Kind == authctx.KindUser && a.User != nil:
		return "user:" + a.User.ID
	case a.Kind == authctx.KindService:
		return "service:" + a.KeyName
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return string(a.Kind) + ":" + host
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A shallow copy with its own header map: the caller's request is left
	// as it came. No cookie path: MCP clients send Bearer tokens, so the
	// resolver (and the SDK) see the request without its cookies, and a
	// client cannot name the registry entry of another request.
	rr := new(http.Request)
	*rr = *r
	rr.Header = r.Header.Clone()
	if rr.Header == nil {
		rr.Header = http.Header{}
	}
	rr.Header.Del("Cookie")
	rr.Header.Del(callHeader)
	a := h.opts.Caller(rr)
	if p := h.opts.Admit(a); p != nil {
		h.refuse(w, p)
		return
	}
	switch r.Method {
	case http.MethodPost:
		if p := refuseBatch(rr); p != nil {
			h.refuse(w, p)
			return
		}
	case http.MethodGet:
		// net/http notices a client gone only once the body is read: a GET
		// stream with a body nobody reads would outlive its client.
		if r.ContentLength != 0 || len(r.TransferEncoding) > 0 {
			h.refuse(w, problem.New(problem.KindBadRequest, "A GET to the MCP endpoint takes no body."))
			return
		}
	}
	owner := ownerOf(a, r)
	sid := rr.Header.Get(sessionHeader)
	if sid != "" {
		h.mu.Lock()
		o, ok := h.owners[sid]
		h.mu.Unlock()
		if ok && o != owner {
			// Another caller's session: as if it did not exist.
			h.refuse(w, errNoSession)
			return
		}
	}
	// A POST without a session id may open a session: hold a place for it
	// among the caller's, given back below if none was opened.
	reserved := sid == "" && r.Method == http.MethodPost && !h.stateless
	if reserved && !h.reserve(owner) {
		h.refuse(w, problem.New(problem.KindTooManyRequests,
			"Too many open MCP sessions for this caller; delete one or wait for an idle one to time out.").
			WithHeader("Retry-After", "30"))
		return
	}
	id, err := h.s.calls.put(a)
	if err != nil {
		if reserved {
			h.release(owner)
		}
		h.refuse(w, problem.New(problem.KindUnexpected, "The server could not complete the request.").WithCause(err))
		return
	}
	defer h.s.calls.delete(id)
	rr.Header.Set(callHeader, id)
	if r.Method == http.MethodGet {
		if p := streamauth.ExpiredForStream(a, time.Now()); p != nil {
			h.refuse(w, p)
			return
		}
		// The standalone SSE stream lives as long as its session: lift the
		// server's read and write timeouts for this response only. The
		// session ends it (Streamable.SessionTimeout, DELETE, shutdown),
		// and so does the expiry of the caller's token.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		if a.User != nil && !a.User.ExpiresAt.IsZero() {
			ctx, cancel := context.WithDeadline(rr.Context(), a.User.ExpiresAt)
			defer cancel()
			rr = rr.WithContext(ctx)
		}
	}
	sw := &sessionWriter{ResponseWriter: w, pw: h.s.pw}
	h.inner.ServeHTTP(sw, rr)
	switch {
	case reserved && sw.sid != "":
		h.opened(sw.sid, owner) // a session opened by this caller
	case reserved:
		h.release(owner)
	}
	// A session's place is given back only when the SDK closes it (opened's
	// watcher): the SDK also answers 404 inside a live session (an unknown
	// method), which must not unbind it from its owner.
}

// errBatch refuses a JSON-RPC batch. MCP 2025-06-18 removed batching; the
// SDK still runs a batch whose request names no later protocol version,
// which let one HTTP request carry thousands of tool calls (memory, and
// every pooled connection) where a single message costs one.
var errBatch = problem.New(problem.KindBadRequest,
	"JSON-RPC batches are not served: send one message per request (MCP 2025-06-18 removed batching).")

// refuseBatch reads the POST body up to its first JSON token and refuses a
// batch (a JSON array); any other body goes on to the SDK unchanged but
// for leading whitespace. A body that ends or fails before a token is left
// to the SDK, which answers it.
func refuseBatch(r *http.Request) *problem.Problem {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	br := bufio.NewReader(r.Body)
	for n := 0; ; n++ {
		if n == maxLeadingSpace {
			return problem.New(problem.KindBadRequest, "The body is not a JSON-RPC message.")
		}
		c, err := br.ReadByte()
		if err != nil {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(br, errReader{err}), r.Body}
			return nil
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[':
			return errBatch
		}
		_ = br.UnreadByte()
		r.Body = struct {
			io.Reader
			io.Closer
		}{br, r.Body}
		return nil
	}
}

// maxLeadingSpace bounds the whitespace read before a message's first
// token.
const maxLeadingSpace = 4096

// errReader returns err once the bytes before it are read, so that the
// SDK sees a body that failed as it failed (a size limit, a reset).
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// errNoSession answers a session id the SDK does not know, or that
// belongs to another caller: the two look the same.
var errNoSession = problem.New(problem.KindNotFound, "No such MCP session.")

// reserve counts a session the owner may open, unless that would exceed
// MaxSessionsPerCaller.
func (h *httpHandler) reserve(owner string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if max := h.opts.MaxSessionsPerCaller; max > 0 && h.open[owner] >= max {
		return false
	}
	h.open[owner]++
	return true
}

// release gives back a reservation that opened no session.
func (h *httpHandler) release(owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open[owner]--; h.open[owner] <= 0 {
		delete(h.open, owner)
	}
}

// opened binds a new session to its owner (whose reservation it keeps)
// and forgets it when the SDK closes it: on DELETE, after the idle
// timeout, or at shutdown.
func (h *httpHandler) opened(sid, owner string) {
	h.mu.Lock()
	h.owners[sid] = owner
	h.mu.Unlock()
	for ss := range h.s.mcp.Sessions() {
		if ss.ID() == sid {
			go func() {
				_ = ss.Wait()
				h.forget(sid)
			}()
			return
		}
	}
	h.forget(sid) // closed already
}

// forget removes a session and gives back its owner's place; a session
// forgotten already is a no-op.
func (h *httpHandler) forget(sid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	owner, ok := h.owners[sid]
	if !ok {
		return
	}
	delete(h.owners, sid)
	if h.open[owner]--; h.open[owner] <= 0 {
		delete(h.open, owner)
	}
}

// sessionWriter records the status and the session id the SDK answers
// with, and turns the SDK's plain-text errors into Problem Details; it
// keeps flushing and http.ResponseController working.
type sessionWriter struct {
	http.ResponseWriter
	pw      problem.Writer
	status  int
	sid     string
	replace bool // the SDK's error body is dropped: a Problem was written
}

func (w *sessionWriter) WriteHeader(status int) {
	if w.status != 0 {
		return
	}
	w.status = status
	w.sid = w.Header().Get(sessionHeader)
	if status >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.replace = true
		w.pw.Write(w.ResponseWriter, transportProblem(status, w.Header().Get("Allow")))
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.replace {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// transportProblem is the Problem for an error status of the SDK's
// transport. Its text is not passed on: it may quote the request body,
// and it would tell an unknown session from another caller's.
func transportProblem(status int, allow string) *problem.Problem {
	switch {
	case status == http.StatusNotFound:
		return errNoSession
	case status == http.StatusMethodNotAllowed:
		p := problem.New(problem.KindMethodNotAllowed, "This method is not served on the MCP endpoint.")
		if allow != "" {
			p = p.WithHeader("Allow", allow)
		}
		return p
	case status == http.StatusUnsupportedMediaType:
		return problem.New(problem.KindUnsupportedMediaType, "MCP messages are sent as application/json.")
	case status == http.StatusRequestEntityTooLarge:
		return problem.New(problem.KindPayloadTooLarge, "The MCP message is too large.")
	case status == http.StatusForbidden:
		return problem.New(problem.KindForbidden, "The MCP endpoint refused this request.")
	case status >= 500:
		return problem.New(problem.KindUnexpected, "The server could not complete the request.")
	}
	p := problem.New(problem.KindBadRequest, "The MCP request is malformed or not valid for this session.")
	p.Status = status
	return p
}

// Flush implements http.Flusher (SSE streams).
func (w *sessionWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refuse writes the guard's problem, naming the protected resource
// metadata on a 401.
func (h *httpHandler) refuse(w http.ResponseWriter, p *problem.Problem) {
	status := p.Status
	if status == 0 {
		status = p.Kind.Status()
	}
	if status == http.StatusUnauthorized && h.opts.ResourceMetadataURL != "" {
		var challenge string
		if p.Header != nil {
			challenge = p.Header.Get("WWW-Authenticate")
		}
		if challenge == "" {
			challenge = "Bearer"
		}
		sep := " "
		if strings.Contains(challenge, "=") {
			sep = ", "
		}
		challenge += sep + `resource_metadata="` + h.opts.ResourceMetadataURL + `"`
		cp := *p
		cp.Header = p.Header.Clone()
		if cp.Header == nil {
			cp.Header = http.Header{}
		}
		cp.Header.Set("WWW-Authenticate", challenge)
		p = &cp
	}
	h.s.pw.Write(w, p)
}

// callRegistry holds the callers of the HTTP requests in flight, by a
// random id, for the tool calls those requests carry.
type callRegistry struct {
	m sync.Map // string → authctx.Auth
}

func (c *callRegistry) put(a authctx.Auth) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", errors.New("mcptools: no randomness for a call id")
	}
	id := hex.EncodeToString(b[:])
	c.m.Store(id, a)
	return id, nil
}

func (c *callRegistry) get(id string) (authctx.Auth, bool) {
	v, ok := c.m.Load(id)
	if !ok {
		return authctx.Auth{}, false
	}
	return v.(authctx.Auth), true
}

func (c *callRegistry) delete(id string) { c.m.Delete(id) }
