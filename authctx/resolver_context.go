package authctx

import (
	"context"
	"net/http"
)

type ctxKey struct{}

// resultCtx is a context carrying a Result under ctxKey: one allocation
// for the context and the Result (context.WithValue makes two).
type resultCtx struct {
	context.Context
	res Result
}

// Value returns c for ctxKey, else the value of its parent context.
func (c *resultCtx) Value(key any) any {
	if key == (ctxKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// Middleware resolves the caller once, stores the [Result] in the request
// context (read it with [FromContext] or [AuthFrom]), calls Apply before
// next runs, and hands next the cookies of Result.RequestCookies.
//
// Called on a nil *Resolver (the result of a failed [New] whose error was
// not checked), it panics at once, while the server is being wired, rather
// than on the first request.
func (rv *Resolver) Middleware(next http.Handler) http.Handler {
	mustResolver(rv, "Middleware")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res := rv.Resolve(r)
		res.Apply(w)
		r2 := r.WithContext(&resultCtx{r.Context(), res})
		if res.CookiesChanged {
			r2.Header = r.Header.Clone()
			r2.Header.Del("Cookie")
			for _, c := range res.RequestCookies {
				r2.AddCookie(c)
			}
		}
		next.ServeHTTP(w, r2)
	})
}

// mustResolver panics with a message naming the unchecked error when rv
// is nil: wiring code calls it, so the mistake shows at start-up.
func mustResolver(rv *Resolver, method string) {
	if rv == nil {
		panic("authctx: Resolver." + method + " on a nil *Resolver: authctx.New returned an error that was not checked")
	}
}

// FromContext returns the Result stored by [Resolver.Middleware].
func FromContext(ctx context.Context) (Result, bool) {
	if c, ok := ctx.Value(ctxKey{}).(*resultCtx); ok {
		return c.res, true
	}
	return Result{}, false
}

// AuthFrom returns the caller stored by [Resolver.Middleware], or
// anon/none when the middleware did not run.
func AuthFrom(ctx context.Context) Auth {
	if res, ok := FromContext(ctx); ok {
		return res.Auth
	}
	return Anon(ReasonNone)
}

// WithResult returns ctx carrying res, for adapters that resolve without
// the middleware (and for tests).
func WithResult(ctx context.Context, res Result) context.Context {
	if ctx == nil {
		panic("authctx: WithResult on a nil context")
	}
	return &resultCtx{ctx, res}
}
