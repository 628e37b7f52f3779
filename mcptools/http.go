package mcptools

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// HTTPOptions configures [Server.Handler].
type HTTPOptions struct {
	// Caller resolves the caller of one HTTP request. Required. Use
	// [ResolverCaller] to resolve with an [authctx.Resolver] — the same
	// resolvers, verification and claims schema as the REST routes. The
	// request it sees carries no cookies.
	Caller func(*http.Request) authctx.Auth

	// Admit is the guard: it returns nil to admit a caller, else the
	// Problem to answer (401 with WWW-Authenticate, 403 ANONYMOUS_USER, …).
	// Required. Use [AllowList] for authctx's allow-list guard.
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

// callHeader carries, inside the server only, the id under which the
// caller of an HTTP request is registered for the tool calls it carries.
// A client-sent value is always removed first.
const callHeader = "Tablegate-Mcp-Call"

// Handler returns the Streamable HTTP transport of the server as an
// http.Handler; mount it anywhere (the demo uses /mcp). Every HTTP request
// — initialize, tools/list, tools/call, … — is resolved with opts.Caller
// (cookies removed) and admitted by opts.Admit before the SDK sees it;
// a refusal is answered with the guard's Problem Details. Each tool call
// then runs as the caller of the HTTP request that carried it.
func (s *Server) Handler(opts HTTPOptions) (http.Handler, error) {
	if opts.Caller == nil {
		return nil, fmt.Errorf("%w: HTTPOptions.Caller is nil", ErrConfig)
	}
	if opts.Admit == nil {
		return nil, fmt.Errorf("%w: HTTPOptions.Admit is nil", ErrConfig)
	}
	if strings.ContainsAny(opts.ResourceMetadataURL, "\"\r\n") {
		return nil, fmt.Errorf("%w: HTTPOptions.ResourceMetadataURL holds a quote or newline", ErrConfig)
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
	opts  HTTPOptions
	inner http.Handler
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Header.Del(callHeader)
	// No cookie path: MCP clients send Bearer tokens. The resolver sees
	// the request without its cookies.
	rr := r
	if r.Header.Get("Cookie") != "" {
		rr = r.Clone(r.Context())
		rr.Header.Del("Cookie")
	}
	a := h.opts.Caller(rr)
	if p := h.opts.Admit(a); p != nil {
		h.refuse(w, p)
		return
	}
	id, err := h.s.calls.put(a)
	if err != nil {
		h.refuse(w, problem.New(problem.KindUnexpected, "The server could not complete the request.").WithCause(err))
		return
	}
	defer h.s.calls.delete(id)
	r.Header.Set(callHeader, id)
	h.inner.ServeHTTP(w, r)
}

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
