package authctx

import "github.com/tablegate/tablegate/authctx/internal/ssrsession"

// SignedOutCookieName returns the name of the sign-out marker cookie that
// goes with a session cookie name.
//
// A browser whose session was ended by tablegate carries a marker cookie,
// <session cookie name>-signed-out (value "1", HttpOnly, a browser-session
// cookie without Max-Age, the session cookie's Path/Domain/Secure/SameSite).
// The cookie path resolves a request as anon with reason
// signed_out when it carries no session the JavaScript client would load
// and it does carry the marker. Exactly:
//
//   - the response of a sign-out (authflow's SignOut, scope local or
//     global) deletes every session chunk and sets the marker: the
//     requests that follow resolve as anon/signed_out until the browser
//     closes or a new session is written;
//   - the request whose refresh the auth server rejects (refresh token
//     not found, already used, session revoked or expired) resolves as
//     anon/signed_out, its response deletes the session chunks and sets
//     the marker, and the requests that follow resolve as anon/signed_out
//     too;
//   - a sign-in by tablegate (authflow) deletes the marker. A session
//     written by the JavaScript client wins over the marker (it is only
//     read when no session is present), and a sign-out done only by the
//     JavaScript client sets no marker: those requests are anon/none.
//
// The marker is not a credential: it carries no identity, and forging or
// deleting it only changes the reason reported for a caller who has no
// session anyway.
func SignedOutCookieName(sessionCookie string) string { return ssrsession.SignedOutName(sessionCookie) }
