package mcptools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// tokenInfoKey is the key of the session caller in the SDK's TokenInfo.Extra.
const tokenInfoKey = "tablegate.caller"

// sessionCaller is the fixed caller of a session.
type sessionCaller struct {
	server *Server
	auth   authctx.Auth
}

// CallerError is returned by [Server.Connect] and [ServeStdio] when the
// guard refuses the session's caller. Problem is the guard's answer.
type CallerError struct {
	Problem *problem.Problem
}

// Error implements error; it names the refusal without token values.
func (e *CallerError) Error() string {
	return "mcptools: caller refused: " + e.Problem.Error()
}

// Unwrap returns the problem.
func (e *CallerError) Unwrap() error { return e.Problem }

// Connect serves one session over t (an SDK transport: in-memory, stdio,
// a command's pipes, …) with a single caller, a, for every tool call of the
// session. admit is the guard, usually [AllowList] (nil: AllowList(),
// full users only); an invalid caller is always refused. A refused caller
// gives a *CallerError and no session. A user caller whose token's exp claim passes during the session
// is refused from then on (401 TOKEN_EXPIRED tool errors).
func (s *Server) Connect(ctx context.Context, t mcp.Transport, a authctx.Auth, admit func(authctx.Auth) *problem.Problem) (*mcp.ServerSession, error) {
	if a.Kind == authctx.KindInvalid {
		return nil, &CallerError{Problem: authctx.Admit(a)}
	}
	if s.expired(a) {
		return nil, &CallerError{Problem: expiredProblem()}
	}
	if admit == nil {
		admit = AllowList()
	}
	if p := admit(a); p != nil {
		return nil, &CallerError{Problem: p}
	}
	ti := &auth.TokenInfo{Extra: map[string]any{tokenInfoKey: &sessionCaller{server: s, auth: a}}}
	if a.Kind == authctx.KindUser && a.User != nil {
		ti.UserID = a.User.ID
	}
	return s.mcp.Connect(ctx, &callerTransport{t: t, ti: ti}, nil)
}

// ServeStdio serves one session over stdin/stdout with the caller a until
// the client disconnects or ctx is cancelled (the CLI's serve --mcp-stdio).
// The caller usually comes from [CallerFromEnv]. admit is the guard, as
// for [Server.Connect].
func ServeStdio(ctx context.Context, s *Server, a authctx.Auth, admit func(authctx.Auth) *problem.Problem) error {
	return s.Run(ctx, &mcp.StdioTransport{}, a, admit)
}

// Run serves one session over t with the caller a until the client
// disconnects or ctx is cancelled.
func (s *Server) Run(ctx context.Context, t mcp.Transport, a authctx.Auth, admit func(authctx.Auth) *problem.Problem) error {
	ss, err := s.Connect(ctx, t, a, admit)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		_ = ss.Close()
		<-done
		return ctx.Err()
	case err := <-done:
		if err != nil {
			return fmt.Errorf("mcptools: session: %w", err)
		}
		return nil
	}
}

// callerTransport attaches the session's caller to every request read
// from the wrapped transport's connection.
type callerTransport struct {
	t  mcp.Transport
	ti *auth.TokenInfo
}

func (ct *callerTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := ct.t.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &callerConn{Connection: c, ti: ct.ti}, nil
}

type callerConn struct {
	mcp.Connection
	ti *auth.TokenInfo
}

func (c *callerConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && err == nil {
		ex, _ := req.Extra.(*mcp.RequestExtra)
		if ex == nil {
			ex = &mcp.RequestExtra{}
		} else {
			cp := *ex
			ex = &cp
		}
		ex.TokenInfo = c.ti
		req.Extra = ex
	}
	return m, err
}

// Environment variables read by [CallerFromEnv].
const (
	// EnvAccessToken holds a user's access token (a JWT), sent to the
	// resolver as Authorization: Bearer.
	EnvAccessToken = "TABLEGATE_ACCESS_TOKEN"
	// EnvAPIKey holds a secret key, sent to the resolver as the apikey
	// header (a service caller when the resolver knows the key).
	EnvAPIKey = "TABLEGATE_API_KEY"
)

// ErrEnvCaller is returned by [CallerFromEnv] when both [EnvAccessToken]
// and [EnvAPIKey] are set.
var ErrEnvCaller = errors.New("mcptools: set only one of " + EnvAccessToken + " and " + EnvAPIKey)

// CallerFromEnv resolves the caller of a stdio session from the
// environment: the token of [EnvAccessToken] or the secret key of
// [EnvAPIKey] is put on a request and handed to resolve — the same
// resolution (resolvers, verification, claims schema) as the HTTP routes.
// Neither variable gives the anon caller; the guard decides whether it may
// serve. getenv is usually os.Getenv. The state may be invalid (a token
// that did not verify): Connect and ServeStdio refuse it.
func CallerFromEnv(ctx context.Context, getenv func(string) string, resolve func(*http.Request) authctx.Auth) (authctx.Auth, error) {
	tok, key := strings.TrimSpace(getenv(EnvAccessToken)), strings.TrimSpace(getenv(EnvAPIKey))
	if tok != "" && key != "" {
		return authctx.Auth{}, ErrEnvCaller
	}
	if tok == "" && key == "" {
		return authctx.Anon(authctx.ReasonNone), nil
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://stdio.invalid/mcp", http.NoBody)
	if err != nil {
		return authctx.Auth{}, err
	}
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	} else {
		r.Header.Set("apikey", key)
	}
	return resolve(r), nil
}
