package authflow

import (
	"net/url"
	"strings"
)

// maxRedirectBytes bounds a next/redirect_to value.
const maxRedirectBytes = 2048

// SafeRedirect returns where a next (or redirect_to) value may send the
// browser: a path on this site ("/account?tab=2", made absolute under
// SiteURL's path), or an absolute http(s) URL under SiteURL or one of
// Config.RedirectURLs (same scheme and host, path below the allowed one).
// Anything else — another host, "//host", "/\host", a scheme other than
// http(s), userinfo, control characters or backslashes, "." or ".." path
// segments (also percent-encoded), more than 2 KiB — gives "/" under
// SiteURL and ok false.
func (f *Flows) SafeRedirect(next string) (target string, ok bool) {
	home := f.site.String() + "/"
	if next == "" {
		return home, false
	}
	if len(next) > maxRedirectBytes || strings.ContainsAny(next, "\\") {
		return home, false
	}
	for i := 0; i < len(next); i++ {
		if next[i] < 0x21 || next[i] == 0x7f {
			return home, false
		}
	}
	u, err := url.Parse(next)
	if err != nil || u.User != nil || u.Opaque != "" || hasDotSegment(u.Path) {
		return home, false
	}
	if u.Scheme == "" && u.Host == "" {
		if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
			return home, false
		}
		rel := &url.URL{Scheme: f.site.Scheme, Host: f.site.Host, Path: strings.TrimRight(f.site.Path, "/") + u.Path,
			RawQuery: u.RawQuery, Fragment: u.Fragment}
		return rel.String(), true
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return home, false
	}
	for _, a := range f.allowed {
		if strings.EqualFold(u.Scheme, a.Scheme) && strings.EqualFold(u.Host, a.Host) && underPath(u.Path, a.Path) {
			return u.String(), true
		}
	}
	return home, false
}

// hasDotSegment reports whether the decoded path p holds a "." or ".."
// segment ("%2e" decodes to "."): a browser resolves them, so
// "/console/../other" would leave the allowed path "/console".
func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// underPath reports whether p is base or below it ("" and "/" allow all).
func underPath(p, base string) bool {
	base = strings.TrimRight(base, "/")
	if base == "" {
		return true
	}
	return p == base || strings.HasPrefix(p, base+"/")
}

// callbackWith returns the callback URL carrying next (when safe and not
// "/") and the flow id.
func (f *Flows) callbackWith(next, flowID string) string {
	q := url.Values{}
	if t, ok := f.SafeRedirect(next); ok && next != "/" {
		q.Set("next", t)
	}
	if flowID != "" {
		q.Set(FlowIDParam, flowID)
	}
	u := f.CallbackURL()
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}
