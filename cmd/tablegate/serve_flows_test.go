package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/demo"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestServeAuthFlows: serve with "auth": {"flows": {…}} signs a user in
// against the project's auth server (the demo's GoTrue stand-in), writes the
// session cookie its resolver reads (Secure for an https site), serves that
// user's rows through the cookie, and signs out.
func TestServeAuthFlows(t *testing.T) {
	t.Parallel()
	dbURL := flowsDatabase(t)
	p := newFlowsProject(t, "sb_publishable_serveflows", time.Hour, nil)
	project, gotrue, password := p.srv, p.gotrue, p.password
	// serve starts serve with the flows at site (the listen address when
	// ""); auth.refresh is left off: the flows turn it on.
	serve := func(site string) (base string, cancel context.CancelFunc, exit chan result) {
		flows := map[string]any{}
		if site != "" {
			flows["site_url"] = site
		}
		return p.serve(t, dbURL, flows)
	}

	// An https site: the session cookies are Secure.
	httpsBase, stopHTTPS, httpsExit := serve("https://app.example.test")
	req, _ := http.NewRequest("POST", httpsBase+"/auth/sign-in", strings.NewReader(url.Values{
		"email": {demoUserEmail}, "password": {password}, "next": {"/api/todos"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := noFollow.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		secure := 0
		for _, c := range resp.Cookies() {
			if strings.HasSuffix(c.Name, "-auth-token") && c.Secure {
				secure++
			}
		}
		if resp.StatusCode != 303 || resp.Header.Get("Location") != "https://app.example.test/api/todos" || secure == 0 {
			t.Errorf("https site: %d to %q, Secure session cookies %d: %v", resp.StatusCode, resp.Header.Get("Location"), secure, resp.Header["Set-Cookie"])
		}
	}
	stopHTTPS()
	<-httpsExit

	base, cancel, exit := serve("")
	defer cancel()
	gotrue.SetSiteURL(base)

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	post := func(path string, form url.Values) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	items := func(resp *http.Response) (int, int) {
		t.Helper()
		defer resp.Body.Close()
		var page struct{ Items []map[string]any }
		_ = json.NewDecoder(resp.Body).Decode(&page)
		return resp.StatusCode, len(page.Items)
	}

	// A wrong password: a problem, no session.
	resp := post("/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {"wrong"}, "next": {"/api/todos"}})
	if resp.StatusCode != 401 || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
		t.Errorf("wrong password: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	resp.Body.Close()
	if status, _ := items(mustGet(t, browser, base+"/api/todos")); status != 401 {
		t.Errorf("before sign-in: %d, want 401", status)
	}

	// Sign in: 303 to next, which the session cookie now reads.
	if status, n := items(post("/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {password}, "next": {"/api/todos"}})); status != 200 || n != 3 {
		t.Fatalf("signed in, /api/todos: %d with %d items, want 200 with tenant A's 3", status, n)
	}
	var cookie string
	for _, c := range jar.Cookies(mustURL(t, base)) {
		if strings.HasPrefix(c.Name, "sb-") && strings.HasSuffix(c.Name, "-auth-token") {
			cookie = c.Name
		}
	}
	if cookie == "" {
		t.Fatalf("no session cookie in %v", jar.Cookies(mustURL(t, base)))
	}

	// A next off the site is not followed: the flow goes home instead.
	browser.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp = post("/auth/sign-in", url.Values{"email": {demoUserEmail}, "password": {password}, "next": {"https://evil.example/x"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || loc != base+"/" {
		t.Errorf("next off site: %d to %q, want 303 to %s/", resp.StatusCode, loc, base)
	}
	resp.Body.Close()
	browser.CheckRedirect = nil

	// Sign out: the cookie goes, the rows with it.
	if status, _ := items(post("/auth/sign-out", url.Values{"scope": {"local"}, "next": {"/api/todos"}})); status != 401 {
		t.Errorf("signed out, /api/todos: %d, want 401", status)
	}

	cancel()
	select {
	case res := <-exit:
		if res.code != 0 {
			t.Fatalf("serve exit %d: %s", res.code, res.stderr)
		}
		if !strings.Contains(res.stderr, "/auth/{sign-in,otp,verify,oauth,callback,sign-out} → sessions of "+project.URL) {
			t.Errorf("serve output does not name the flows:\n%s", res.stderr)
		}
		// The access log names the flows' routes, never the form's values.
		if !strings.Contains(res.stderr, `"route":"/auth/sign-in"`) || !strings.Contains(res.stderr, `"route":"/auth/sign-out"`) ||
			strings.Contains(res.stderr, password) || strings.Contains(res.stderr, demoUserEmail) {
			t.Errorf("access log:\n%s", res.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeAuthFlowsConfigErrors: flows that cannot work, or whose routes
// meet a table's, are refused at start with a message naming the fix.
func TestServeAuthFlowsConfigErrors(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	dir := t.TempDir()
	cases := []struct {
		name, body string
		vars       map[string]string
		code       int
		msg        string
	}{
		{"base path /auth", `{"base_path":"/auth","auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1"}},"tables":{"t":{}}}`, nil, exitFailure, "meets the sign-in routes"},
		{"table auth at the root", `{"base_path":"/","auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1"}},"tables":{"auth":{}}}`, nil, exitFailure, "tables.auth at the root"},
		{"site url", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"app.example.com"}},"tables":{"t":{}}}`, nil, exitFailure, "auth.flows.site_url"},
		{"redirect url", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1","redirect_urls":["ftp://x/"]}},"tables":{"t":{}}}`,
			map[string]string{"SUPABASE_PUBLISHABLE_KEY": "sb_publishable_x"}, exitFailure, "Config.RedirectURLs"},
		{"no publishable key", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1"}},"tables":{"t":{}}}`, nil, exitUsage, "SUPABASE_PUBLISHABLE_KEY"},
		{"no project url", `{"public_url":"http://localhost:1","auth":{"jwks_url":"http://127.0.0.1:1/jwks","flows":{}},"tables":{"t":{}}}`,
			map[string]string{"SUPABASE_PUBLISHABLE_KEY": "sb_publishable_x"}, exitUsage, "auth.flows needs the Supabase project URL"},
		{"no site", `{"auth":{"url":"http://127.0.0.1:1","flows":{}},"tables":{"t":{}}}`, nil, exitFailure, "set auth.flows.site_url (or public_url)"},
		{"site with a path", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"https://app.example.com/app"}},"tables":{"t":{}}}`, nil, exitFailure, "auth.flows.site_url must be an origin"},
		{"timeout past the write timeout", `{"timeouts":{"write":"5s"},"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1","timeout":"5s"}},"tables":{"t":{}}}`,
			nil, exitUsage, "must be shorter than the write timeout"},
		{"attempts per account", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1","attempts_per_account":-5}},"tables":{"t":{}}}`,
			nil, exitFailure, "auth.flows.attempts_per_account must be a positive count, or -1"},
		{"attempts per address", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1","attempts_per_address":-2}},"tables":{"t":{}}}`,
			nil, exitFailure, "auth.flows.attempts_per_address must be a positive count, or -1"},
		{"attempt window", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1","attempt_window":"soon"}},"tables":{"t":{}}}`,
			nil, exitFailure, "not a duration"},
		{"trusted proxy header", `{"auth":{"url":"http://127.0.0.1:1","flows":{"site_url":"http://localhost:1","trusted_proxy_header":"X Forwarded For"}},"tables":{"t":{}}}`,
			nil, exitFailure, "auth.flows.trusted_proxy_header must be a header name"},
	}
	for i, c := range cases {
		p := filepath.Join(dir, fmt.Sprintf("case%d.json", i))
		if err := os.WriteFile(p, []byte(c.body), 0o600); err != nil {
			t.Fatal(err)
		}
		vars := map[string]string{"DATABASE_URL": dbURL}
		for k, v := range c.vars {
			vars[k] = v
		}
		r := runCLI(t, vars, "serve", "--config", p, "--addr", freeAddr(t))
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("case %d %s: exit %d, stderr %q (want %d, %q)", i, c.name, r.code, r.stderr, c.code, c.msg)
		}
	}
}

func mustGet(t *testing.T, c *http.Client, u string) *http.Response {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestServeAuthFlowsBurstIsBounded: a burst of sign-ins against an auth
// server that never answers the password grant ends, each in a 503 Problem
// at the flows' timeout, while the API — a Bearer request and a cookie
// session that needs a refresh from the same auth server — keeps answering
// at once.
func TestServeAuthFlowsBurstIsBounded(t *testing.T) {
	t.Parallel()
	dbURL := flowsDatabase(t)
	var stalled atomic.Bool
	var held atomic.Int64
	// Access tokens inside the refresh leeway: every cookie request refreshes.
	p := newFlowsProject(t, "sb_publishable_burst", 30*time.Second, func(demo http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if stalled.Load() && r.URL.Path == "/auth/v1/token" && r.URL.Query().Get("grant_type") == "password" {
				_, _ = io.Copy(io.Discard, r.Body) // then the server notices the caller hanging up
				held.Add(1)
				select { // an auth server that never answers; the caller's bound ends it
				case <-r.Context().Done():
				case <-time.After(time.Minute):
				}
				return
			}
			demo.ServeHTTP(w, r)
		})
	})
	ks, issuer, password := p.ks, p.issuer, p.password
	// 64 sign-ins of one account at once: past the attempt limits here,
	// which TestServeAuthFlowsAttemptLimit covers; off for this test.
	base, cancel, exit := p.serve(t, dbURL, map[string]any{"timeout": "1s", "attempts_per_account": -1, "attempts_per_address": -1})
	defer cancel()

	signIn := func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest("POST", base+"/auth/sign-in", strings.NewReader(url.Values{
			"email": {demoUserEmail}, "password": {password}, "next": {"/api/todos"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		return c.Do(req)
	}
	// A browser signed in before the auth server stalls.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	if resp, err := signIn(browser); err != nil || resp.StatusCode != 200 {
		t.Fatalf("sign-in before the stall: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	bearer, err := mintToken(ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: time.Hour, Issuer: issuer}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	stalled.Store(true)
	const burst = 64
	type outcome struct {
		status  int
		problem bool
		took    time.Duration
		err     error
	}
	outcomes := make(chan outcome, burst)
	client := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxConnsPerHost: burst}}
	defer client.CloseIdleConnections()
	for range burst {
		go func() {
			start := time.Now()
			resp, err := signIn(client)
			o := outcome{took: time.Since(start), err: err}
			if err == nil {
				o.status, o.problem = resp.StatusCode, strings.Contains(resp.Header.Get("Content-Type"), "problem+json")
				resp.Body.Close()
			}
			outcomes <- o
		}()
	}
	// While the burst waits on the auth server, the API answers.
	within(5*time.Second, func() bool { return held.Load() >= burst/2 })
	if held.Load() == 0 {
		t.Fatal("no sign-in reached the auth server")
	}
	for _, c := range []struct {
		name string
		do   func() (*http.Response, error)
	}{
		{"bearer", func() (*http.Response, error) {
			req, _ := http.NewRequest("GET", base+"/api/todos", nil)
			req.Header.Set("Authorization", "Bearer "+bearer)
			return (&http.Client{Timeout: 10 * time.Second}).Do(req)
		}},
		{"cookie refresh", func() (*http.Response, error) { return browser.Get(base + "/api/todos") }},
	} {
		start := time.Now()
		resp, err := c.do()
		if err != nil {
			t.Fatalf("%s during the burst: %v", c.name, err)
		}
		resp.Body.Close()
		if took := time.Since(start); resp.StatusCode != 200 || took > 900*time.Millisecond {
			t.Errorf("%s during the burst (%d sign-ins held): %d after %v", c.name, held.Load(), resp.StatusCode, took)
		}
	}
	for range burst {
		o := <-outcomes
		if o.err != nil || o.status != 503 || !o.problem || o.took > 8*time.Second {
			t.Errorf("stalled sign-in: %d problem=%v after %v, %v", o.status, o.problem, o.took, o.err)
		}
	}
	cancel()
	select {
	case res := <-exit:
		if res.code != 0 {
			t.Fatalf("serve exit %d: %s", res.code, res.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// flowsDatabase is a fresh database with the demo's schema.
func flowsDatabase(t *testing.T) string {
	t.Helper()
	dbURL := pgtest.URL(t)
	if _, err := pgtest.Pool(t, dbURL).Exec(t.Context(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	return dbURL
}

// flowsProject is a Supabase project stand-in for serve's sign-in flows:
// the demo's GoTrue (one account: the demo user, tokens of ttl) and JWKS.
type flowsProject struct {
	srv                           *httptest.Server
	ks                            *keySet
	gotrue                        *authstub.Server
	issuer, publishable, password string
}

// newFlowsProject starts the project; wrap, when set, wraps its handler.
func newFlowsProject(t *testing.T, publishable string, ttl time.Duration, wrap func(http.Handler) http.Handler) *flowsProject {
	t.Helper()
	p := &flowsProject{ks: testKeySet(t, algES256), publishable: publishable, password: "demo-" + newUUID()[:18]}
	p.srv = httptest.NewUnstartedServer(nil)
	p.issuer = "http://" + p.srv.Listener.Addr().String() + "/auth/v1"
	p.gotrue = newAuthStub(t, authstub.Config{Keys: p.ks, Issuer: p.issuer, APIKey: publishable})
	p.gotrue.AddAccount(authstub.Account{Token: tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: ttl, Issuer: p.issuer},
		Email: demoUserEmail, Phone: "15550001111", Password: p.password})
	var h http.Handler = demoHandler(&demo.Routes{JWKS: p.ks.PublicJWKS(), Auth: demoAuth{p.gotrue}})
	if wrap != nil {
		h = wrap(h)
	}
	p.srv.Config.Handler = h
	p.srv.Start()
	t.Cleanup(p.srv.Close)
	return p
}

// serve runs tablegate serve against the project with auth.flows (its
// site_url the listen address unless flows sets one) and a user-guarded
// todos list, until cancel.
func (p *flowsProject) serve(t *testing.T, dbURL string, flows map[string]any) (base string, cancel context.CancelFunc, exit chan result) {
	t.Helper()
	addr := freeAddr(t)
	base = "http://" + addr
	if _, ok := flows["site_url"]; !ok {
		flows["site_url"] = base
	}
	cfg := map[string]any{
		"auth": map[string]any{"url": p.srv.URL, "flows": flows},
		"tables": map[string]any{"todos": map[string]any{
			"table": "public.todos", "operations": []string{"list"}, "select": []string{"id", "title"}, "guard": []string{"user"},
		}},
	}
	cfgPath := filepath.Join(t.TempDir(), "tablegate.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"DATABASE_URL": dbURL, "SUPABASE_PUBLISHABLE_KEY": p.publishable}
	sctx, cancel := context.WithCancel(t.Context())
	exit = make(chan result, 1)
	go func() {
		var out, errb syncBuffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
		exit <- result{run(sctx, e, []string{"serve", "--config", cfgPath, "--addr", addr}), out.String(), errb.String()}
	}()
	waitLive(t, base, cancel, exit)
	return base, cancel, exit
}

// TestServeAuthFlowsAttemptLimit: serve limits sign-in attempts as its
// config says: past auth.flows.attempts_per_account wrong passwords, 429
// with Retry-After, the right password too; an unknown account gets the
// same answers; the limit per address keys on trusted_proxy_header's last
// entry, and ignores the client's own entries.
func TestServeAuthFlowsAttemptLimit(t *testing.T) {
	t.Parallel()
	dbURL := flowsDatabase(t)
	p := newFlowsProject(t, "sb_publishable_limit", time.Hour, nil)
	base, cancel, exit := p.serve(t, dbURL, map[string]any{"attempts_per_account": 3, "attempts_per_address": 8,
		"attempt_window": "10m", "trusted_proxy_header": "X-Forwarded-For"})
	defer cancel()
	signIn := func(email, password, xff string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+"/auth/sign-in", strings.NewReader(url.Values{
			"email": {email}, "password": {password}, "next": {"/account"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
	}
	var known, unknown []string
	for i := range 5 {
		// One client (the proxy's entry is last; the first is the client's own).
		st, ra, body := signIn(demoUserEmail, "wrong", fmt.Sprintf("10.9.9.%d, 203.0.113.1", i))
		known = append(known, fmt.Sprint(st, " ", ra != "", " ", strings.Contains(body, "AUTH_RATE_LIMITED")))
		st, ra, body = signIn("nobody@example.com", "wrong", "203.0.113.2")
		unknown = append(unknown, fmt.Sprint(st, " ", ra != "", " ", strings.Contains(body, "AUTH_RATE_LIMITED")))
	}
	want := []string{"401 false false", "401 false false", "401 false false", "429 true true", "429 true true"}
	if fmt.Sprint(known) != fmt.Sprint(want) || fmt.Sprint(unknown) != fmt.Sprint(want) {
		t.Fatalf("known account %v, unknown %v; want %v for both", known, unknown, want)
	}
	if st, ra, _ := signIn(demoUserEmail, p.password, "203.0.113.3"); st != 429 || ra == "" {
		t.Fatalf("right password past the limit: %d Retry-After %q", st, ra)
	}
	// Client 203.0.113.1 has 3 attempts counted (refused ones do not
	// count): 5 more for new accounts pass, the next is refused whatever
	// entries the client puts before the proxy's.
	for i := range 6 {
		st, _, _ := signIn(fmt.Sprintf("user%d@example.com", i), "wrong", fmt.Sprintf("198.51.100.%d, 203.0.113.1", i))
		want := 401
		if i == 5 {
			want = 429
		}
		if st != want {
			t.Fatalf("new account %d from one client: %d, want %d", i+1, st, want)
		}
	}
	// Another client is not limited.
	if st, _, _ := signIn("user9@example.com", "wrong", "203.0.113.4"); st != 401 {
		t.Fatalf("another client: %d, want 401", st)
	}
	cancel()
	select {
	case res := <-exit:
		if res.code != 0 {
			t.Fatalf("serve exit %d: %s", res.code, res.stderr)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}
