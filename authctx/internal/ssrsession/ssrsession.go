// Package ssrsession reads the @supabase/ssr session cookie and writes the
// sign-out marker, for packages authctx and authctx/authflow.
package ssrsession

import (
	"encoding/json"
	"net/http"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// Cookie is the part of an @supabase/ssr session cookie that
// caller resolution reads. The full session JSON is kept in Raw for the
// refresh flow.
type Cookie struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	// ExpiresAt is the session's expires_at (Unix seconds, fractions
	// truncated), 0 when it is not a number.
	ExpiresAt int64 `json:"expires_at"`
	// Raw is the decoded session JSON.
	Raw json.RawMessage `json:"-"`
	// Chunked reports whether the value came from .N chunks.
	Chunked bool `json:"-"`
}

// Read reads the session stored under name in the
// @supabase/ssr format from cookies: [ssrcookie.Read] combines the chunks
// (a non-empty cookie named exactly name wins, otherwise name.0, name.1, …
// up to the first missing one) and decodes the "base64-" or legacy
// plain-JSON value, then [ssrcookie.LoadSession] checks it is a session
// the way auth-js getSession does. ok is false when no cookie is present,
// the value does not decode, or it is not a JSON object with the keys
// access_token, refresh_token and expires_at; the JavaScript client
// treats all of these as signed out too. ok is true for a session whose
// access_token is not a string: AccessToken is then empty, and the
// authctx Resolver answers invalid/token as for any token that does not verify.
// It never panics, whatever the input (fuzzed through Resolve).
//
// The cookies of [http.Request.Cookies] can be passed, but net/http drops
// or alters a few values that @supabase/ssr reads (see
// [ssrcookie.HeaderCookies]); the Resolver reads the Cookie header the
// JavaScript way.
func Read(cookies []*http.Cookie, name string) (Cookie, bool) {
	if name == "" {
		return Cookie{}, false
	}
	raw, err := ssrcookie.Read(cookies, name)
	if err != nil {
		return Cookie{}, false
	}
	s, err := ssrcookie.LoadSession(raw)
	if err != nil {
		return Cookie{}, false
	}
	return Cookie{
		AccessToken:  s.AccessToken,
		RefreshToken: s.RefreshToken,
		ExpiresAt:    s.ExpiresAt,
		Raw:          raw,
		Chunked:      !hasBareValue(cookies, name),
	}, true
}

// hasBareValue reports whether the first cookie named exactly name has a
// value, the case in which ssrcookie.Read ignores the chunks.
func hasBareValue(cookies []*http.Cookie, name string) bool {
	for _, c := range cookies {
		if c != nil && c.Name == name {
			return c.Value != ""
		}
	}
	return false
}

// SignedOutName returns the name of the sign-out marker cookie that goes
// with a session cookie name (see authctx.SignedOutCookieName).
func SignedOutName(sessionCookie string) string { return sessionCookie + "-signed-out" }

// SignedOutMarker returns the Set-Cookie of the sign-out marker for a
// session cookie name, with the session cookie's options (HttpOnly
// always, no Max-Age).
func SignedOutMarker(sessionCookie string, opts ssrcookie.Options) *http.Cookie {
	return markerCookie(sessionCookie, opts, "1", 0)
}

// ClearSignedOutMarker returns the delete of the sign-out marker, or nil
// when the request cookies do not carry it.
func ClearSignedOutMarker(sessionCookie string, request []*http.Cookie, opts ssrcookie.Options) *http.Cookie {
	if !Has(request, SignedOutName(sessionCookie)) {
		return nil
	}
	return markerCookie(sessionCookie, opts, "", -1)
}

// markerCookie is the marker cookie with value and Max-Age.
func markerCookie(sessionCookie string, opts ssrcookie.Options, value string, maxAge int) *http.Cookie {
	path := opts.Path
	if path == "" {
		path = "/"
	}
	ss := opts.SameSite
	if ss == 0 {
		ss = http.SameSiteLaxMode
	}
	return &http.Cookie{Name: SignedOutName(sessionCookie), Value: value, Path: path, Domain: opts.Domain,
		Secure: opts.Secure, HttpOnly: true, SameSite: ss, MaxAge: maxAge}
}

// Has reports whether cookies hold one named name.
func Has(cookies []*http.Cookie, name string) bool {
	for _, c := range cookies {
		if c != nil && c.Name == name {
			return true
		}
	}
	return false
}
