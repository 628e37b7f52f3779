package main

// The sign-in flows (package authflow) against the demo's own auth server,
// end to end over HTTP, in process: the handler is built like "tablegate
// demo" builds it (demoResolverConfig with refresh, demoFlows,
// demoServer.handler behind the resolver's middleware).

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/demo"
)

type flowApp struct {
	t        *testing.T
	url      string
	gotrue   *authstub.Server
	password string
	cookie   string
	// skew moves the auth server's clock ahead of time.Now.
	skew atomic.Int64

	mu   sync.Mutex
	sent []authstub.Sent
}

// newAuthStub returns the stand-in auth server configured by cfg.
func newAuthStub(t *testing.T, cfg authstub.Config) *authstub.Server {
	t.Helper()
	s, err := authstub.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func newFlowApp(t *testing.T, ttl time.Duration, tokensOnly ...bool) *flowApp {
	t.Helper()
	ks := testKeySet(t, algEdDSA) // the demo's auth server signs with any algorithm
	var h atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	a := &flowApp{t: t, url: srv.URL, password: "demo-" + newUUID()[:18]}
	ds := &demo.Routes{JWKS: ks.PublicJWKS()}
	gotrue := newAuthStub(t, authstub.Config{Keys: ks, Issuer: srv.URL + "/auth/v1", APIKey: "sb_publishable_flows", SiteURL: srv.URL,
		SentFunc:    func(m authstub.Sent) { a.mu.Lock(); a.sent = append(a.sent, m); a.mu.Unlock() },
		OTPInterval: -1, // the flows send several codes; internal/authstub checks the interval
		Now:         func() time.Time { return time.Now().Add(time.Duration(a.skew.Load())) },
	})
	gotrue.AddAccount(authstub.Account{Token: tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: ttl, Issuer: srv.URL + "/auth/v1"},
		Email: demoUserEmail, Phone: "15550001111", Password: a.password})
	ds.Auth = demoAuth{gotrue}
	a.gotrue = gotrue
	first := demoHandler(ds)
	h.Store(&first)
	rcfg := demoResolverConfig(srv.URL, srv.URL+"/auth/v1/.well-known/jwks.json", "sb_secret_flows", "sb_publishable_flows", true)
	// A still-valid token waits for its refresh up to the refresh timeout
	// (not DefaultRefreshWait's 250 ms): the tests expect the refresh's
	// outcome in the very response, also on a loaded machine.
	rcfg.RefreshWait = authctx.DefaultRefreshTimeout
	rv, err := authctx.New(t.Context(), rcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	if ds.Flows, err = demo.NewFlows(rv, srv.URL, srv.URL, "sb_publishable_flows", len(tokensOnly) > 0 && tokensOnly[0]); err != nil {
		t.Fatal(err)
	}
	a.cookie = rv.CookieName()
	full := rv.Middleware(rv.CrossSite(demoHandler(ds)))
	h.Store(&full)
	return a
}

// browser is an HTTP client with a cookie jar that follows redirects.
func (a *flowApp) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 10 * time.Second}
}

