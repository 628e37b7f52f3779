package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// whoami is the JSON body of /whoami and the /guard routes.
type whoami struct {
	Kind      authctx.Kind   `json:"kind"`
	Reason    authctx.Reason `json:"reason,omitempty"`
	UserID    string         `json:"user_id,omitempty"`
	Anonymous bool           `json:"anonymous"`
	KeyName   string         `json:"key_name,omitempty"`
	Claims    authctx.Claims `json:"claims,omitempty"`
	// Cause and Detail say why an invalid caller's credential was
	// refused (Reason stays "token"): the stable code and what to do.
	Cause  problem.Code `json:"cause,omitempty"`
	Detail string       `json:"detail,omitempty"`
}

func whoamiOf(a authctx.Auth) whoami {
	s := a.Session()
	return whoami{Kind: a.Kind, Reason: a.Reason, UserID: s.UserID, Anonymous: s.Anonymous, KeyName: a.KeyName, Claims: s.Claims,
		Cause: a.Cause(), Detail: a.CauseDetail()}
}

// guardRoutes maps the /guard/{name} names to allow lists, one route per
// guard of the documented admission matrix.
var guardRoutes = map[string][]authctx.Allow{
	"user":           {authctx.AllowUser},
	"user-anon":      {authctx.AllowUser, authctx.AllowAnon},
	"user-anonymous": {authctx.AllowUser, authctx.AllowAnonymous},
	"anonymous":      {authctx.AllowAnonymous},
}

// demoServer holds what the demo's routes need.
type demoServer struct {
	pool *pgxpool.Pool
	rv   *authctx.Resolver // readiness: signing keys loaded
	jwks []byte
	// parts serve /api/ (todos, approvals) and /mcp.
	parts *demoAPIParts
	// gotrue answers the refresh grant when the demo is its own auth server.
	gotrue *demoAuthServer
	// flows serve /auth/{sign-in,otp,verify,oauth,callback,sign-out} and
	// the /account page.
	flows *authflow.Flows
}

// jwksHandler serves the public signing keys as GoTrue does.
func (s *demoServer) jwksHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=600")
	_, _ = w.Write(s.jwks)
}

// handler returns the demo's routes. Callers are resolved by the
// resolver's middleware around it.
func (s *demoServer) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth/v1/.well-known/jwks.json", s.jwksHandler)
	whoamiHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, whoamiOf(authctx.AuthFrom(r.Context())))
	})
	mux.Handle("GET /whoami", whoamiHandler)
	for name, allow := range guardRoutes {
		mux.Handle("GET /guard/"+name, authctx.Guard(allow...)(whoamiHandler))
	}
	if s.gotrue != nil {
		s.gotrue.routes(mux)
	}
	if s.flows != nil {
		flowRoutes(mux, s.flows)
	}
	if s.parts != nil {
		mux.Handle("/api/", s.parts.api.Handler())
		mux.Handle("/mcp", s.parts.mcp)
		mux.Handle(mcpMetadataPath, s.parts.mcpMeta)
	}
	health(mux, s.pool, s.rv)
	return problemFallback(mux)
}

