package authctx

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// Source names where the credential that decided a state came from.
type Source string

// Credential sources.
const (
	SourceNone     Source = "none"
	SourceResolver Source = "resolver"
	SourceAPIKey   Source = "apikey"
	SourceBearer   Source = "bearer"
	SourceCookie   Source = "cookie"
)

// Result is the outcome of resolving one request: the caller, where the
// credential came from, and the cookies and headers to write back.
type Result struct {
	// Auth is the caller's state.
	Auth Auth
	// Source says which credential decided Auth; the cross-site check
	// applies only to SourceCookie.
	Source Source
	// ResolverName names the custom resolver that answered (SourceResolver).
	ResolverName string
	// RequestCookies are the cookies the rest of the request must see (a
	// refreshed session replaces the stale one). Nil when the request had
	// no cookies.
	RequestCookies []*http.Cookie
	// SetCookies and Header are what Apply writes to the response (a
	// refreshed or cleared session, no-store cache headers). Empty unless
	// the refresh flow wrote a session.
	SetCookies []*http.Cookie
	Header     http.Header
	// CookiesChanged reports that RequestCookies differ from the request's.
	CookiesChanged bool
}

// Apply writes Set-Cookie and cache headers for the response. It writes
// nothing when resolution had nothing to write. Call it before the
// response header is sent.
//
// Set-Cookie lines are rendered by [ssrcookie.Serialize], byte for byte
// as @supabase/ssr renders them (attribute order Max-Age, Domain, Path,
// HttpOnly, Secure, SameSite). A cookie that [http.Cookie.Valid] refuses,
// or whose value net/http would quote (a space or a comma), is rendered by
// [http.SetCookie] instead, which sanitizes, quotes or drops it; the
// cookies of the refresh flow never are, only hand-filled ones.
func (res Result) Apply(w http.ResponseWriter) {
	if len(res.SetCookies) == 0 && len(res.Header) == 0 {
		return
	}
	h := w.Header()
	for k, vs := range res.Header {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range res.SetCookies {
		if c.Valid() != nil || strings.ContainsAny(c.Value, " ,") {
			http.SetCookie(w, c)
			continue
		}
		h.Add("Set-Cookie", ssrcookie.Serialize(c))
	}
}

// Resolve decides who is calling: custom resolvers, then the built-in
// secret apikey check (when Config.Secret), then Authorization: Bearer,
// then the session cookie, else anon/none. A Bearer token that fails
// verification is invalid/token, never anon. It never panics on bad input
// and makes no network call for a valid token with a known kid.
func (rv *Resolver) Resolve(r *http.Request) Result {
	if rv.tel != nil {
		return rv.resolveObserved(r)
	}
	return rv.resolve(r.Context(), r)
}

// resolve is Resolve under ctx: r's context or a child of it (the
// resolution span) that r does not carry yet. r gets ctx only on the
// steps that hand r on (custom resolvers, the cookie session and its
// refresh), so the Bearer path copies no request.
func (rv *Resolver) resolve(ctx context.Context, r *http.Request) Result {
	var res Result
	if len(r.Header["Cookie"]) > 0 {
		res.RequestCookies = r.Cookies()
	}
	if len(rv.resolvers) > 0 {
		r = withContext(ctx, r)
	}
	for _, cr := range rv.resolvers {
		a, ok := cr.Resolve(r)
		if !ok {
			continue
		}
		res.Source, res.ResolverName = SourceResolver, cr.Name()
		res.Auth = rv.normalize(a, cr.Name())
		return res
	}
	var service *Auth
	if rv.secret {
		if a, ok := rv.apikey(r); ok {
			if a.Kind != KindService || !userBearer(r.Header["Authorization"], r.Header.Get("apikey")) {
				res.Source, res.Auth = SourceAPIKey, a
				return res
			}
			// A secret apikey beside a user's token: the token decides,
			// as at Supabase's gateway (a server acting for a user under
			// that user's row-level security). An invalid token stays
			// invalid; it never falls back to the key.
			service = &a
		}
	}
	if vals := r.Header["Authorization"]; len(vals) > 0 {
		if a, ok := rv.bearer(ctx, vals, r.Header); ok {
			res.Source, res.Auth = SourceBearer, a
			return res
		}
	}
	if service != nil {
		res.Source, res.Auth = SourceAPIKey, *service
		return res
	}
	if rv.cookieName != "" && res.RequestCookies != nil {
		return rv.resolveCookie(withContext(ctx, r), res)
	}
	res.Source, res.Auth = SourceNone, Anon(ReasonNone)
	return res
}

// withContext returns r with ctx, r itself when it has ctx already.
func withContext(ctx context.Context, r *http.Request) *http.Request {
	if r.Context() == ctx {
		return r
	}
	return r.WithContext(ctx)
}

// resolveCookie is the cookie step of Resolve (kept apart so the hot
// Bearer path does not move its Result to the heap).
func (rv *Resolver) resolveCookie(r *http.Request, res Result) Result {
	sess, ok := requestSession(r, rv.cookieName)
	if !ok {
		res.Source, res.Auth = SourceNone, Anon(ReasonNone)
		if ssrsession.Has(res.RequestCookies, SignedOutCookieName(rv.cookieName)) {
			res.Auth = Anon(ReasonSignedOut) // see signed_out.go
		}
		return res
	}
	res.Source = SourceCookie
	res.RequestCookies = withSessionChunks(res.RequestCookies, r.Header["Cookie"], rv.cookieName)
	res.Auth = rv.cookie(r, &res, sess)
	return res
}

// withSessionChunks adds to cookies (net/http's reading of the header) the
// session cookies the session was read from that net/http drops: a value
// holding '"', '\' or bytes outside ASCII, as the legacy raw-JSON format
// does. A refresh or sign-out then deletes or replaces every cookie the
// session came from, as @supabase/ssr does over the same header.
func withSessionChunks(cookies []*http.Cookie, header []string, name string) []*http.Cookie {
	var out []*http.Cookie
	for _, c := range ssrcookie.HeaderCookies(header, name) {
		if !ssrsession.Has(cookies, c.Name) {
			if out == nil {
				out = append(make([]*http.Cookie, 0, len(cookies)+1), cookies...)
			}
			out = append(out, c)
		}
	}
	if out == nil {
		return cookies
	}
	return out
}

// normalize makes a custom resolver's answer a valid state: users go
// through the claims schema, an invalid state gets a reason, an unknown
// kind is invalid.
func (rv *Resolver) normalize(a Auth, name string) Auth {
	switch a.Kind {
	case KindUser:
		if a.User == nil || a.User.ID == "" {
			return Invalid(ReasonToken, fmt.Errorf("authctx: resolver %q returned a user without an id", name))
		}
		return rv.finishUser(a.User.Claims, a.User.Token, nil, a.User.ExpiresAt)
	case KindService:
		if a.KeyName == "" {
			a.KeyName = name
		}
		return a
	case KindAnon:
		if a.Reason == "" {
			a.Reason = ReasonNone
		}
		return a
	case KindInvalid:
		if a.Reason == "" {
			a.Reason = ReasonToken
		}
		return a
	}
	return Invalid(ReasonToken, fmt.Errorf("authctx: resolver %q returned an unknown state kind", name))
}

// userBearer reports whether the Authorization header may carry a user's
// token: present, and neither a Bearer sb_ key (which supabase-js sends
// beside the apikey header, and Supabase's gateway replaces with the key's
// role) nor the apikey itself (supabase-js created with a secret key
// that is a legacy service_role JWT sends it in both).
func userBearer(vals []string, apikey string) bool {
	if len(vals) != 1 {
		return len(vals) > 1 // several: the Bearer path refuses them
	}
	scheme, tok, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	tok = strings.TrimSpace(tok)
	return !strings.EqualFold(scheme, "Bearer") || !(strings.HasPrefix(tok, "sb_") || tok == apikey)
}

// apikey is the built-in service resolver: the apikey header compared in
// constant time (HMAC with a per-process key) with every secret key.
func (rv *Resolver) apikey(r *http.Request) (Auth, bool) {
	vals := r.Header["Apikey"]
	if len(vals) == 0 {
		return Auth{}, false
	}
	if len(vals) > 1 {
		return Invalid(ReasonToken, invalidCredential("more than one apikey header", "The request carries more than one apikey header; send exactly one.")), true
	}
	got := rv.mac(vals[0])
	name := ""
	for _, k := range rv.secretKeys {
		if hmac.Equal(got, k.mac) && name == "" {
			name = k.name
		}
	}
	if name != "" {
		return Service(name), true
	}
	if strings.HasPrefix(vals[0], "sb_secret_") {
		return Invalid(ReasonToken, invalidCredential("the apikey is not a configured secret key", "The apikey header holds a secret key (sb_secret_…) that is not one of this server's secret keys (SUPABASE_SECRET_KEYS): it belongs to another project, or it was rotated.")), true
	}
	return Auth{}, false // a publishable key: not a service credential
}

// bearer handles the Authorization header. ok is false when the header
// carries no user credential (empty, or a publishable key).
func (rv *Resolver) bearer(ctx context.Context, vals []string, h http.Header) (Auth, bool) {
	if len(vals) > 1 {
		return Invalid(ReasonToken, invalidCredential("more than one Authorization header", "The request carries more than one Authorization header; send exactly one.")), true
	}
	v := strings.TrimSpace(vals[0])
	if v == "" {
		return Auth{}, false
	}
	scheme, token, found := strings.Cut(v, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return Invalid(ReasonToken, invalidCredential("unsupported Authorization scheme (want Bearer)", "The Authorization header does not use the Bearer scheme: send the access token as `Authorization: Bearer <token>`.")), true
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return Invalid(ReasonToken, invalidCredential("empty Bearer token", "The Authorization header names the Bearer scheme but carries no token.")), true
	}
	if _, ok := rv.publishable[token]; ok {
		return Auth{}, false
	}
	if strings.HasPrefix(token, "sb_") {
		return apiKeyBearer(token, h)
	}
	a, _ := rv.token(ctx, token)
	return a, true
}

// apiKeyBearer classifies a Bearer holding a new-format API key (sb_…),
// which supabase-js sends there beside the apikey header when signed out.
// It is no user credential — absent — when it repeats the apikey header
// (the only way Supabase accepts such a Bearer) or is a publishable key
// (public, it grants what no credential grants). Any other sb_ value — a
// secret key without the apikey header, an unknown or malformed key — is a
// credential that did not verify: invalid, never downgraded to anon.
func apiKeyBearer(token string, h http.Header) (Auth, bool) {
	if strings.HasPrefix(token, "sb_publishable_") {
		return Auth{}, false
	}
	if k := h["Apikey"]; len(k) == 1 && k[0] == token {
		return Auth{}, false
	}
	if strings.HasPrefix(token, "sb_secret_") {
		return Invalid(ReasonToken, invalidCredential("a secret key in the Authorization header must repeat the apikey header", "A secret key (sb_secret_…) in the Authorization header counts only when the apikey header repeats it: send it as the apikey header.")), true
	}
	return Invalid(ReasonToken, invalidCredential("the Bearer is an unknown sb_ key", "The Bearer credential is an API key (sb_…) this server does not know: send a user's access token, or a configured key in the apikey header.")), true
}

// ResolveToken resolves a bare access token the way a Bearer header is
// resolved (memo, verification, claims schema, act chain), for callers
// that receive tokens outside HTTP headers (MCP sessions, CLIs). A token
// that fails verification is invalid, never anon.
func (rv *Resolver) ResolveToken(ctx context.Context, token string) Auth {
	a, _ := rv.token(ctx, token)
	return a
}

// token verifies a token (memo first) and returns its state. err is the
// verification error (nil for a memo hit or a verified token).
func (rv *Resolver) token(ctx context.Context, token string) (Auth, error) {
	if rv.memo != nil {
		if a, ok := rv.memo.get(token, rv.now()); ok {
			rv.tel.MemoHit(ctx)
			return a, nil
		}
		rv.tel.MemoMiss(ctx)
	}
	v, err := rv.verifier.Verify(ctx, token)
	if err != nil {
		if errors.Is(err, ErrActorInvalid) {
			return Invalid(ReasonActor, err), err
		}
		return Invalid(ReasonToken, err), err
	}
	a := rv.fromVerified(v, token)
	if rv.memo != nil {
		rv.memo.put(token, a, v.ExpiresAt.Add(rv.skew))
	}
	return a, nil
}

// fromVerified turns verified claims into a state.
func (rv *Resolver) fromVerified(v *Verified, token string) Auth {
	if _, ok := v.Claims["sub"]; !ok {
		// Supabase API-key JWTs (anon, service_role) carry no sub.
		switch v.Claims["role"] {
		case "anon":
			return Anon(ReasonNone)
		case "service_role":
			if rv.secret {
				return Service("service_role")
			}
		}
		return Invalid(ReasonToken, claimsInvalid("sub is missing (only API-key tokens for anon, and for service_role where secret keys are on, may omit it)"))
	}
	return rv.finishUser(v.Claims, token, v.Payload, v.ExpiresAt)
}

// finishUser applies the claims and profile schemas to a user's claims.
func (rv *Resolver) finishUser(claims Claims, token string, claimsJSON json.RawMessage, exp time.Time) Auth {
	if rv.claims != nil {
		merged, err := rv.claims.Apply(claims)
		if err != nil {
			return Invalid(ReasonClaims, err)
		}
		claims = merged
		b, err := json.Marshal(claims)
		if err != nil {
			return Invalid(ReasonClaims, fmt.Errorf("authctx: claims: %w", err))
		}
		claimsJSON = b
	}
	a := NewUser(claims, token, claimsJSON)
	if a.User.ID == "" {
		return Invalid(ReasonToken, claimsInvalid("sub is empty"))
	}
	a.User.ExpiresAt = exp
	if rv.profile != nil {
		a.User.Profile = parseProfile(rv.profile, claims)
	}
	return a
}

// cookie resolves a session read from the cookie.
func (rv *Resolver) cookie(r *http.Request, res *Result, sess ssrsession.Cookie) Auth {
	a, err := rv.token(r.Context(), sess.AccessToken)
	now := rv.now()
	expired := errors.Is(err, ErrTokenExpired) ||
		(a.Kind == KindUser && !a.User.ExpiresAt.IsZero() && !now.Before(a.User.ExpiresAt))
	if rv.refresh != nil && (expired || (a.Kind == KindUser && a.User.ExpiresAt.Sub(now) < rv.leeway)) {
		// Claims failures are never refreshed: new tokens carry the same
		// claims.
		if a.Kind != KindInvalid || expired {
			return rv.refresh(r, res, sess, a)
		}
	}
	if expired {
		return Anon(ReasonExpired)
	}
	return a
}
