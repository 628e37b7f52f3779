package authctx

import (
	"net/http"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

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
func SignedOutCookieName(sessionCookie string) string { return sessionCookie + "-signed-out" }

// SignedOutMarker returns the Set-Cookie of the sign-out marker for a
// session cookie name, with the session cookie's options (HttpOnly
// always, no Max-Age).
func SignedOutMarker(sessionCookie string, opts ssrcookie.Options) *http.Cookie {
	return markerCookie(sessionCookie, opts, "1", 0)
}

// ClearSignedOutMarker returns the delete of the sign-out marker, or nil
// when the request cookies do not carry it.
func ClearSignedOutMarker(sessionCookie string, request []*http.Cookie, opts ssrcookie.Options) *http.Cookie {
	if !hasCookie(request, SignedOutCookieName(sessionCookie)) {
		return nil
	}
	return markerCookie(sessionCookie, opts, "", -1)
}

func markerCookie(sessionCookie string, opts ssrcookie.Options, value string, maxAge int) *http.Cookie {
	path := opts.Path
	if path == "" {
		path = "/"
	}
	ss := opts.SameSite
	if ss == 0 {
		ss = http.SameSiteLaxMode
	}
	return &http.Cookie{Name: SignedOutCookieName(sessionCookie), Value: value, Path: path, Domain: opts.Domain,
		Secure: opts.Secure, HttpOnly: true, SameSite: ss, MaxAge: maxAge}
}

func hasCookie(cookies []*http.Cookie, name string) bool {
	for _, c := range cookies {
		if c != nil && c.Name == name {
			return true
		}
	}
	return false
}
