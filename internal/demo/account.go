package demo

import (
	"crypto/rand"
	"encoding/hex"
	"html/template"
	"net/http"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/telemetry"
)

// UserEmail is the demo user's sign-in address on the demo's own auth
// server (the password is random, printed as USER_PASSWORD).
const UserEmail = "demo-user@example.com"

// newPassword returns a random password for the demo user.
func newPassword() string {
	var b [9]byte
	_, _ = rand.Read(b[:])
	return "demo-" + hex.EncodeToString(b[:])
}

// NewFlows builds the sign-in/out flows of the demo: sessions of the
// project at projectURL written in the resolver's cookie, redirects back
// to siteURL; tokensOnly writes @supabase/ssr's tokens-only encoding.
func NewFlows(rv *authctx.Resolver, projectURL, siteURL, publishableKey string, tokensOnly bool) (*authflow.Flows, error) {
	return authflow.New(&authflow.Config{
		ProjectURL: projectURL, PublishableKey: publishableKey, SiteURL: siteURL, CookieName: rv.CookieName(),
		Timeout: 10 * time.Second, TokensOnly: tokensOnly, Sessions: rv,
	})
}

// accountPage is the demo's server-rendered page: who am I, and the forms
// of the flows (password, magic link, the demo OAuth provider, sign-out).
var accountPage = template.Must(template.New("account").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tablegate demo · account</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem}
form{margin:1rem 0;padding:1rem;border:1px solid #ccc;border-radius:.5rem}input,select,button{font:inherit;margin:.2rem 0}
code{background:#f4f4f4;padding:0 .2rem}</style></head>
<body>
<h1>Who am I?</h1>
<p>kind <code id="kind">{{.Kind}}</code>{{if .Reason}} · reason <code id="reason">{{.Reason}}</code>{{end}}</p>
{{if .UserID}}<p>user <code id="user-id">{{.UserID}}</code>{{if .Email}} · <span id="email">{{.Email}}</span>{{end}}</p>
<p>access token expires at <code id="expires-at">{{.ExpiresAt}}</code> (unix <code id="exp">{{.Exp}}</code>)</p>
<form method="post" action="/auth/sign-out">
  <input type="hidden" name="next" value="/account">
  <label>scope <select name="scope"><option>local</option><option>global</option><option>others</option></select></label>
  <button id="sign-out" type="submit">Sign out</button>
</form>
{{else}}
<form method="post" action="/auth/sign-in">
  <h2>Password</h2>
  <input type="hidden" name="next" value="/account">
  <label>email <input name="email" type="email" autocomplete="username" value="{{.DemoEmail}}"></label><br>
  <label>password <input name="password" type="password" autocomplete="current-password"></label><br>
  <button id="sign-in" type="submit">Sign in</button>
</form>
<form method="post" action="/auth/otp">
  <h2>Magic link</h2>
  <input type="hidden" name="next" value="/account">
  <label>email <input name="email" type="email" value="{{.DemoEmail}}"></label>
  <button type="submit">Send link</button> <small>(the demo prints the link)</small>
</form>
<p><a id="oauth" href="/auth/oauth?provider=demo&amp;next=%2Faccount">Sign in with the demo provider (OAuth + PKCE)</a></p>
{{end}}
</body></html>
`))

// accountHandler serves GET /account.
func accountHandler(w http.ResponseWriter, r *http.Request) {
	a := authctx.AuthFrom(r.Context())
	data := struct {
		Kind, Reason, UserID, Email, ExpiresAt, DemoEmail string
		Exp                                               int64
	}{Kind: string(a.Kind), Reason: string(a.Reason), DemoEmail: UserEmail}
	if a.Kind == authctx.KindUser && a.User != nil {
		data.UserID = a.User.ID
		data.Email, _ = a.User.Claims["email"].(string)
		data.ExpiresAt = a.User.ExpiresAt.UTC().Format(time.RFC3339)
		data.Exp = a.User.ExpiresAt.Unix()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.Header().Set("X-Frame-Options", "DENY")
	_ = accountPage.Execute(w, data)
}

// flowPatterns are the paths of authflow's handler (base path /auth),
// every method (the handler answers 405 to the wrong one).
var flowPatterns = []string{"/auth/sign-in", "/auth/otp", "/auth/verify", "/auth/sign-out", "/auth/oauth", "/auth/callback"}

// flowRoutes mounts the flows, each reported to telemetry by its
// pattern, and the account page on mux.
func flowRoutes(mux *http.ServeMux, flows *authflow.Flows) {
	h := flows.Handler()
	for _, p := range flowPatterns {
		mux.Handle(p, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			telemetry.SetPattern(r.Context(), r.Pattern)
			h.ServeHTTP(w, r)
		}))
	}
	mux.HandleFunc("GET /account", accountHandler)
	// The flows send the browser to "/" when no next is given.
	mux.Handle("GET /{$}", http.RedirectHandler("/account", http.StatusSeeOther))
}
