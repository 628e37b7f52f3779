package demo

import (
	"encoding/json"
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/internal/mcpdiscovery"
	"github.com/tablegate/tablegate/problem"
)

// Whoami is the JSON body of /whoami and the /guard routes.
type Whoami struct {
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

// WhoamiOf is the Whoami of a resolved caller.
func WhoamiOf(a authctx.Auth) Whoami {
	w := Whoami{Kind: a.Kind, Reason: a.Reason, Anonymous: a.Actor().Anonymous, KeyName: a.KeyName, Claims: a.Claims(),
		Cause: a.Cause(), Detail: a.CauseDetail()}
	if a.Kind == authctx.KindUser && a.User != nil {
		w.UserID = a.User.ID
	}
	return w
}

// guardRoutes maps the /guard/{name} names to allow lists, one route per
// guard of the documented admission matrix.
var guardRoutes = map[string][]authctx.Allow{
	"user":           {authctx.AllowUser},
	"user-anon":      {authctx.AllowUser, authctx.AllowAnon},
	"user-anonymous": {authctx.AllowUser, authctx.AllowAnonymous},
	"anonymous":      {authctx.AllowAnonymous},
}

// Routes are the demo's routes beside what package server serves.
type Routes struct {
	// JWKS is the public signing keys, served at
	// /auth/v1/.well-known/jwks.json.
	JWKS []byte
	// API serves /api/ (todos, approvals) and /mcp; nil: none.
	API *API
	// Auth answers GoTrue's endpoints when the demo is its own auth
	// server; nil: none.
	Auth AuthServer
	// Flows serve /auth/{sign-in,otp,verify,oauth,callback,sign-out} and
	// the /account page; nil: none.
	Flows *authflow.Flows
}

// jwksHandler serves the public signing keys as GoTrue does.
func (s *Routes) jwksHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=600")
	_, _ = w.Write(s.JWKS)
}

// Mount adds the routes to mux. Callers are resolved by the resolver's
// middleware around it (server.Config.Routes).
func (s *Routes) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /auth/v1/.well-known/jwks.json", s.jwksHandler)
	whoamiHandler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, WhoamiOf(authctx.AuthFrom(r.Context())))
	})
	mux.Handle("GET /whoami", whoamiHandler)
	for name, allow := range guardRoutes {
		mux.Handle("GET /guard/"+name, authctx.Guard(allow...)(whoamiHandler))
	}
	if s.Auth != nil {
		s.Auth.Routes(mux)
	}
	if s.Flows != nil {
		flowRoutes(mux, s.Flows)
	}
	if s.API != nil {
		// The API's patterns on mux itself: one ServeMux lookup per
		// request where mounting its Router at "/api/" takes two.
		api := s.API.API.Router()
		api.Register(mux)
		mux.Handle("/api/", api.NotFound())
		mux.Handle("/mcp", s.API.MCP)
		mux.Handle(mcpdiscovery.Path, s.API.MCPMetadata)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