func (a *flowApp) post(c *http.Client, path string, form url.Values) (*http.Response, string) {
	a.t.Helper()
	resp, err := c.PostForm(a.url+path, form)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func (a *flowApp) whoami(c *http.Client) whoami {
	a.t.Helper()
	resp, err := c.Get(a.url + "/whoami")
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	var w whoami
	_ = json.NewDecoder(resp.Body).Decode(&w)
	return w
}

func (a *flowApp) cookieNames(c *http.Client) []string {
	u, _ := url.Parse(a.url)
	var out []string
	for _, ck := range c.Jar.Cookies(u) {
		out = append(out, ck.Name)
	}
	return out
}

// TestDemoFlowsPasswordSignInAndSignOut: the password grant, the session
// in the cookie, sign-out revoking the refresh token at the auth server
// and anon/signed_out afterwards.
func TestDemoFlowsPasswordSignInAndSignOut(t *testing.T) {
	t.Parallel()
	for _, tokensOnly := range []bool{false, true} {
		testDemoPasswordSignInAndSignOut(t, newFlowApp(t, time.Hour, tokensOnly), tokensOnly)
	}
}

func testDemoPasswordSignInAndSignOut(t *testing.T, a *flowApp, tokensOnly bool) {
	c := a.browser()
	// A wrong method on a flow's path is the flows' 405, not the API's 404.
	if resp, err := c.Get(a.url + "/auth/sign-in"); err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET /auth/sign-in: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	resp, body := a.post(c, "/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {"wrong"}, "next": {"/account"}})
	if resp.StatusCode != 401 || !strings.Contains(body, `"INVALID_CREDENTIALS"`) || strings.Contains(body, "wrong") {
		t.Fatalf("wrong password: %d %s", resp.StatusCode, body)
	}
	resp, body = a.post(c, "/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {a.password}, "next": {"/account"}})
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/account" || !strings.Contains(body, demoUserID) {
		t.Fatalf("sign-in: %d %s %s", resp.StatusCode, resp.Request.URL, body)
	}
	if w := a.whoami(c); w.Kind != authctx.KindUser || w.UserID != demoUserID || w.Claims["email"] != demoUserEmail {
		t.Fatalf("whoami %+v", w)
	}
	// Phone + password too.
	c2 := a.browser()
	if resp, body := a.post(c2, "/auth/sign-in", url.Values{"phone": {"15550001111"}, "password": {a.password}}); resp.StatusCode != 200 {
		t.Fatalf("phone sign-in: %d %s", resp.StatusCode, body)
	}
	// The session's refresh token, for the check after sign-out.
	u, _ := url.Parse(a.url)
	raw, err := ssrcookie.Read(c.Jar.Cookies(u), a.cookie)
	if err != nil {
		t.Fatalf("no session cookie: %v", err)
	}
	sess, err := ssrcookie.LoadSession(raw)
	if err != nil {
		t.Fatalf("session cookie: %v", err)
	}
	if hasUser := strings.Contains(string(raw), `"user"`); hasUser == tokensOnly {
		t.Fatalf("tokens-only %v, cookie %s", tokensOnly, raw)
	}
	resp, body = a.post(c, "/auth/sign-out", url.Values{"scope": {"global"}, "next": {"/account"}})
	if resp.StatusCode != 200 || !strings.Contains(body, `id="reason">signed_out<`) {
		t.Fatalf("sign-out: %d %s", resp.StatusCode, body)
	}
	if w := a.whoami(c); w.Kind != authctx.KindAnon || w.Reason != authctx.ReasonSignedOut {
		t.Fatalf("after sign-out %+v", w)
	}
	if got := strings.Join(a.cookieNames(c), ","); got != authctx.SignedOutCookieName(a.cookie) {
		t.Fatalf("cookies after sign-out: %s", got)
	}
	// global revoked the other browser's session too: its refresh fails.
	rr, err := http.NewRequest("POST", a.url+"/auth/v1/token?grant_type=refresh_token", strings.NewReader(`{"refresh_token":"`+sess.RefreshToken+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	rr.Header.Set("apikey", "sb_publishable_flows")
	res, err := http.DefaultClient.Do(rr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 || res.Header.Get("x-sb-error-code") != "session_not_found" {
		t.Fatalf("refresh after global sign-out: %d %s", res.StatusCode, res.Header.Get("x-sb-error-code"))
	}
}

// TestDemoFlowsOAuthPKCE: GET /auth/oauth → the demo's /authorize → the
// callback with a code → the pkce grant → /account, verifier cookies gone.
func TestDemoFlowsOAuthPKCE(t *testing.T) {
	t.Parallel()
	a := newFlowApp(t, time.Hour)
	c := a.browser()
	resp, err := c.Get(a.url + "/auth/oauth?provider=demo&next=%2Faccount")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/account" || !strings.Contains(string(body), demoUserID) {
		t.Fatalf("oauth: %d %s %s", resp.StatusCode, resp.Request.URL, body)
	}
	if got := strings.Join(a.cookieNames(c), ","); got != a.cookie {
		t.Fatalf("cookies after the callback: %s (verifier slots must be gone)", got)
	}
	// A stolen auth code is useless without this browser's verifier.
	c2 := a.browser()
	c2.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = c2.Get(a.url + "/auth/oauth?provider=demo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	authorize := resp.Header.Get("Location")
	resp, err = c2.Get(authorize)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	callback := resp.Header.Get("Location")
	attacker := a.browser()
	resp, err = attacker.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), string(authflow.CodeFlowInvalid)) {
		t.Fatalf("code replayed in another browser: %d %s", resp.StatusCode, b)
	}
	// An expired flow state (they last 5 minutes).
	a.skew.Store(int64(5*time.Minute + time.Second))
	resp, err = c2.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), string(authflow.CodeFlowInvalid)) {
		t.Fatalf("expired flow state: %d %s", resp.StatusCode, b)
	}
}

// TestDemoFlowsMagicLinkAndCode: POST /auth/otp sends a link (PKCE) and a
// code; the link lands on the callback; the code verifies at /auth/verify.
func TestDemoFlowsMagicLinkAndCode(t *testing.T) {
	t.Parallel()
	a := newFlowApp(t, time.Hour)
	c := a.browser()
	resp, body := a.post(c, "/auth/otp", url.Values{"email": {demoUserEmail}, "next": {"/whoami"}})
	if resp.StatusCode != 200 {
		t.Fatalf("otp: %d %s", resp.StatusCode, body)
	}
	a.mu.Lock()
	if len(a.sent) != 1 {
		a.mu.Unlock()
		t.Fatalf("sent %d", len(a.sent))
	}
	link := a.sent[0].Link
	a.mu.Unlock()
	// A HEAD (a link prefetcher, a mail scanner) neither spends the link
	// nor starts a flow.
	for u, allow := range map[string]string{link: "GET, POST", a.url + "/auth/v1/authorize?provider=demo": "GET"} {
		if resp, err := c.Head(u); err != nil || resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != allow {
			t.Fatalf("HEAD %s: %v %v", u, resp, err)
		}
	}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Request.URL.Path != "/whoami" || !strings.Contains(string(b), demoUserID) {
		t.Fatalf("magic link: %d %s %s", resp.StatusCode, resp.Request.URL, b)
	}
	// The link is single-use.
	resp, err = a.browser().Get(link)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(string(b), string(authflow.CodeOTPInvalid)) {
		t.Fatalf("reused link: %d %s", resp.StatusCode, b)
	}
	// A typed code.
	c3 := a.browser()
	a.post(c3, "/auth/otp", url.Values{"email": {demoUserEmail}})
	a.mu.Lock()
	code := a.sent[len(a.sent)-1].Code
	a.mu.Unlock()
	if resp, body := a.post(c3, "/auth/verify", url.Values{"email": {demoUserEmail}, "token": {"000000x"}, "type": {"email"}}); resp.StatusCode != 401 {
		t.Fatalf("wrong code: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.post(c3, "/auth/verify", url.Values{"email": {demoUserEmail}, "token": {code}, "type": {"email"}, "next": {"/whoami"}}); resp.StatusCode != 200 || !strings.Contains(body, demoUserID) {
		t.Fatalf("code: %d %s", resp.StatusCode, body)
	}
}

// TestDemoFlowsRefreshThenRejected: an expiring session is refreshed by
// the resolver; once the auth server revoked it (sign-out elsewhere with
// scope others), the refresh is rejected and the caller is anon/signed_out
// on that request and the next.
func TestDemoFlowsRefreshThenRejected(t *testing.T) {
	t.Parallel()
	a := newFlowApp(t, 61*time.Second) // inside the 60 s leeway after one second
	c := a.browser()
	if resp, body := a.post(c, "/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {a.password}}); resp.StatusCode != 200 {
		t.Fatalf("sign-in: %d %s", resp.StatusCode, body)
	}
	first := a.whoami(c)
	// sleep: the session's token enters the 60 s refresh leeway in real time (its lifetime is 61 s)
	time.Sleep(1100 * time.Millisecond)
	second := a.whoami(c)
	if second.Kind != authctx.KindUser || second.Claims["exp"] == first.Claims["exp"] {
		t.Fatalf("not refreshed: %v → %v", first.Claims["exp"], second.Claims["exp"])
	}
	other := a.browser()
	if resp, body := a.post(other, "/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {a.password}}); resp.StatusCode != 200 {
		t.Fatalf("second sign-in: %d %s", resp.StatusCode, body)
	}
	if resp, body := a.post(other, "/auth/sign-out", url.Values{"scope": {"others"}}); resp.StatusCode != 200 {
		t.Fatalf("sign-out others: %d %s", resp.StatusCode, body)
	}
	if w := a.whoami(other); w.Kind != authctx.KindUser {
		t.Fatalf("others kept this session: %+v", w)
	}
	// sleep: the refreshed token enters the refresh leeway in real time, so the next request refreshes (and is rejected)
	time.Sleep(1100 * time.Millisecond)
	if w := a.whoami(c); w.Kind != authctx.KindAnon || w.Reason != authctx.ReasonSignedOut {
		t.Fatalf("revoked session: %+v, want anon/signed_out", w)
	}
	if w := a.whoami(c); w.Reason != authctx.ReasonSignedOut {
		t.Fatalf("the request after the rejection: %+v, want anon/signed_out", w)
	}
}

// TestDemoAuthEndpointsRefuseBadInput: the demo's new auth endpoints need
// the apikey, refuse a wrong Bearer on /logout, and never redirect off
// site.
func TestDemoAuthEndpointsRefuseBadInput(t *testing.T) {
	t.Parallel()
	a := newFlowApp(t, time.Hour)
	for _, p := range []string{"/auth/v1/otp", "/auth/v1/verify", "/auth/v1/logout", "/auth/v1/token?grant_type=password"} {
		resp, err := http.Post(a.url+p, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 {
			t.Errorf("%s without apikey: %d", p, resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("POST", a.url+"/auth/v1/logout", nil)
	req.Header.Set("apikey", "sb_publishable_flows")
	req.Header.Set("Authorization", "Bearer "+a.gotrueToken(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("logout with a token of no session: %d", resp.StatusCode)
	}
	c := a.browser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err = c.Get(a.url + "/auth/v1/authorize?provider=demo&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=s256&redirect_to=https%3A%2F%2Fevil.example.net%2F")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, a.url+"?code=") && !strings.HasPrefix(loc, a.url+"/?code=") {
		t.Errorf("authorize redirected to %s", loc)
	}
}

// gotrueToken mints a token the demo's auth server signed but for which it
// holds no session.
func (a *flowApp) gotrueToken(t *testing.T) string {
	tok, err := mintToken(a.gotrue.Keys(), tokenSpec{Sub: demoUserID, Issuer: a.gotrue.Issuer(), TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
