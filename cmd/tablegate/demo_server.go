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
	w := whoami{Kind: a.Kind, Reason: a.Reason, Anonymous: a.Actor().Anonymous, KeyName: a.KeyName, Claims: a.Claims(),
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

// problemFallback answers the mux's own 404 and 405 with problem bodies
// (405 keeps the mux's Allow header), and reports the pattern a request
// matched to telemetry.Handler, unless what served it reported a more
// precise route (a resource, an event stream): the mux usually sits below
// middleware that copies the request, where the Handler cannot see it.
func problemFallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			if r.RequestURI == "*" || strings.Contains(pattern, "{") {
				mux.ServeHTTP(w, r) // it answers "*", and sets the path values
			} else {
				// What mux.ServeHTTP does, without routing the request a
				// second time: a pattern without wildcards has no path
				// values to set.
				r.Pattern = pattern
				h.ServeHTTP(w, r)
			}
			reportPattern(r.Context(), pattern)
			return
		}
		iw := &interceptWriter{ResponseWriter: w}
		h.ServeHTTP(iw, r)
		switch iw.status {
		case http.StatusNotFound:
			writeProblem(w, r, problem.New(problem.KindNotFound, "No route here."))
		case http.StatusMethodNotAllowed:
			p := problem.Newf(problem.KindMethodNotAllowed, "%s is not served here.", r.Method)
			if allow := iw.Header().Get("Allow"); allow != "" {
				p = p.WithHeader("Allow", allow)
			}
			writeProblem(w, r, p)
		}
	})
}

// reportPatterns serves mux and reports the pattern it matched, as
// problemFallback does, for a mux that has a catch-all of its own.
func reportPatterns(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mux.ServeHTTP(w, r) // sets r.Pattern
		reportPattern(r.Context(), r.Pattern)
	})
}

// reportPattern reports a pattern a mux matched to telemetry.Handler,
// after the request was served so that a more precise route (a resource's,
// an inner mux's) wins. A catch-all "/" names no route (SetPattern ignores
// it), and neither does a mount point such as "/api/" (a pattern ending in
// "/"): what is served below it reports its own routes, so only paths
// that match none reach it. The request then stays "other".
func reportPattern(ctx context.Context, pattern string) {
	if !strings.HasSuffix(pattern, "/") {
		telemetry.SetPattern(ctx, pattern)
	}
}

// interceptWriter passes every response through except 404 and 405, which
// it swallows for problemFallback to answer.
type interceptWriter struct {
	http.ResponseWriter
	status  int
	swallow bool
}

func (iw *interceptWriter) WriteHeader(status int) {
	if iw.status != 0 {
		return
	}
	iw.status = status
	if status == http.StatusNotFound || status == http.StatusMethodNotAllowed {
		iw.swallow = true
		return
	}
	iw.ResponseWriter.WriteHeader(status)
}

func (iw *interceptWriter) Write(b []byte) (int, error) {
	if iw.status == 0 {
		iw.WriteHeader(http.StatusOK)
	}
	if iw.swallow {
		return len(b), nil
	}
	return iw.ResponseWriter.Write(b)
}

// health adds /livez (the process answers) and /readyz (readyCheck: the
// database answers — a busy pool is not down — and the signing keys are
// loaded).
func health(mux *http.ServeMux, pool *pgxpool.Pool, rv *authctx.Resolver) {
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", readyHandler(pool, rv))
	// Other methods: 405 here, not the API's 404 from serve's "/".
	for _, p := range []string{"/livez", "/readyz"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeProblem(w, r, problem.Newf(problem.KindMethodNotAllowed, "%s is not served here.", r.Method).
				WithHeader("Allow", "GET, HEAD"))
		})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeProblem(w http.ResponseWriter, r *http.Request, p *problem.Problem) {
	problem.Write(w, p)
}
