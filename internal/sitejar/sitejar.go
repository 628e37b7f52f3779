// Package sitejar keeps a browser's cookies for one site, for tests of
// cookie sessions: it applies Set-Cookie lines as a browser does and builds
// same-origin requests that carry the cookies. A cookie list is a plain
// []*http.Cookie of names and values, in the order they were set.
package sitejar

import (
	"net/http"
	"net/http/httptest"
)

// Set applies one cookie write to cookies as a browser does: it replaces
// the cookie of the same name, or deletes it when c has no value or a
// Max-Age of zero or less (c.MaxAge < 0). It returns the new list and
// leaves cookies unchanged.
func Set(cookies []*http.Cookie, c *http.Cookie) []*http.Cookie {
	out := make([]*http.Cookie, 0, len(cookies)+1)
	for _, k := range cookies {
		if k.Name != c.Name {
			out = append(out, k)
		}
	}
	if c.MaxAge >= 0 && c.Value != "" {
		out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
	}
	return out
}

// Apply applies the Set-Cookie lines of a response header to cookies,
// in order, with [Set].
func Apply(cookies []*http.Cookie, h http.Header) []*http.Cookie {
	for _, c := range (&http.Response{Header: h}).Cookies() {
		cookies = Set(cookies, c)
	}
	return cookies
}

// Names returns the names of cookies, in order.
func Names(cookies []*http.Cookie) []string {
	out := make([]string, len(cookies))
	for i, c := range cookies {
		out[i] = c.Name
	}
	return out
}

// Request builds a server-side request to target (an absolute URL) that a
// page of the same site sends (Sec-Fetch-Site: same-origin), carrying
// cookies.
func Request(method, target string, cookies []*http.Cookie) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	for _, c := range cookies {
		r.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	return r
}
