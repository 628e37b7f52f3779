package rest

import (
	"context"
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// PositionHeader and PositionCookie carry a write's commit position
// ([db.Position]) to the client and back. With read replicas configured,
// a successful write answers with the header (and, for a cookie session,
// the cookie); a read that carries either is served by a replica that has
// replayed past it, or by the primary: the client reads its own writes.
const (
	PositionHeader = "Tablegate-Position"
	PositionCookie = "Tablegate-Position"
)

// PositionCookieMaxAge is the lifetime of the position cookie: longer
// than any replica in rotation lags ([db.DefaultMaxReplicaLag]; a replica
// lagging more is taken out), short enough not to pin reads to the
// primary.
const PositionCookieMaxAge = 30

// replicaAction reports whether a read-only action's transaction may run
// on a replica: no permission check and no AuthorizeFunc, which may write,
// runs in it.
func (r *Resource) replicaAction(ba *boundAction) bool {
	return ba.ReadOnly && ba.Permission == "" && r.hooks.AuthorizeFunc == nil
}

// consistency prepares the context of a call on a DB with replicas: a
// write records its commit position into the returned *db.Position; a
// read (get, list, a read-only action) asks to see call.Position.
func (r *Resource) consistency(ctx context.Context, call *Call) (context.Context, *db.Position) {
	op := call.Operation
	write := op == OpCreate || op == OpUpdate || op == OpDelete
	if !op.IsCRUD() {
		ba := r.actions[string(op)]
		write = ba != nil && !ba.ReadOnly
	}
	if write {
		return db.TrackPosition(ctx)
	}
	return db.WithPosition(ctx, call.Position), nil
}

// requestPosition reads the position a request carries: the
// Tablegate-Position header, else the cookie. A header that is not a
// position is the caller's mistake (400); a bad cookie is ignored (a
// browser would keep sending it).
func requestPosition(req *http.Request) (db.Position, *problem.Problem) {
	if v := req.Header.Get(PositionHeader); v != "" {
		p, err := db.ParsePosition(v)
		if err != nil {
			return 0, problem.New(problem.KindBadRequest,
				"The Tablegate-Position header is not a position as a write returned it (for example 0/16B3748).")
		}
		return p, nil
	}
	if c, err := req.Cookie(PositionCookie); err == nil {
		if p, err := db.ParsePosition(c.Value); err == nil {
			return p, nil
		}
	}
	return 0, nil
}

// writePosition answers a write's commit position in the header and, for
// a caller signed in by a session cookie, in a short-lived cookie that
// the browser sends with its next reads.
func writePosition(w http.ResponseWriter, req *http.Request, p db.Position) {
	v := p.String()
	w.Header().Set(PositionHeader, v)
	if res, ok := authctx.FromContext(req.Context()); ok && res.Source == authctx.SourceCookie {
		http.SetCookie(w, &http.Cookie{Name: PositionCookie, Value: v, Path: "/", MaxAge: PositionCookieMaxAge,
			HttpOnly: true, Secure: req.TLS != nil, SameSite: http.SameSiteLaxMode})
	}
}
