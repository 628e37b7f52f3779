package dataapi

import (
	"context"
	"net/http"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// With read replicas ([db.Config.Replicas]) the data API routes as the
// native routes do: reads that write nothing run on a replica, one that
// has replayed past the position the request carries (the
// Tablegate-Position header, else its cookie); a successful write answers
// its commit position in the header (and, for a caller signed in by a
// session cookie, in the cookie), so that the caller's next reads see it.

// position reads the position a request carries: the header, else the
// cookie. A header that is not a position is the caller's mistake (400);
// a bad cookie is ignored (a browser would keep sending it).
func requestPosition(r *http.Request) (db.Position, *Error) {
	if v := r.Header.Get(rest.PositionHeader); v != "" {
		p, err := db.ParsePosition(v)
		if err != nil {
			return 0, apiErr(http.StatusBadRequest, "PGRST100", "The "+rest.PositionHeader+" header is not a position").
				withHint("Send back the " + rest.PositionHeader + " a write answered (for example 0/16B3748), or leave the header out.")
		}
		return p, nil
	}
	if c, err := r.Cookie(rest.PositionCookie); err == nil {
		if p, err := db.ParsePosition(c.Value); err == nil {
			return p, nil
		}
	}
	return 0, nil
}

// readCtx is the context of a read that may run on a replica: it asks
// to see the position the request carries.
func (q *request) readCtx() context.Context {
	return db.WithPosition(q.r.Context(), q.pos)
}

// writeCtx is the context of a write: with replicas it records the
// commit position, which [request.answerPosition] answers.
func (q *request) writeCtx() context.Context {
	if !q.api.d.HasReplicas() {
		return q.r.Context()
	}
	ctx, p := db.TrackPosition(q.r.Context())
	q.written = p
	return ctx
}

// answerPosition sets the Tablegate-Position header (and, for a cookie
// session, the cookie) of a committed write; before the status is
// written.
func (q *request) answerPosition() {
	if q.written == nil || *q.written == 0 {
		return
	}
	v := q.written.String()
	q.w.Header().Set(rest.PositionHeader, v)
	if res, ok := authctx.FromContext(q.r.Context()); ok && res.Source == authctx.SourceCookie {
		http.SetCookie(q.w, &http.Cookie{Name: rest.PositionCookie, Value: v, Path: "/", MaxAge: rest.PositionCookieMaxAge,
			HttpOnly: true, Secure: q.r.TLS != nil, SameSite: http.SameSiteLaxMode})
	}
}
