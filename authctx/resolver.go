package authctx

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// AuthResolver is a custom resolver (seed 2.2), tried before Bearer and
// cookie. Resolve returns a state and true when the request carries a
// credential it understands, and false otherwise; the first resolver that
// answers wins and nothing after it is consulted. A returned user still
// goes through the claims schema; an invalid state without a reason
// counts as reason token.
type AuthResolver interface {
	Name() string
	Resolve(r *http.Request) (Auth, bool)
}

// ResolverFunc adapts a function to an [AuthResolver].
func ResolverFunc(name string, fn func(r *http.Request) (Auth, bool)) AuthResolver {
	return resolverFunc{name: name, fn: fn}
}

type resolverFunc struct {
	name string
	fn   func(r *http.Request) (Auth, bool)
}

func (f resolverFunc) Name() string                         { return f.name }
func (f resolverFunc) Resolve(r *http.Request) (Auth, bool) { return f.fn(r) }

// Config configures a [Resolver]. Build one from the environment with
// [LoadEnv] and [Env.Config], then override fields in Go.
type Config struct {
	// ProjectURL is the Supabase project URL (SUPABASE_URL). It derives
	// the JWKS URL and the session cookie name.
	ProjectURL string
	// JWKSURL overrides {ProjectURL}/auth/v1/.well-known/jwks.json.
	JWKSURL string
	// JWKS is an inline JWK Set (SUPABASE_JWKS). When set and JWKSURL is
	// empty, no JWKS is fetched at all.
	JWKS json.RawMessage
	// Issuer and Audience are checked when set.
	Issuer   string
	Audience string
	// ClockSkew is the leeway on exp/nbf (default DefaultClockSkew).
	ClockSkew time.Duration
	// MaxTokenBytes caps token size (default DefaultMaxTokenBytes).
	MaxTokenBytes int
	// Resolvers are tried first, in order.
	Resolvers []AuthResolver
	// Secret turns on the built-in service resolver: an apikey header equal
	// (constant-time) to one of SecretKeys resolves to service with that
	// key's name. A verified service_role JWT without sub is also service.
	Secret bool
	// SecretKeys maps key names to secret keys (SUPABASE_SECRET_KEYS).
	SecretKeys map[string]string
	// PublishableKeys are the project's publishable/anon keys. A Bearer
	// equal to one of them (supabase-js sends it when signed out), or any
	// Bearer starting with "sb_", is not a user credential and counts as
	// absent.
	PublishableKeys []string
	// Claims types the verified claims (nil: no schema).
	Claims *ClaimsSchema
	// UserMetadata parses user_metadata into User.Profile (display-only).
	UserMetadata *ClaimsSchema
	// CookieName overrides the session cookie name (default from
	// ProjectURL: sb-<first host label>-auth-token). Empty with no
	// ProjectURL disables the cookie path.
	CookieName string
	// CookieOptions are the attributes of the session cookies that the
	// refresh flow writes and deletes, like cookieOptions of
	// createServerClient. The zero value is the @supabase/ssr default:
	// Path /, SameSite Lax, no Domain, Secure or HttpOnly. Max-Age is not
	// an option: always 34560000 on a set and 0 on a delete. With a
	// Domain, every delete is also sent host-only, first, to clear
	// cookies set before the Domain was configured. [New] fails for a
	// Domain or Path that is not a valid cookie attribute, an unknown
	// SameSite, or SameSite None without Secure (browsers drop those).
	CookieOptions ssrcookie.Options
	// TrustedOrigins are origins (scheme://host[:port]) allowed to send
	// cross-site requests that rely on the session cookie.
	TrustedOrigins []string
	// HTTPClient fetches the JWKS (and, later, refreshes sessions).
	HTTPClient *http.Client
	// MemoSize bounds the verification memo (default DefaultMemoSize;
	// negative disables it).
	MemoSize int
	// LegacyJWTSecret (SUPABASE_JWT_SECRET) is only used to explain why
	// construction fails when it is the sole key material.
	LegacyJWTSecret string
	// Refresh, Leeway and RefreshTimeout configure session refresh on the
	// cookie path (seed 2.2); they take effect with the refresh flow.
	Refresh        bool
	Leeway         time.Duration
	RefreshTimeout time.Duration
	// Logger receives JWKS fetch failures (default slog.Default()).
	Logger *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Resolver resolves the caller of every request (seed 1, 2.2, 3). Build
// it with [New]. A Resolver is safe for concurrent use; Close stops its
// background JWKS refresh.
type Resolver struct {
	verifier    *Verifier
	memo        *memo
	resolvers   []AuthResolver
	secret      bool
	secretKeys  []secretKey
	hmacKey     []byte
	publishable map[string]struct{}
	claims      *ClaimsSchema
	profile     *ClaimsSchema
	cookieName  string
	skew        time.Duration
	now         func() time.Time
	cop         *http.CrossOriginProtection

	// refresh is the seam for the refresh flow (refresh*.go): when set, the
	// cookie path hands it sessions whose token expires within leeway.
	refresh func(r *http.Request, res *Result, sess CookieSession, current Auth) Auth
	leeway  time.Duration
}

type secretKey struct {
	name string
	mac  []byte
}

// refreshSetup is installed by the refresh flow (refresh*.go) to wire
// Config.Refresh into a Resolver.
var refreshSetup func(rv *Resolver, cfg Config) error

// ErrRefreshUnavailable is returned by [New] when Config.Refresh is set
// but this build has no refresh flow.
var ErrRefreshUnavailable = errors.New("authctx: Config.Refresh is set but session refresh is not available in this build")

// New builds a Resolver. It fetches the JWKS once (see [NewVerifier]) and
// fails with an error naming the problem for a bad configuration, e.g.
// [ErrLegacySecret] when only an HS256 secret is configured.
func New(cfg Config) (*Resolver, error) {
	jwksURL := cfg.JWKSURL
	if jwksURL == "" && len(cfg.JWKS) == 0 && cfg.ProjectURL != "" {
		jwksURL = strings.TrimRight(cfg.ProjectURL, "/") + "/auth/v1/.well-known/jwks.json"
	}
	v, err := NewVerifier(VerifierConfig{
		JWKSURL: jwksURL, JWKS: cfg.JWKS, Issuer: cfg.Issuer, Audience: cfg.Audience,
		ClockSkew: cfg.ClockSkew, MaxTokenBytes: cfg.MaxTokenBytes, HTTPClient: cfg.HTTPClient,
		LegacyJWTSecret: cfg.LegacyJWTSecret, Logger: cfg.Logger, Now: cfg.Now,
	})
	if err != nil {
		return nil, err
	}
	rv := &Resolver{
		verifier:  v,
		memo:      newMemo(cfg.MemoSize),
		resolvers: cfg.Resolvers,
		secret:    cfg.Secret,
		claims:    cfg.Claims,
		profile:   cfg.UserMetadata,
		skew:      v.skew,
		now:       v.now,
		cop:       http.NewCrossOriginProtection(),
		leeway:    cfg.Leeway,
	}
	for i, r := range cfg.Resolvers {
		if r == nil {
			v.Close()
			return nil, fmt.Errorf("authctx: Config.Resolvers[%d] is nil", i)
		}
	}
	rv.cookieName = cfg.CookieName
	if rv.cookieName == "" && cfg.ProjectURL != "" {
		name, err := CookieNameFor(cfg.ProjectURL)
		if err != nil {
			v.Close()
			return nil, fmt.Errorf("authctx: Config.ProjectURL: %w", err)
		}
		rv.cookieName = name
	}
	if cfg.Secret {
		if len(cfg.SecretKeys) == 0 {
			v.Close()
			return nil, errors.New("authctx: Config.Secret is on but Config.SecretKeys is empty (set SUPABASE_SECRET_KEYS)")
		}
		rv.hmacKey = make([]byte, 32)
		_, _ = rand.Read(rv.hmacKey)
		names := make([]string, 0, len(cfg.SecretKeys))
		for n := range cfg.SecretKeys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if cfg.SecretKeys[n] == "" {
				v.Close()
				return nil, fmt.Errorf("authctx: secret key %q is empty", n)
			}
			rv.secretKeys = append(rv.secretKeys, secretKey{name: n, mac: rv.mac(cfg.SecretKeys[n])})
		}
	}
	if len(cfg.PublishableKeys) > 0 {
		rv.publishable = make(map[string]struct{}, len(cfg.PublishableKeys))
		for _, k := range cfg.PublishableKeys {
			if k != "" {
				rv.publishable[k] = struct{}{}
			}
		}
	}
	if err := checkCookieOptions(cfg.CookieOptions); err != nil {
		v.Close()
		return nil, fmt.Errorf("authctx: Config.CookieOptions: %w", err)
	}
	for _, o := range cfg.TrustedOrigins {
		if err := rv.cop.AddTrustedOrigin(o); err != nil {
			v.Close()
			return nil, fmt.Errorf("authctx: Config.TrustedOrigins: %w", err)
		}
	}
	if rv.leeway == 0 {
		rv.leeway = 60 * time.Second
	}
	if cfg.Refresh {
		if refreshSetup == nil {
			v.Close()
			return nil, ErrRefreshUnavailable
		}
		if err := refreshSetup(rv, cfg); err != nil {
			v.Close()
			return nil, err
		}
	}
	return rv, nil
}

