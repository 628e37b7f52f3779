package authz

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// HandlerConfig configures [Approvals.Handler].
type HandlerConfig struct {
	// Caller returns the caller of a request. Nil reads the state that
	// authctx middleware (authctx.Resolver.Middleware) stored in the
	// request context, via authctx.AuthFrom; without it the caller is anon,
	// which is refused.
	Caller func(*http.Request) (authctx.Auth, error)
	// Problems renders error bodies (type URL base).
	Problems problem.Writer
	// Logger receives unexpected errors. Nil uses slog.Default().
	Logger *slog.Logger
}

// Handler returns an http.Handler for an approvals endpoint, relative to
// its mount point (mount it with http.StripPrefix, e.g. at /api/approvals):
//
//	GET  /                list visible approvals, newest first:
//	                      ?state=pending|approved|denied|expired
//	                      &actor=<user id>&limit=1..500 (default 50)&cursor=…
//	                      → 200 {"items": [...], "next_cursor": "…"|null}
//	GET  /{id}            one approval → 200, 404 when missing or not visible
//	POST /{id}/approve    approve → 200 approval
//	POST /{id}/deny       deny → 200 approval
//
// Requesters see their own approvals; approvers see all and decide those of
// others (403 PERMISSION_DENIED with permission approvals.decide
// otherwise; 409 when no longer pending). Callers without a session answer
// 401. Errors are application/problem+json.
func (a *Approvals) Handler(opts *HandlerConfig) http.Handler {
	h := &approvalHandler{a: a}
	if opts != nil {
		h.o = *opts
	}
	if h.o.Logger == nil {
		h.o.Logger = slog.Default()
	}
	return h
}

type approvalHandler struct {
	a *Approvals
	o HandlerConfig
}

type approvalPage struct {
	Items      []Approval `json:"items"`
	NextCursor *string    `json:"next_cursor"`
}

type cursor struct {
	T  time.Time `json:"t"`
	ID string    `json:"id"`
}

func (h *approvalHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(seg) == 1 && seg[0] == "" {
		seg = nil
	}
	var allow, pattern, op string
	switch {
	case len(seg) == 0:
		allow, pattern, op = "GET, HEAD", "/", "list"
	case len(seg) == 1:
		allow, pattern, op = "GET, HEAD", "/{id}", "get"
	case len(seg) == 2 && (seg[1] == "approve" || seg[1] == "deny"):
		allow, pattern, op = "POST", "/{id}/"+seg[1], seg[1]
	default:
		h.fail(w, r, problem.New(problem.KindNotFound, "No such route."))
		return
	}
	// Spans, metrics and the access log name the route, never the id (nor
	// a value of the mount's wildcards: the ServeMux pattern names them).
	telemetry.MountPattern(r.Context(), r.Pattern)
	telemetry.SetRoute(r.Context(), r.URL.EscapedPath(), pattern, op, "tablegate.approvals")
	if !methodIn(r.Method, allow) {
		w.Header().Set("Allow", allow)
		h.fail(w, r, problem.New(problem.KindMethodNotAllowed, "Method "+r.Method+" is not allowed here."))
		return
	}
	auth := authctx.AuthFrom(r.Context())
	if h.o.Caller != nil {
		var err error
		if auth, err = h.o.Caller(r); err != nil {
			auth = authctx.Invalid(authctx.ReasonToken, err)
		}
	}
	switch auth.Kind {
	case authctx.KindInvalid:
		h.fail(w, r, authctx.Admit(auth))
		return
	case authctx.KindUser, authctx.KindService:
	default:
		h.fail(w, r, problem.WithCode(problem.CodeAuthRequired, "Approvals need a signed-in caller."))
		return
	}
	caller := auth
	ctx := r.Context()

	var out any
	var err error
	switch len(seg) {
	case 0:
		out, err = h.list(r, caller)
	case 1:
		out, err = h.a.Get(ctx, caller, seg[0])
	default:
		out, err = h.a.Decide(ctx, caller, seg[0], seg[1] == "approve")
	}
	if err != nil {
		h.fail(w, r, problem.From(err))
		return
	}
	body, err := json.Marshal(out)
	if err != nil {
		h.fail(w, r, problem.From(err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

func (h *approvalHandler) list(r *http.Request, caller authctx.Auth) (any, error) {
	q, err := url.ParseQuery(r.URL.RawQuery) // URL.Query() would drop bad pairs silently
	if err != nil {
		return nil, problem.New(problem.KindBadRequest, "The query string is malformed.")
	}
	for k, vs := range q {
		switch {
		case k != "state" && k != "actor" && k != "limit" && k != "cursor":
			return nil, problem.Newf(problem.KindBadRequest, "Unknown query parameter %q: state, actor, limit and cursor are.", truncateParam(k))
		case len(vs) > 1:
			return nil, problem.Newf(problem.KindBadRequest, "Query parameter %q is given more than once.", k)
		}
	}
	o := &ListOpts{State: State(q.Get("state")), Actor: q.Get("actor"), Limit: 50}
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return nil, problem.New(problem.KindBadRequest, "limit must be an integer from 1 to 500.")
		}
		o.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		var c cursor
		b, err := base64.RawURLEncoding.DecodeString(s)
		if err == nil {
			err = json.Unmarshal(b, &c)
		}
		if err != nil || !isUUID(c.ID) || c.T.IsZero() {
			return nil, problem.New(problem.KindBadRequest, "The cursor is malformed.")
		}
		o.Before = &Approval{ID: c.ID, RequestedAt: c.T}
	}
	items, err := h.a.List(r.Context(), caller, o)
	if err != nil {
		return nil, err
	}
	page := approvalPage{Items: items}
	if len(items) == o.Limit {
		last := items[len(items)-1]
		b, _ := json.Marshal(cursor{T: last.RequestedAt, ID: last.ID})
		s := base64.RawURLEncoding.EncodeToString(b)
		page.NextCursor = &s
	}
	return page, nil
}

func (h *approvalHandler) fail(w http.ResponseWriter, r *http.Request, p *problem.Problem) {
	if p.Kind == problem.KindUnexpected {
		h.o.Logger.ErrorContext(r.Context(), "authz: approvals handler", "error", p.Unwrap())
	}
	w.Header().Set("Cache-Control", "no-store")
	h.o.Problems.Write(w, p)
}

func methodIn(method, allow string) bool {
	for _, m := range strings.Split(allow, ", ") {
		if m == method {
			return true
		}
	}
	return false
}

// truncateParam shortens a parameter name for a problem's detail.
func truncateParam(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
