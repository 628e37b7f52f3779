package authctx

import (
	"encoding/json"
	"net/http"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// CookieSession is the part of an @supabase/ssr session cookie that
// caller resolution reads. The full session JSON is kept in Raw for the
// refresh flow.
type CookieSession struct {
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

// CookieNameFor returns the @supabase/ssr cookie name for a project URL:
// "sb-" + the first DNS label of the host + "-auth-token"
// (https://abc.supabase.co → sb-abc-auth-token, http://127.0.0.1:54321 →
// sb-127-auth-token). It is [ssrcookie.Name] and fails like it when
// projectURL is not an absolute http(s) URL with a host.
func CookieNameFor(projectURL string) (string, error) {
	return ssrcookie.Name(projectURL)
}

// ReadSessionCookie reads the session stored under name in the
// @supabase/ssr format from cookies: [ssrcookie.Read] combines the chunks
// (a non-empty cookie named exactly name wins, otherwise name.0, name.1, …
// up to the first missing one) and decodes the "base64-" or legacy
// plain-JSON value, then [ssrcookie.LoadSession] checks it is a session
// the way auth-js getSession does. ok is false when no cookie is present,
// the value does not decode, or it is not a JSON object with the keys
// access_token, refresh_token and expires_at; the JavaScript client
// treats all of these as signed out too. ok is true for a session whose
// access_token is not a string: AccessToken is then empty, and the
// Resolver answers invalid/token as for any token that does not verify.
// It never panics, whatever the input (fuzzed through Resolve).
//
// The cookies of [http.Request.Cookies] can be passed, but net/http drops
// or alters a few values that @supabase/ssr reads (see
// [ssrcookie.HeaderCookies]); the Resolver reads the Cookie header the
// JavaScript way.
func ReadSessionCookie(cookies []*http.Cookie, name string) (CookieSession, bool) {
	if name == "" {
		return CookieSession{}, false
	}
	raw, err := ssrcookie.Read(cookies, name)
	if err != nil {
		return CookieSession{}, false
	}
	s, err := ssrcookie.LoadSession(raw)
	if err != nil {
		return CookieSession{}, false
	}
	return CookieSession{
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

// requestSession reads the session cookie of r from its Cookie header as
// @supabase/ssr's parseCookieHeader would split it.
func requestSession(r *http.Request, name string) (CookieSession, bool) {
	return ReadSessionCookie(ssrcookie.HeaderCookies(r.Header["Cookie"], name), name)
}
