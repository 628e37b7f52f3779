package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/authctx"
)

// localResolver resolves callers until the authctx resolver is wired in:
// the apikey header (a secret key → service), then a Bearer token verified
// against the JWKS (fetched once, cached by keyfunc).
type localResolver struct {
	kf         keyfunc.Keyfunc
	secretKeys map[string]string
}

// resolverConfig says where tokens verify and which secret keys exist.
type resolverConfig struct {
	ProjectURL string
	JWKSURL    string
	JWKS       json.RawMessage
	SecretKeys map[string]string
	Refresh    bool
}

func newResolverFor(ctx context.Context, c resolverConfig) (*localResolver, error) {
	if c.Refresh {
		return nil, errors.New("session refresh is not available in this build")
	}
	var kf keyfunc.Keyfunc
	var err error
	switch {
	case c.JWKSURL != "":
		kf, err = keyfunc.NewDefaultCtx(ctx, []string{c.JWKSURL})
	case len(c.JWKS) > 0:
		kf, err = keyfunc.NewJWKSetJSON(c.JWKS)
	default:
		kf, err = keyfunc.NewDefaultCtx(ctx, []string{strings.TrimRight(c.ProjectURL, "/") + "/auth/v1/.well-known/jwks.json"})
	}
	if err != nil {
		return nil, err
	}
	return &localResolver{kf: kf, secretKeys: c.SecretKeys}, nil
}

func newLocalResolver(ctx context.Context, jwksURL, secretKey, keyName string) (*localResolver, error) {
	return newResolverFor(ctx, resolverConfig{JWKSURL: jwksURL, SecretKeys: map[string]string{keyName: secretKey}})
}

func (lr *localResolver) Resolve(r *http.Request) authctx.Auth {
	if k := r.Header.Get("apikey"); k != "" {
		for name, secret := range lr.secretKeys {
			if equalKeys(k, secret) {
				return authctx.Service(name)
			}
		}
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return authctx.Anon(authctx.ReasonNone)
	}
	tok, ok := strings.CutPrefix(h, "Bearer ")
	if !ok || tok == "" {
		return authctx.Invalid(authctx.ReasonToken, errors.New("authorization header is not Bearer"))
	}
	var claims jwt.MapClaims
	_, err := jwt.ParseWithClaims(tok, &claims, lr.kf.KeyfuncCtx(r.Context()),
		jwt.WithValidMethods([]string{"ES256", "RS256"}), jwt.WithExpirationRequired(), jwt.WithLeeway(5*time.Second))
	if err != nil {
		return authctx.Invalid(authctx.ReasonToken, errors.New("token did not verify"))
	}
	raw, _ := json.Marshal(claims)
	return authctx.NewUser(authctx.Claims(claims), tok, raw)
}

// equalKeys compares two secrets in constant time over their hashes.
func equalKeys(a, b string) bool {
	ha := sha256.Sum256([]byte(a))
	hb := sha256.Sum256([]byte(b))
	return hmac.Equal(ha[:], hb[:])
}

type authKey struct{}

// middleware resolves the caller once and stores it in the request context.
func (lr *localResolver) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := lr.Resolve(r)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), authKey{}, a)))
	})
}

// authOf returns the caller stored by middleware (anon/none without it).
func authOf(r *http.Request) authctx.Auth {
	if a, ok := r.Context().Value(authKey{}).(authctx.Auth); ok {
		return a
	}
	return authctx.Anon(authctx.ReasonNone)
}

// callerOf is the rest resources' caller.
func callerOf(r *http.Request) (authctx.Auth, error) { return authOf(r), nil }

// guardWith admits the callers of the allow list and answers the rest with
// the problem of admit.
func guardWith(allow ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p := admit(authOf(r), allow); p != nil {
				writeProblem(w, r, p)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
