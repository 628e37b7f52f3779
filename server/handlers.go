package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// callerOf reads the caller the resolver's middleware stored.
func callerOf(r *http.Request) (authctx.Auth, error) { return authctx.AuthFrom(r.Context()), nil }

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

// skipCatchAll serves catchAll, the handler of mux's pattern "/", as
// problemFallback(mux) does for a request ServeMux routes there, without
// the ServeMux lookup: a request whose escaped path is clean (ServeMux
// redirects any other), holds no escape and is none of literal, not a
// CONNECT. literal are the paths of mux's other patterns, every one a
// literal path without a trailing slash or host (with or without a
// method): ServeMux routes any other clean path to "/" and redirects none
// of them. Other requests go to next, problemFallback(mux).
func skipCatchAll(literal []string, catchAll, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.EscapedPath(); r.Method != http.MethodConnect && cleanMuxPath(p) &&
			!strings.Contains(p, "%") && !slices.Contains(literal, p) {
			r.Pattern = "/" // as problemFallback sets it; "/" reports no pattern
			catchAll.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cleanMuxPath reports whether ServeMux routes the escaped path p as is,
// without redirecting to its clean form: it starts with "/" and has no
// empty segment (but a last one: a trailing slash) and no "." or ".."
// segment.
func cleanMuxPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	for rest := p[1:]; ; {
		seg, tail, more := strings.Cut(rest, "/")
		if seg == "." || seg == ".." || (seg == "" && more) {
			return false
		}
		if !more {
			return true
		}
		rest = tail
	}
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

// healthPaths are the paths health serves.
var healthPaths = []string{"/livez", "/readyz"}

// health adds /livez (the process answers) and /readyz (readyCheck: the
// database answers — a busy pool is not down — and the signing keys are
// loaded).
func health(mux *http.ServeMux, pool *pgxpool.Pool, rv *authctx.Resolver) {
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", readyHandler(pool, rv))
	// Other methods: 405 here, not the API's 404 from serve's "/".
	for _, p := range healthPaths {
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

// flowPatterns are the paths of authflow's handler (base path /auth), as
// serve and the demo mount them, every method (the handler answers 405 to
// the wrong one); any other /auth path is theirs to answer.
var flowPatterns = []string{"/auth/sign-in", "/auth/otp", "/auth/verify", "/auth/sign-out", "/auth/oauth", "/auth/callback"}

// mountFlows mounts the routes of flows on mux, each reported to
// telemetry (access log, metrics, spans) by its pattern.
func mountFlows(mux *http.ServeMux, flows *authflow.Flows) {
	h := flows.Handler()
	for _, p := range flowPatterns {
		mux.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			telemetry.SetPattern(r.Context(), r.Pattern)
			h.ServeHTTP(w, r)
		}))
	}
}
