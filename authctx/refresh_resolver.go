package authctx

import (
	"context"
	"net/http"

	"github.com/tablegate/tablegate/authctx/internal/gotrue"
	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// This file wires the refresh flow (refresh.go) into the Resolver's
// cookie path: New calls setupRefresh when Config.Refresh is on, and
// rv.refresh is called for a cookie session whose token has expired or
// expires within the leeway.

// refreshAPIKey returns the apikey header of refresh calls: the first of
// Config.PublishableKeys (the env loader puts SUPABASE_PUBLISHABLE_KEY or
// SUPABASE_ANON_KEY there), "" when there is none.
func refreshAPIKey(cfg *Config) string {
	for _, k := range cfg.PublishableKeys {
		if k != "" {
			return k
		}
	}
	return ""
}

// setupRefresh installs the refresh flow; [Config.validate] has checked
// its requirements (project URL, cookie name, publishable key).
func (rv *Resolver) setupRefresh(cfg *Config) {
	key := refreshAPIKey(cfg)
	client := &gotrue.Client{ProjectURL: cfg.ProjectURL, APIKey: key, HTTPClient: observedClient(cfg.Telemetry, cfg.HTTPClient, "refresh", 0)}
	verify := func(ctx context.Context, token string) Auth {
		a, _ := rv.token(ctx, token)
		return a
	}
	wait := cfg.RefreshWait
	switch {
	case wait == 0:
		wait = DefaultRefreshWait
	case wait < 0:
		wait = 0
	}
	fl := &refreshFlow{
		r:          newRefresher(client, cfg.RefreshTimeout, rv.now),
		cookieName: rv.cookieName,
		opts:       cfg.CookieOptions,
		wait:       wait,
	}
	fl.r.tel = cfg.Telemetry
	fl.r.accept = func(ctx context.Context, token string) bool { return usableRefreshed(verify(ctx, token)) }
	rv.forget = fl.r.forget
	rv.refresh = func(r *http.Request, res *Result, sess ssrsession.Cookie, current Auth) Auth {
		now := rv.now()
		expired := current.Kind != KindUser || (!current.User.ExpiresAt.IsZero() && !now.Before(current.User.ExpiresAt))
		d := fl.run(r.Context(), res.RequestCookies, sess.RefreshToken, current, expired, verify)
		if d.Auth.Kind == KindAnon && d.Auth.Reason == ReasonSignedOut {
			// The following requests resolve as signed_out too (signed_out.go).
			d.SetCookies = append(d.SetCookies, ssrsession.SignedOutMarker(rv.cookieName, cfg.CookieOptions))
			if d.Header == nil {
				d.Header = ssrcookie.CacheHeaders()
			}
		}
		if d.SetCookies != nil || d.RequestCookies != nil {
			res.SetCookies = d.SetCookies
			res.Header = d.Header
			res.RequestCookies = d.RequestCookies
			res.CookiesChanged = true
		}
		return d.Auth
	}
}

// ForgetSession drops what rv remembers of the cookie session whose
// refresh token is refreshToken: the refreshes that led to it, which rv
// keeps for a few seconds (up to [RefreshHandoffTTL]) so that concurrent
// requests of one browser share them. Call it when the session is signed
// out ([authflow] does, given Config.Sessions): otherwise a request that
// still carries the session's previous cookies is handed the signed-out
// session again, and writes it back to the browser. Without cookie
// refresh it does nothing.
func (rv *Resolver) ForgetSession(refreshToken string) {
	if rv != nil && rv.forget != nil {
		rv.forget(refreshToken)
	}
}
