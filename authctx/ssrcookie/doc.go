// Package ssrcookie reads and writes the browser session cookie in the
// exact format of @supabase/ssr 0.12.7 (createServerClient with the default
// cookieEncoding "base64url"), so that a Go server and a JavaScript client
// can share one session.
//
// # Format
//
// The cookie name is the auth storage key, "sb-<first DNS label of the
// project host>-auth-token" ([Name]). The value is "base64-" followed by the
// base64url encoding (RFC 4648 §5, no padding) of the session JSON exactly as
// auth-js stores it (JSON.stringify of the GoTrue token response). A value
// longer than [MaxChunkSize] characters, prefix included, is split into
// cookies "<name>.0", "<name>.1", …; only ".0" carries the prefix.
//
// [Read] combines the chunks the way combineChunks does (a non-empty bare
// cookie wins; otherwise ".0", ".1", … up to the first gap), decodes the
// value, and treats anything undecodable as absent ([ErrNoSession]), as the
// JavaScript client does. Values without the "base64-" prefix are the legacy
// raw-JSON format and are returned as they are. [HeaderCookies] splits a
// raw Cookie header the way the JavaScript cookie parser does, for the few
// values net/http reads differently. [LoadSession] accepts what auth-js
// getSession loads; [ParseSession] also wants usable tokens.
//
// [Write] and [Clear] return the Set-Cookie cookies that applyServerStorage
// would pass to setAll, in the same order: host-only deletes (only when a
// Domain is configured), deletes of every chunk-like request cookie the new
// value no longer uses, then the chunks whose value changed. They also
// return the cookie list the rest of the request must see. [Serialize]
// renders a cookie as a Set-Cookie line byte-for-byte like the cookie@1.1.1
// serializer that @supabase/ssr uses, and [CacheHeaders] are the response
// headers that must accompany every write.
//
// # Limits
//
// [Read] bounds its work: at most [MaxChunks] chunks and [MaxValueBytes]
// bytes of combined value; a larger session reads as absent.
//
// All functions are safe for concurrent use; none keeps state.
package ssrcookie
