// Package authflow starts and ends Supabase sessions from a Go server:
// password sign-in (email or phone), one-time passwords and magic links
// (send, verify by token_hash+type or by code), OAuth with PKCE (start and
// callback) and sign-out (scope local, global or others). It calls the
// auth server (GoTrue) exactly as @supabase/auth-js 2.119 does and writes
// the session in the @supabase/ssr 0.12 cookie format with the same
// writer the refresh of package authctx uses, so a session started here is
// read by createServerClient and createBrowserClient, and a PKCE flow
// started by either side can be finished by the other.
//
// # Building
//
// [New] takes a [Config]: the project URL and publishable key (the
// auth server's gateway requires the key), the session cookie name and
// options (defaults as authctx derives them), the site URL the callback
// lives on and the other URLs a user may be sent back to, and the time
// bound of every auth call (default [DefaultTimeout]). A [Flows] is safe
// for concurrent use.
//
// # Calls and handlers
//
// Each flow is a method taking the response writer and the request: it
// checks the request is not a cross-site post (like every cookie write in
// tablegate: [http.CrossOriginProtection] plus Config.TrustedOrigins),
// calls the auth server with a deadline, and writes Set-Cookie lines and
// the no-store cache headers on success. Errors are always
// *[problem.Problem] values mapped from the auth server's error codes (see
// [Flows.Problem]); they never contain a password, token, code or
// verifier. [Flows.Handler] serves the routes a server-rendered app needs
// (POST sign-in, POST otp, GET oauth start, GET callback, POST sign-out).
//
// # Limits on guessing
//
// [Flows.SignInWithPassword], [Flows.SendOTP] and [Flows.VerifyOTP] count
// each attempt against its email address or phone number, whether an
// account has it or not, and against the client address
// (Config.AttemptsPerAccount, default [DefaultAttemptsPerAccount];
// Config.AttemptsPerAddress, default [DefaultAttemptsPerAddress]; per
// [DefaultAttemptWindow]). Past a limit they answer 429 AUTH_RATE_LIMITED
// with Retry-After until the window ends, without calling the auth server.
// Successful sign-ins do not count. The client address is the
// connection's unless Config.TrustedProxyHeader names the header a proxy
// in front sets.
//
// # PKCE verifier cookies
//
// [Flows.StartOAuth] and [Flows.SendOTP] (email) store the code verifier
// where auth-js 2.119 stores it: the per-flow slot
// <name>-flow-<flow id>-code-verifier, the index <name>-flows-code-verifier
// (at most five pending flows, oldest evicted), and the legacy
// <name>-code-verifier mirroring the newest flow; the redirect URL carries
// sb_flow_id. The callback reads only the slot of the sb_flow_id it
// receives, else the legacy slot — as auth-js does — and clears what it
// used whatever the outcome.
//
// # Encodings
//
// Config.TokensOnly writes the @supabase/ssr 0.12 cookies.encode
// "tokens-only" value (the session without its user object); reading
// accepts both encodings whatever the setting.
//
// # Redirect targets
//
// A next (or redirect_to) parameter is followed only when it is a path on
// the site ("/account", never "//host" or "/\host") or an absolute URL
// under Config.SiteURL or one of Config.RedirectURLs; anything else falls
// back to "/". No open redirect is possible through the callback or the
// sign-out route.
//
// # anon/signed_out
//
// [Flows.SignOut] sets authctx's sign-out marker cookie; the resolver then
// reports anon with reason signed_out for the following requests (see
// [authctx.SignedOutCookieName] for exactly when each reason appears).
package authflow