// checkCookieOptions refuses cookie options that would make the written
// Set-Cookie lines malformed or ignored by browsers.
func checkCookieOptions(o ssrcookie.Options) error {
	if o.Path != "" && o.Path[0] != '/' {
		return fmt.Errorf("Path %q must start with '/'", o.Path)
	}
	if o.SameSite < 0 || o.SameSite > http.SameSiteNoneMode {
		return fmt.Errorf("unknown SameSite value %d", o.SameSite)
	}
	if o.SameSite == http.SameSiteNoneMode && !o.Secure {
		return errors.New("SameSite None requires Secure (browsers drop the cookie otherwise)")
	}
	c := &http.Cookie{Name: "x", Domain: o.Domain, Path: o.Path}
	if err := c.Valid(); err != nil {
		return fmt.Errorf("domain %q or path %q: %w", o.Domain, o.Path, err)
	}
	return nil
}

// Close stops the background JWKS refresh.
func (rv *Resolver) Close() { rv.verifier.Close() }

// Verifier returns the token verifier the resolver uses.
func (rv *Resolver) Verifier() *Verifier { return rv.verifier }

// CookieName returns the session cookie name, "" when the cookie path is off.
func (rv *Resolver) CookieName() string { return rv.cookieName }

func (rv *Resolver) mac(s string) []byte {
	h := hmac.New(sha256.New, rv.hmacKey)
	h.Write([]byte(s))
	return h.Sum(nil)
}

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

