package authctx

import (
	"net/http"

	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// CookieNameFor returns the @supabase/ssr cookie name for a project URL:
// "sb-" + the first DNS label of the host + "-auth-token"
// (https://abc.supabase.co → sb-abc-auth-token, http://127.0.0.1:54321 →
// sb-127-auth-token). It is [ssrcookie.Name] and fails like it when
// projectURL is not an absolute http(s) URL with a host.
func CookieNameFor(projectURL string) (string, error) {
	return ssrcookie.Name(projectURL)
}

// requestSession reads the session cookie of r from its Cookie header as
// @supabase/ssr's parseCookieHeader would split it.
func requestSession(r *http.Request, name string) (ssrsession.Cookie, bool) {
	return ssrsession.Read(ssrcookie.HeaderCookies(r.Header["Cookie"], name), name)
}
