package mcptools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
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
	// (stateless mode, JSON responses, session timeout, body limit).
	Streamable *mcp.StreamableHTTPOptions
}

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
	so := &mcp.StreamableHTTPOptions{Logger: s.log}
	if opts.Streamable != nil {
		c := *opts.Streamable
		so = &c
	}
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, so)
	return &httpHandler{s: s, opts: opts, inner: inner}, nil
}

type httpHandler struct {
	s     *Server
	opts  HTTPConfig
	inner http.Handler
	// owners binds each session (Mcp-Session-Id) to the caller that
	// opened it (ownerOf); requests of anyone else naming it get 404.
	owners sync.Map // string → string
}

// sessionHeader is the Streamable HTTP session id header.
const sessionHeader = "Mcp-Session-Id"

// ownerOf names a caller for session binding: its kind and subject (the
// user id, or the service key's name).
func ownerOf(a authctx.Auth) string {
	switch {
	case a.Kind == authctx.KindUser && a.User != nil:
		return "user:" + a.User.ID
	case a.Kind == authctx.KindService:
		return "service:" + a.KeyName
	}
	return string(a.Kind) + ":"
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
	owner := ownerOf(a)
	sid := rr.Header.Get(sessionHeader)
	if sid != "" {
		if o, ok := h.owners.Load(sid); ok && o.(string) != owner {
			// Another caller's session: as if it did not exist.
			h.refuse(w, problem.New(problem.KindNotFound, "No such MCP session."))
			return
		}
	}
	id, err := h.s.calls.put(a)
	if err != nil {
		h.refuse(w, problem.New(problem.KindUnexpected, "The server could not complete the request.").WithCause(err))
		return
	}
	defer h.s.calls.delete(id)
	rr.Header.Set(callHeader, id)
	if r.Method == http.MethodGet {
		// The standalone SSE stream lives as long as its session: lift the
		// server's read and write timeouts for this response only (the
		// session ends it: Streamable.SessionTimeout, DELETE, shutdown).
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
	}
	sw := &sessionWriter{ResponseWriter: w}
	h.inner.ServeHTTP(sw, rr)
	switch {
	case sid == "" && sw.sid != "":
		h.owners.Store(sw.sid, owner) // a session opened by this caller
	case sid != "" && (sw.status == http.StatusNotFound ||
		(r.Method == http.MethodDelete && sw.status < 300)):
		h.owners.Delete(sid) // ended or unknown to the SDK
	}
}

// sessionWriter records the status and the session id the SDK answers
// with; it keeps flushing and http.ResponseController working.
type sessionWriter struct {
	http.ResponseWriter
	status int
	sid    string
}

func (w *sessionWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		w.sid = w.Header().Get(sessionHeader)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
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
