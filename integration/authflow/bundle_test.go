package authflow_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/internal/sitejar"
)

const (
	testUser     = "11111111-1111-4111-8111-111111111111"
	testKey      = "sb_publishable_TESTKEY"
	testPassword = "correct horse battery staple"
)

// bundle is a test setup: the auth server (internal/authstub with one
// account, a@example.com with testPassword, recording every call), the
// flows and a resolver that reads the cookies they write.
type bundle struct {
	t      *testing.T
	gt     *authstub.Server
	flows  *authflow.Flows
	rv     *authctx.Resolver
	site   string
	cookie string
}

func setup(t *testing.T, mod func(*authflow.Config)) *bundle {
	t.Helper()
	cfg := &authflow.Config{PublishableKey: testKey, SiteURL: "https://app.example.com",
		RedirectURLs: []string{"https://admin.example.com/console"}, Timeout: 2 * time.Second}
	if mod != nil {
		mod(cfg)
	}
	gt := authstub.Start(t, authstub.Config{APIKey: testKey, SiteURL: cfg.SiteURL, OTPInterval: -1, PasswordAttempts: -1, RecordCalls: true})
	gt.AddAccount(authstub.Account{Token: keys.TokenSpec{Sub: testUser, TTL: time.Hour}, Email: "a@example.com",
		Password: testPassword, UserMetadata: map[string]any{"name": "Zoë <a&b>"}})
	cfg.ProjectURL = gt.URL()
	f, err := authflow.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rv, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: gt.URL(), VerifierConfig: authctx.VerifierConfig{JWKS: gt.JWKS()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	return &bundle{t: t, gt: gt, flows: f, rv: rv, site: cfg.SiteURL, cookie: f.CookieName()}
}

// lastCall is the last request the auth server received.
func (b *bundle) lastCall() authstub.Call {
	b.t.Helper()
	calls := b.gt.Calls()
	if len(calls) == 0 {
		b.t.Fatal("the auth server received no call")
	}
	return calls[len(calls)-1]
}

// req builds a same-origin request to target on the site carrying cookies.
func (b *bundle) req(method, target string, cookies []*http.Cookie) *http.Request {
	return sitejar.Request(method, b.site+target, cookies)
}

// resolve resolves a request carrying cookies.
func (b *bundle) resolve(cookies []*http.Cookie) authctx.Auth {
	return b.rv.Resolve(b.req("GET", "/", cookies)).Auth
}

// signedIn returns the cookies of a fresh session.
func (b *bundle) signedIn() []*http.Cookie {
	b.t.Helper()
	w := httptest.NewRecorder()
	if _, err := b.flows.SignInWithPassword(w, b.req("POST", "/", nil), &authflow.PasswordCredentials{Email: "a@example.com", Password: testPassword}); err != nil {
		b.t.Fatal(err)
	}
	return jar(nil, w)
}

// jar applies the Set-Cookie lines of w to cookies like a browser.
func jar(cookies []*http.Cookie, w *httptest.ResponseRecorder) []*http.Cookie {
	return sitejar.Apply(cookies, w.Header())
}

// queryOf parses the query of a URL string.
func queryOf(t *testing.T, s string) url.Values {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}
