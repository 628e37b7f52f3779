package authctx

import (
	"context"
	"net/http"
)

type ctxKey struct{}

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
		r2 := r.WithContext(context.WithValue(r.Context(), ctxKey{}, res))
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
	res, ok := ctx.Value(ctxKey{}).(Result)
	return res, ok
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
	return context.WithValue(ctx, ctxKey{}, res)
}
