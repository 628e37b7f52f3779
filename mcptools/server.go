package mcptools

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// ErrConfig wraps every error [New] returns for a bad configuration.
var ErrConfig = errors.New("mcptools: invalid configuration")

// DefaultName is the server name announced to clients when Config.Name is empty.
const DefaultName = "tablegate"

// Config configures a [Server].
type Config struct {
	// Resources are served as tools: every served operation and action of
	// each, in description order. Tool names (operation ids) must be
	// unique across resources.
	Resources []*rest.Resource

	// Guards maps a resource to the guard of its tools (usually
	// [AllowList]), checked on every call after the transport's guard: for
	// resources served under different allow lists, as REST routes may be.
	// The transport's guard must then admit every caller any resource
	// admits. A refused call is a tool error carrying the guard's Problem
	// (401 or 403). Resources without an entry rely on the transport's
	// guard alone.
	Guards map[*rest.Resource]func(authctx.Auth) *problem.Problem

	// Handlers are served as tools too: every operation each describes
	// (package authz's approvals endpoint, for one), run in-process on the
	// request the same call makes over HTTP, as the call's caller.
	Handlers []HandlerTools

	// Name, Title and Version describe the server to clients (defaults
	// [DefaultName], none and "dev").
	Name, Title, Version string

	// Instructions is sent to clients in the initialize result.
	Instructions string

	// Problems renders the Problem Details of tool errors. Set it to the
	// rest.Config.Problems of the resources so both adapters send the same
	// type URLs.
	Problems problem.Writer

	// Logger receives the SDK's session and transport logs (nil: none).
	Logger *slog.Logger

	// Now replaces time.Now when checking the expiry of a session's
	// caller (tests).
	Now func() time.Time
}

// Server is an MCP server exposing resources as tools. Build it with [New];
// serve it over Streamable HTTP with [Server.Handler], over stdio with
// [ServeStdio], or over any SDK transport with [Server.Connect]. A Server is
// safe for concurrent use.
type Server struct {
	mcp    *mcp.Server
	tools  []*tool
	byName map[string]*tool
	extra  []*handlerTool // Config.Handlers' operations
	pw     problem.Writer
	log    *slog.Logger
	calls  callRegistry
	now    func() time.Time
	// written is the highest commit position a tool call of this server
	// wrote (with read replicas): later reads carry it, so a client reads
	// the writes it made through this server.
	written atomic.Uint64
}

// validate checks what New can check before building anything.
func (cfg *Config) validate() error {
	if len(cfg.Resources) == 0 {
		return fmt.Errorf("%w: no resources", ErrConfig)
	}
	for r := range cfg.Guards {
		if !slices.Contains(cfg.Resources, r) {
			return fmt.Errorf("%w: Guards names a resource not in Resources", ErrConfig)
		}
	}
	for i, r := range cfg.Resources {
		if r == nil {
			return fmt.Errorf("%w: resource %d is nil", ErrConfig, i)
		}
	}
	return nil
}

// New builds the server and its tools. It fails, with an error wrapping
// [ErrConfig], without resources, for a nil resource, or when two
// operations share an operation id.
func New(cfg *Config) (*Server, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{pw: cfg.Problems, log: cfg.Logger, byName: map[string]*tool{}, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	impl := &mcp.Implementation{Name: cfg.Name, Title: cfg.Title, Version: cfg.Version}
	if impl.Name == "" {
		impl.Name = DefaultName
	}
	if impl.Version == "" {
		impl.Version = "dev"
	}
	s.mcp = mcp.NewServer(impl, &mcp.ServerOptions{Instructions: cfg.Instructions, Logger: cfg.Logger})
	for _, r := range cfg.Resources {
		d := r.Describe()
		for _, op := range d.Operations {
			t, err := newTool(r, d, op)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %v", ErrConfig, op.ID, err)
			}
			t.guard = cfg.Guards[r]
			if prev, dup := s.byName[t.def.Name]; dup {
				return nil, fmt.Errorf("%w: tool %q is defined by %s and %s", ErrConfig, t.def.Name, prev.res.Table(), r.Table())
			}
			s.byName[t.def.Name] = t
			s.tools = append(s.tools, t)
			s.mcp.AddTool(t.def, s.handler(t))
		}
	}
	for i, ht := range cfg.Handlers {
		if ht.Handler == nil {
			return nil, fmt.Errorf("%w: handler %d is nil", ErrConfig, i)
		}
		for _, op := range ht.Handler.Operations() {
			t, err := newHandlerTool(ht.Handler, op, ht.Guard)
			if err != nil {
				return nil, fmt.Errorf("%w: handler %d operation %q: %v", ErrConfig, i, op.ID, err)
			}
			if _, dup := s.byName[op.ID]; dup || slices.ContainsFunc(s.extra, func(e *handlerTool) bool { return e.def.Name == op.ID }) {
				return nil, fmt.Errorf("%w: tool %q is defined twice", ErrConfig, op.ID)
			}
			s.extra = append(s.extra, t)
			s.mcp.AddTool(t.def, s.handlerToolFunc(t))
		}
	}
	return s, nil
}

// MCP returns the underlying SDK server, e.g. to add prompts or resources.
// Tools it serves outside this package do not run through the pipeline.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Tools returns the definitions of the tools, in order. The values are
// shared: do not modify them.
func (s *Server) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, 0, len(s.tools)+len(s.extra))
	for _, t := range s.tools {
		out = append(out, t.def)
	}
	for _, t := range s.extra {
		out = append(out, t.def)
	}
	return out
}
