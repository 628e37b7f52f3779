package main

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rs/cors"
)

// corsConfig is serve's cross-origin resource sharing: which browser pages
// of other origins may call the API. Credentials are never allowed across
// origins, so such a page calls with a Bearer token or an apikey, never
// with the session cookie (which keeps the cookie path's cross-site check
// the only way a cookie counts).
type corsConfig struct {
	// AllowedOrigins lists the origins whose pages may call the API
	// ("https://app.example.com"), or ["*"] for any page.
	AllowedOrigins []string `json:"allowed_origins"`
	// MaxAge is how long a browser may reuse a preflight answer
	// (default 10m; browsers cap it, Chromium at 2h).
	MaxAge duration `json:"max_age,omitempty"`
}

// defaultCORSMaxAge is corsConfig.MaxAge's default.
const defaultCORSMaxAge = 10 * time.Minute

// validate checks the origins (each an origin, or "*" alone) and
// normalizes them.
func (c *corsConfig) validate() error {
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
		n, err := originOf(fmt.Sprintf("cors.allowed_origins[%d]", i), o)
		if err != nil {
			return err
		}
		c.AllowedOrigins[i] = n
	}
	return nil
}

// corsHandler answers preflight requests for the configured origins
// (before authentication: a preflight carries no credentials) and adds the
// CORS response headers to the others.
func corsHandler(c *corsConfig, h http.Handler) http.Handler {
	maxAge := time.Duration(c.MaxAge)
	if maxAge == 0 {
		maxAge = defaultCORSMaxAge
	}
	return cors.New(cors.Options{
		AllowedOrigins: c.AllowedOrigins,
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		// What supabase-js, fetch-based clients, event streams, MCP
		// clients and trace propagation send.
		AllowedHeaders: []string{"Authorization", "Apikey", "Content-Type", "Accept", "X-Client-Info", "X-Request-Id",
			"If-None-Match", "Last-Event-Id", "Mcp-Session-Id", "Mcp-Protocol-Version", "Traceparent", "Tracestate", "Baggage"},
		// What a client reads besides the simple response headers.
		ExposedHeaders: []string{"Location", "Retry-After", "Allow", "ETag", "X-Request-Id", "WWW-Authenticate",
			"Mcp-Session-Id", "Content-Disposition"},
		MaxAge:           int(maxAge / time.Second),
		AllowCredentials: false,
	}).Handler(h)
}
