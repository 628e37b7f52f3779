// Package authctx decides who is calling, for every HTTP request, and
// guards routes by the answer.
//
// # Resolution
//
// A [Resolver] (built with [New] from a [Config], usually from [LoadEnv])
// tries, in order: the custom resolvers of Config.Resolvers ([CustomResolver]),
// the built-in secret apikey check when Config.Secret is on, the
// Authorization: Bearer header, and the @supabase/ssr session cookie. The
// first that answers wins. The outcome is a [Result] holding an [Auth]
// state of one of four kinds:
//
//   - user: a verified signed-in user (anonymous sign-ins too, with claim
//     is_anonymous true), with claims, token and an optional profile;
//   - service: a secret-key or service caller, with a key name;
//   - anon: no usable session (reason none, expired, signed_out,
//     refresh_failed; signed_out after a sign-out by package authflow or a
//     rejected refresh, see [SignedOutCookieName]);
//   - invalid: a credential that must be answered with 401 (reason token,
//     claims or actor). A Bearer token that fails verification is invalid,
//     never downgraded to anon. A publishable key as the Bearer (as
//     supabase-js sends it when signed out), or an sb_ key repeating the
//     apikey header, is no credential; any other sb_ Bearer is invalid.
//
// [Resolver.Middleware] resolves once per request and stores the Result
// in the context ([FromContext], [AuthFrom]); [Guard] and [Admit] admit
// callers by an allow list; [Resolver.CrossSite] refuses cross-site form
// posts that rely on the session cookie.
//
// # Verification
//
// Tokens are verified locally ([Verifier]) against the project's JWKS at
// {project_url}/auth/v1/.well-known/jwks.json or an inline JWKS, fetched
// once and cached with keyfunc, refreshed in the background and, at a
// bounded rate, on an unknown kid. Only ES256, RS256 and EdDSA
// (Ed25519) are accepted; exp
// is required; exp, nbf and iat must be plain numbers in range. They are
// checked with a clock leeway of 30 seconds ([DefaultClockSkew];
// VerifierConfig.ClockSkew changes it): a token is accepted until 30 s
// after its exp, and one whose nbf or iat lies more than 30 s in the
// future is refused. iss must be
// {ProjectURL}/auth/v1 and aud must hold "authenticated" unless
// Config.Issuer, Config.Audience say otherwise or [Config.AnyIssuer],
// [Config.AnyAudience] opt out; MaxTokenLifetime optionally
// bounds a token's lifetime. Tokens are
// capped in size and pre-parsed before any key work. A
// legacy HS256 secret has no public key: configuring only that fails with
// [ErrLegacySecret], and an HS256 token is refused.
//
// A refused token's error is a [*TokenError]: a stable code naming the
// cause (TOKEN_EXPIRED, TOKEN_NOT_YET_VALID, TOKEN_ISSUER_MISMATCH,
// TOKEN_AUDIENCE_MISMATCH, TOKEN_UNKNOWN_KEY, TOKEN_SIGNATURE_INVALID,
// TOKEN_ALGORITHM_NOT_ACCEPTED, TOKEN_MALFORMED, else TOKEN_INVALID) and a
// detail saying what to do ("The token expired 3m12s ago; the clock
// leeway is 30s. …"). [Admit] answers with both, [Auth.Cause] gives the
// code for logs; the state's reason stays "token". Neither holds the
// token, a key or a claim value besides the received issuer or audience.
//
// Verified tokens are remembered until exp in a bounded, sharded LRU
// keyed by a hash of the token, so a valid token costs no network call
// and, on a memo hit, no signature check and no allocation. The memo
// holds the state after the claims schema, so the schema applies to memo
// hits exactly as to fresh verifications.
//
// # Claims
//
// A [ClaimsSchema] ([ClaimsOf] a Go type, [ClaimsJSONSchema] a JSON
// Schema, or [StandardClaimsSchema]) types the claims. Its output is
// merged over the payload one level deep; failures give invalid/claims
// with code CLAIMS_INVALID naming the failing paths, never values.
// [TypedClaims] decodes the merged claims into a Go type. Roles and
// memberships are never read from user_metadata; Config.UserMetadata
// parses it into a display-only profile ([ProfileAs]).
//
// The act claim (RFC 8693 delegation) must be a chain of objects with a
// string sub, at most [MaxActorDepth] deep, else invalid/actor.
//
// # The caller model
//
// [Auth] is the one caller type: its [Kind] (user, service, anon or
// invalid), the [Reason] of an anon or invalid state, the verified [User]
// (id, claims, token, expiry, profile), the key name of a service, and the
// error of an invalid state. Packages rest, events, authz, plugin and
// mcptools hand it to hooks, authorizers and plugins. Two views derive
// from it: [Auth.Actor], who acts as events, MCP tools and audit records
// expose it ({"type","id","anonymous"}), and [Auth.DBCaller], exactly what
// the db package binds into each unit of work — the verified claims JSON
// and the role its role claim names, built once per verified token.
//
// The claims of a resolved state are shared by every request presenting
// the same token (the verification memo hands out the same [User]): never
// modify them. [Auth.Clone] and [Claims.Clone] return deep copies; rest
// hands hooks such a copy, and the database still runs with the verified
// claims.
//
// # Session cookies
//
// The cookie path reads the session written by @supabase/ssr (name
// sb-<first host label>-auth-token, "base64-" values, .0/.1 chunks,
// legacy plain JSON) through package ssrcookie, exactly as the JavaScript
// client reads the same Cookie header: [ssrcookie.HeaderCookies] splits
// the header like cookie@1.1.1 (net/http drops the legacy JSON values),
// [ssrcookie.Read] joins and decodes the chunks, and
// [ssrcookie.LoadSession] applies auth-js's session check. A session
// the JavaScript client would not load is no credential (anon/none); one
// it would load whose token does not verify is invalid/token. With
// refresh off an expired
// token resolves to anon/expired; an unexpired one stays a user until
// exp. Session refresh plugs in at the cookie path and writes through
// [Result.Apply].
package authctx
