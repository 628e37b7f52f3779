package authctx

import (
	"net/http"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/telemetry"
)

// CustomResolver resolves callers by a credential of your own, tried
// before the secret apikey, Bearer and
// cookie. Resolve returns a state and true when the request carries a
// credential it understands, and false otherwise; the first resolver that
// answers wins and nothing after it is consulted. A returned user still
// goes through the claims schema; an invalid state without a reason
// counts as reason token.
type CustomResolver interface {
	Name() string
	Resolve(r *http.Request) (Auth, bool)
}

// ResolverFunc adapts a function to an [CustomResolver].
func ResolverFunc(name string, fn func(r *http.Request) (Auth, bool)) CustomResolver {
	return resolverFunc{name: name, fn: fn}
}

type resolverFunc struct {
	name string
	fn   func(r *http.Request) (Auth, bool)
}

func (f resolverFunc) Name() string                         { return f.name }
func (f resolverFunc) Resolve(r *http.Request) (Auth, bool) { return f.fn(r) }

// Config configures a [Resolver]. Build one from the environment with
// [LoadEnv] and [Env.Config], then override fields in Go. [New] reads it
// once; changing it afterwards has no effect.
type Config struct {
	// ProjectURL is the Supabase project URL (SUPABASE_URL). It derives
	// the JWKS URL ({ProjectURL}/auth/v1/.well-known/jwks.json, unless
	// JWKSURL or JWKS is set) and the session cookie name.
	ProjectURL string
	// VerifierConfig configures token verification: the JWKS (JWKSURL, or
	// inline JWKS: with JWKS set and JWKSURL empty no JWKS is fetched at
	// all), ClockSkew (exp, nbf and iat), MaxTokenLifetime, MaxTokenBytes,
	// the JWKS refresh (RefreshInterval, UnknownKIDRefreshEvery),
	// HTTPClient (also used to refresh sessions), LegacyJWTSecret, Logger
	// and Now. Its Issuer and Audience mean more here: an empty Issuer
	// means {ProjectURL}/auth/v1 (what Supabase Auth writes) when
	// ProjectURL is set, and an empty Audience means DefaultAudience
	// ("authenticated", the aud of Supabase user and anonymous sign-in
	// tokens); see [Config.CheckedIssuer] and [Config.CheckedAudience].
	VerifierConfig
	// AnyIssuer turns the iss check off (an explicit opt-out; the default
	// derives the issuer from ProjectURL).
	AnyIssuer bool
	// AnyAudience turns the aud check off (an explicit opt-out).
	AnyAudience bool
	// Resolvers are tried first, in order.
	Resolvers []CustomResolver
	// Secret turns on the built-in service resolver: an apikey header equal
	// (constant-time) to one of SecretKeys resolves to service with that
	// key's name — unless an Authorization header carries a user's token
	// (anything but a Bearer sb_ key): then, as at Supabase's gateway, the
	// token decides (a user, or invalid), so a server may act for a user
	// under the user's row-level security. A verified service_role JWT
	// without sub is also service.
	Secret bool
	// SecretKeys maps key names to secret keys (SUPABASE_SECRET_KEYS).
	SecretKeys map[string]string
	// PublishableKeys are the project's publishable/anon keys. A Bearer
	// equal to one of them (supabase-js sends it when signed out), any
	// sb_publishable_ key, or an sb_ key repeating the apikey header is
	// not a user credential and counts as absent; another Bearer starting
	// with "sb_" (a secret key without the apikey header, an unknown key)
	// is invalid.
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
	// MemoSize bounds the verification memo (default DefaultMemoSize;
	// negative disables it).
	MemoSize int
	// MemoBytes bounds the memory the memo holds (default
	// DefaultMemoBytes, 64 MiB; negative disables the memo). Each entry is
	// counted as its token, about three times its claims JSON (the JSON
	// and the decoded map) and a fixed overhead, so a burst of large
	// tokens (up to MaxTokenBytes each) evicts entries instead of growing
	// the heap.
	MemoBytes int64
	// Refresh turns on session refresh on the cookie path: a session whose
	// access token has expired, or expires within Leeway (default
	// DefaultLeeway), is refreshed at the auth server (ProjectURL, with the
	// first of PublishableKeys as apikey), each call bounded by
	// RefreshTimeout. See docs/refresh.md.
	Refresh        bool
	Leeway         time.Duration
	RefreshTimeout time.Duration
	// RefreshWait bounds how long a request whose access token is still
	// valid (inside Leeway) waits for its session's refresh (default
	// DefaultRefreshWait, 250 ms; negative: not at all). A refresh that
	// takes longer finishes in the background and its outcome reaches the
	// session's next request (kept RefreshHandoffTTL); later requests do
	// not wait for a refresh known to be slow. Failed refreshes are
	// remembered with backoff (RefreshBackoffMin..RefreshBackoffMax, or
	// the server's Retry-After on 429/503), during which no call is made.
	RefreshWait time.Duration
	// Telemetry receives a span and a count per resolution, memo hits and
	// misses, and a span per JWKS fetch and refresh call (which carries
	// the request's traceparent). Nil records nothing.
	Telemetry *telemetry.Telemetry
}

// DefaultAudience is the audience a [Resolver] requires unless configured
// otherwise: the aud claim of Supabase Auth's user and anonymous sign-in
// tokens.
const DefaultAudience = "authenticated"

// CheckedIssuer returns the issuer a Resolver built from cfg requires of
// every token: Issuer, else {ProjectURL}/auth/v1, "" when none is known or
// AnyIssuer is set.
func (cfg Config) CheckedIssuer() string {
	switch {
	case cfg.AnyIssuer:
		return ""
	case cfg.Issuer != "":
		return cfg.Issuer
	case cfg.ProjectURL != "":
		return strings.TrimRight(cfg.ProjectURL, "/") + "/auth/v1"
	}
	return ""
}

// CheckedAudience returns the audience a Resolver built from cfg requires
// of every token: Audience, else DefaultAudience; "" when AnyAudience is
// set.
func (cfg Config) CheckedAudience() string {
	switch {
	case cfg.AnyAudience:
		return ""
	case cfg.Audience != "":
		return cfg.Audience
	}
	return DefaultAudience
}
