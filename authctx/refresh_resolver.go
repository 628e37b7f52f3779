package authctx

import (
	"context"
	"errors"
	"net/http"

	"github.com/tablegate/tablegate/authctx/internal/gotrue"
)

// This file wires the refresh flow (refresh.go) into the Resolver's
// cookie path through the seam resolver.go leaves: refreshSetup runs in
// New when Config.Refresh is on, and rv.refresh is called for a cookie
// session whose token has expired or expires within the leeway.

func init() { refreshSetup = setupRefresh }

// setupRefresh validates the refresh configuration and installs the flow.
// The apikey header is the first of Config.PublishableKeys (the env
// loader puts SUPABASE_PUBLISHABLE_KEY or SUPABASE_ANON_KEY there).
func setupRefresh(rv *Resolver, cfg Config) error {
	if cfg.ProjectURL == "" {
		return errors.New("authctx: Config.Refresh needs Config.ProjectURL (the auth server's base URL)")
	}
	if rv.cookieName == "" {
		return errors.New("authctx: Config.Refresh needs a session cookie name")
	}
	var key string
	for _, k := range cfg.PublishableKeys {
		if k != "" {
			key = k
			break
		}
	}
	if key == "" {
		return errors.New("authctx: Config.Refresh needs a publishable key in Config.PublishableKeys (SUPABASE_PUBLISHABLE_KEY or SUPABASE_ANON_KEY): the auth server's gateway requires it as the apikey header")
	}
	client := &gotrue.Client{ProjectURL: cfg.ProjectURL, APIKey: key, HTTPClient: cfg.HTTPClient}
	verify := func(ctx context.Context, token string) Auth {
		a, _ := rv.token(ctx, token)
		return a
	}
	fl := &refreshFlow{
		r:          newRefresher(client, cfg.RefreshTimeout, rv.now),
		cookieName: rv.cookieName,
		opts:       cfg.CookieOptions,
	}
	fl.r.accept = func(ctx context.Context, token string) bool { return usableRefreshed(verify(ctx, token)) }
	rv.refresh = func(r *http.Request, res *Result, sess CookieSession, current Auth) Auth {
		now := rv.now()
		expired := current.Kind != KindUser || (!current.User.ExpiresAt.IsZero() && !now.Before(current.User.ExpiresAt))
		d := fl.run(r.Context(), res.RequestCookies, sess.RefreshToken, current, expired, verify)
		if d.SetCookies != nil || d.RequestCookies != nil {
			res.SetCookies = d.SetCookies
			res.Header = d.Header
			res.RequestCookies = d.RequestCookies
			res.CookiesChanged = true
		}
		return d.Auth
	}
	return nil
}