// Result is the outcome of resolving one request (seed 2.2).
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

// ResolveAuth resolves the caller of r with rv (seed resolveAuth).
func ResolveAuth(r *http.Request, rv *Resolver) Result { return rv.Resolve(r) }

// Resolve decides who is calling: custom resolvers, then the built-in
// secret apikey check (when Config.Secret), then Authorization: Bearer,
// then the session cookie, else anon/none. A Bearer token that fails
// verification is invalid/token, never anon. It never panics on bad input
// and makes no network call for a valid token with a known kid.
func (rv *Resolver) Resolve(r *http.Request) Result {
	var res Result
	if len(r.Header["Cookie"]) > 0 {
		res.RequestCookies = r.Cookies()
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
	if rv.secret {
		if a, ok := rv.apikey(r); ok {
			res.Source, res.Auth = SourceAPIKey, a
			return res
		}
	}
	if vals := r.Header["Authorization"]; len(vals) > 0 {
		if a, ok := rv.bearer(r.Context(), vals); ok {
			res.Source, res.Auth = SourceBearer, a
			return res
		}
	}
	if rv.cookieName != "" && res.RequestCookies != nil {
		return rv.resolveCookie(r, res)
	}
	res.Source, res.Auth = SourceNone, Anon(ReasonNone)
	return res
}

// resolveCookie is the cookie step of Resolve (kept apart so the hot
// Bearer path does not move its Result to the heap).
func (rv *Resolver) resolveCookie(r *http.Request, res Result) Result {
	sess, ok := requestSession(r, rv.cookieName)
	if !ok {
		res.Source, res.Auth = SourceNone, Anon(ReasonNone)
		return res
	}
	res.Source = SourceCookie
	res.Auth = rv.cookie(r, &res, sess)
	return res
}

// normalize applies the seed's rules to a custom resolver's answer.
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

// apikey is the built-in service resolver: the apikey header compared in
// constant time (HMAC with a per-process key) with every secret key.
func (rv *Resolver) apikey(r *http.Request) (Auth, bool) {
	vals := r.Header["Apikey"]
	if len(vals) == 0 {
		return Auth{}, false
	}
	if len(vals) > 1 {
		return Invalid(ReasonToken, errors.New("authctx: more than one apikey header")), true
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
		return Invalid(ReasonToken, errors.New("authctx: the apikey is not a configured secret key")), true
	}
	return Auth{}, false // a publishable key: not a service credential
}

// bearer handles the Authorization header. ok is false when the header
// carries no user credential (empty, or a publishable key).
func (rv *Resolver) bearer(ctx context.Context, vals []string) (Auth, bool) {
	if len(vals) > 1 {
		return Invalid(ReasonToken, errors.New("authctx: more than one Authorization header")), true
	}
	v := strings.TrimSpace(vals[0])
	if v == "" {
		return Auth{}, false
	}
	scheme, token, found := strings.Cut(v, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return Invalid(ReasonToken, errors.New("authctx: unsupported Authorization scheme (want Bearer)")), true
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return Invalid(ReasonToken, errors.New("authctx: empty Bearer token")), true
	}
	if strings.HasPrefix(token, "sb_") {
		return Auth{}, false
	}
	if _, ok := rv.publishable[token]; ok {
		return Auth{}, false
	}
	a, _ := rv.token(ctx, token)
	return a, true
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
			return a, nil
		}
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
		return Invalid(ReasonToken, fmt.Errorf("%w: sub is missing", ErrTokenClaims))
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
		return Invalid(ReasonToken, fmt.Errorf("%w: sub is empty", ErrTokenClaims))
	}
	a.User.ExpiresAt = exp
	if rv.profile != nil {
		a.User.Profile = parseProfile(rv.profile, claims)
	}
	return a
}

// cookie resolves a session read from the cookie.
func (rv *Resolver) cookie(r *http.Request, res *Result, sess CookieSession) Auth {
	a, err := rv.token(r.Context(), sess.AccessToken)
	now := rv.now()
	expired := errors.Is(err, ErrTokenExpired) ||
		(a.Kind == KindUser && !a.User.ExpiresAt.IsZero() && !now.Before(a.User.ExpiresAt))
	if rv.refresh != nil && (expired || (a.Kind == KindUser && a.User.ExpiresAt.Sub(now) < rv.leeway)) {
		// Claims failures are never refreshed (seed 3).
		if a.Kind != KindInvalid || expired {
			return rv.refresh(r, res, sess, a)
		}
	}
	if expired {
		return Anon(ReasonExpired)
	}
	return a
}

type ctxKey struct{}

// Middleware resolves the caller once, stores the [Result] in the request
// context (read it with [FromContext] or [AuthFrom]), calls Apply before
// next runs, and hands next the cookies of Result.RequestCookies.
func (rv *Resolver) Middleware(next http.Handler) http.Handler {
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
