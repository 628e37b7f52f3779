package mcptools_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// newCaller verifies Bearer ES256 tokens against the JWKS at url with
// golang-jwt and keyfunc, behind the func(*http.Request) authctx.Auth seam
// of HTTPOptions.Caller. (Temporary: authctx's Resolver is not on main yet.)
func newCaller(t *testing.T, url string) func(*http.Request) authctx.Auth {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := jwksCaller(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func jwksCaller(ctx context.Context, url string) (func(*http.Request) authctx.Auth, error) {
	kf, err := keyfunc.NewDefaultCtx(ctx, []string{url})
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) authctx.Auth {
		h := r.Header.Get("Authorization")
		if h == "" {
			return authctx.Anon(authctx.ReasonNone)
		}
		tok, found := strings.CutPrefix(h, "Bearer ")
		if !found {
			return authctx.Invalid(authctx.ReasonToken, errors.New("not a bearer credential"))
		}
		claims := jwt.MapClaims{}
		if _, err := jwt.ParseWithClaims(tok, claims, kf.Keyfunc, jwt.WithValidMethods([]string{"ES256"}),
			jwt.WithExpirationRequired()); err != nil {
			return authctx.Invalid(authctx.ReasonToken, errors.New("token did not verify"))
		}
		return authctx.NewUser(authctx.Claims(claims), tok, nil)
	}, nil
}

// admitUsers admits full users only (the guard's default allow list).
// (Temporary: authctx.Admit is not on main yet.)
func admitUsers(a authctx.Auth) *problem.Problem {
	switch {
	case a.Kind == authctx.KindInvalid:
		return problem.WithCode(problem.CodeTokenInvalid, "The credential is invalid.").WithHeader("WWW-Authenticate", "Bearer")
	case a.Kind == authctx.KindUser && a.User.Claims.Anonymous():
		return problem.WithCode(problem.CodeAnonymousUser, "Anonymous sign-ins are not allowed here.")
	case a.Kind == authctx.KindUser:
		return nil
	case a.Kind == authctx.KindService:
		return problem.WithCode(problem.CodeCallerNotAllowed, "Service callers are not allowed here.")
	}
	return problem.WithCode(problem.CodeAuthRequired, "Sign in first.").WithHeader("WWW-Authenticate", "Bearer")
}
