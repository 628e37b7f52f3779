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

// localResolver resolves callers for the demo until the authctx resolver
// is wired in: the apikey header (secret key → service), then a Bearer
// token verified against the JWKS URL (fetched once, cached by keyfunc).
type localResolver struct {
	kf        keyfunc.Keyfunc
	secretKey string
	keyName   string
}

func newLocalResolver(ctx context.Context, jwksURL, secretKey, keyName string) (*localResolver, error) {
	kf, err := keyfunc.NewDefaultCtx(ctx, []string{jwksURL})
	if err != nil {
		return nil, err
	}
	return &localResolver{kf: kf, secretKey: secretKey, keyName: keyName}, nil
}

func (lr *localResolver) Resolve(r *http.Request) authctx.Auth {
	if k := r.Header.Get("apikey"); k != "" && lr.secretKey != "" {
		if equalKeys(k, lr.secretKey) {
			return authctx.Service(lr.keyName)
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
