package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/rs/cors"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// CORSConfig is serve's cross-origin resource sharing: which browser pages
// of other origins may call the API. Credentials are never allowed across
// origins, so such a page calls with a Bearer token or an apikey, never
// with the session cookie (which keeps the cookie path's cross-site check
// the only way a cookie counts).
type CORSConfig struct {
	// AllowedOrigins lists the origins whose pages may call the API
	// ("https://app.example.com"), or ["*"] for any page.
	AllowedOrigins []string `json:"allowed_origins"`
	// MaxAge is how long a browser may reuse a preflight answer
	// (default 10m; browsers cap it, Chromium at 2h).
	MaxAge Duration `json:"max_age,omitempty"`
}

// defaultCORSMaxAge is CORSConfig.MaxAge's default.
const defaultCORSMaxAge = 10 * time.Minute

// validate checks the origins (each an origin, or "*" alone) and
// normalizes them, and bounds max_age.
func (c *CORSConfig) validate() error {
	if len(c.AllowedOrigins) == 0 {
		return errors.New(`cors.allowed_origins is empty: list the origins whose pages may call the API, e.g. ["https://app.example.com"], or ["*"]`)
	}
	for i, o := range c.AllowedOrigins {
		if o == "*" {
			if len(c.AllowedOrigins) > 1 {
				return errors.New(`cors.allowed_origins: "*" allows every origin; list it alone`)
			}
			continue
		}
		n, err := corsOrigin(o)
		if err != nil {
			return fmt.Errorf("cors.allowed_origins[%d]: %w", i, err)
		}
		c.AllowedOrigins[i] = n
	}
	if d := time.Duration(c.MaxAge); d > 0 && d < time.Second {
		return fmt.Errorf("cors.max_age %s is below 1s, the unit browsers cache preflights in", d)
	}
	return nil
}

// corsOrigin returns v as browsers send it in the Origin header —
// scheme://host[:port], host in lower case, no default port — or an error
// for anything that is not one origin: a pattern ("*" matches only
// alone), a percent-escape (an IPv6 zone would decode one into a pattern),
// a path, query or fragment, user info, a trailing dot, an empty port, or
// a host that is not ASCII (browsers send the punycode form).
func corsOrigin(v string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%q is not an origin such as https://app.example.com: %s", v, why)
	}
	if strings.ContainsAny(v, "*#?%") {
		return bad(`no patterns, escapes, query or fragment ("*" alone allows every origin)`)
	}
	u, err := url.Parse(strings.TrimSuffix(v, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Opaque != "" || u.Host == "" {
		return bad("want http(s)://host[:port]")
	}
	if u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return bad("no user info or path")
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if host == "" || strings.HasSuffix(host, ".") || strings.HasSuffix(u.Host, ":") {
		return bad("no trailing dot or empty port")
	}
	for _, r := range host {
		if r > unicode.MaxASCII {
			return bad("write the host in its ASCII (punycode) form, as browsers send it")
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port == "" || (u.Scheme == "https" && port == "443") || (u.Scheme == "http" && port == "80") {
		return u.Scheme + "://" + host, nil
	}
	return u.Scheme + "://" + host + ":" + port, nil
}

// corsHandler answers preflight requests for the configured origins
// (before authentication: a preflight carries no credentials) and adds the
// CORS response headers to the others.
func corsHandler(c *CORSConfig, h http.Handler) http.Handler {
	maxAge := time.Duration(c.MaxAge)
	if maxAge == 0 {
		maxAge = defaultCORSMaxAge
	}
	return cors.New(cors.Options{
		AllowedOrigins: c.AllowedOrigins,
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		// What supabase-js (the data API's Prefer, Range and profiles
		// too), fetch-based clients, event streams, MCP clients and trace
		// propagation send.
		AllowedHeaders: []string{"Authorization", "Apikey", "Content-Type", "Accept", "X-Client-Info", "X-Request-Id",
			"If-None-Match", "Last-Event-Id", "Mcp-Session-Id", "Mcp-Protocol-Version", "Traceparent", "Tracestate", "Baggage",
			"Prefer", "Range", "Range-Unit", "Accept-Profile", "Content-Profile", "Tablegate-Position"},
		// What a client reads besides the simple response headers
		// (supabase-js reads counts from Content-Range).
		ExposedHeaders: []string{"Location", "Retry-After", "Allow", "ETag", "X-Request-Id", "WWW-Authenticate",
			"Mcp-Session-Id", "Content-Disposition", "Content-Range", "Preference-Applied", "Tablegate-Position"},
		MaxAge:           int(maxAge / time.Second),
		AllowCredentials: false,
	}).Handler(h)
}

// refuseBrowserServices refuses service callers (a secret key, or a
// service_role token) on requests from browser pages (with an Origin
// header): a key in a page is readable by every visitor, who would act as
// the service with row-level security bypassed. It runs after the
// resolver, so it knows every form a service credential takes.
func refuseBrowserServices(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header.Values("Origin")) > 0 && authctx.AuthFrom(r.Context()).Kind == authctx.KindService {
			p := problem.New(problem.KindForbidden, "A secret key or service token must not be sent from a browser page: call with the user's token or the publishable key.")
			p.Code = problem.CodeCallerNotAllowed
			problem.Write(w, p)
			return
		}
		h.ServeHTTP(w, r)
	})
}
