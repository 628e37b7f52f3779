package authflow

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/problem"
)

// resolve resolves a request carrying cookies.
func (b *bundle) resolve(cookies []*http.Cookie) authctx.Auth {
	return b.rv.Resolve(b.req("GET", "/", cookies)).Auth
}

// TestPasswordSignInWritesSSRSession: the request is the one auth-js
// sends, the cookies are ssrcookie.Write's (the refresh writer), and the
// resolver reads the user from them.
func TestPasswordSignInWritesSSRSession(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, cred := range []*PasswordCredentials{{Email: "a@example.com", Password: testPassword}, {Phone: "15550001111", Password: testPassword}} {
		w := httptest.NewRecorder()
		s, err := b.flows.SignInWithPassword(w, b.req("POST", "/auth/sign-in", nil), cred)
		if err != nil {
			t.Fatal(err)
		}
		got := b.gt.last()
		want := `{"email":"a@example.com","password":"correct horse battery staple","gotrue_meta_security":{}}`
		if cred.Phone != "" {
			want = `{"phone":"15550001111","password":"correct horse battery staple","gotrue_meta_security":{}}`
		}
		if got.Path != "/token" || got.Query != "grant_type=password" || got.Body != want {
			t.Fatalf("request %s?%s %s", got.Path, got.Query, got.Body)
		}
		for k, v := range map[string]string{"Apikey": testKey, "Authorization": "Bearer " + testKey,
			"Content-Type": "application/json;charset=UTF-8", "X-Supabase-Api-Version": "2024-01-01"} {
			if got.Header.Get(k) != v {
				t.Errorf("header %s = %q, want %q", k, got.Header.Get(k), v)
			}
		}
		if w.Header().Get("Cache-Control") != "private, no-cache, no-store, must-revalidate, max-age=0" {
			t.Errorf("Cache-Control %q", w.Header().Get("Cache-Control"))
		}
		wantSet, _ := ssrcookie.Write(b.cookie, s.Raw, nil, ssrcookie.Options{})
		if lines := w.Header().Values("Set-Cookie"); len(lines) != 1 || lines[0] != ssrcookie.Serialize(wantSet[0]) {
			t.Fatalf("Set-Cookie %q", lines)
		}
		// Go's HTML escaping must not reach the cookie (JSON.stringify keeps < > &).
		if !strings.Contains(string(s.Raw), `"Zoë <a&b>"`) {
			t.Errorf("session JSON not printed like JSON.stringify: %s", s.Raw)
		}
		a := b.resolve(jar(nil, w))
		if a.Kind != authctx.KindUser || a.User.ID != testUser {
			t.Fatalf("resolved %+v", a)
		}
	}
}

// TestTokensOnlyWritesSessionWithoutUser: Config.TokensOnly drops the
// user object, keeps the member order, and the resolver still reads it.
func TestTokensOnlyWritesSessionWithoutUser(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.TokensOnly = true })
	w := httptest.NewRecorder()
	if _, err := b.flows.SignInWithPassword(w, b.req("POST", "/", nil), &PasswordCredentials{Email: "a@example.com", Password: testPassword}); err != nil {
		t.Fatal(err)
	}
	cookies := jar(nil, w)
	raw, err := ssrcookie.Read(cookies, b.cookie)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), `"user"`) || !strings.HasPrefix(string(raw), `{"access_token":"`) ||
		!strings.Contains(string(raw), `"token_type":"bearer","expires_in":3600,"expires_at":`) {
		t.Fatalf("tokens-only value %s", raw)
	}
	if a := b.resolve(cookies); a.Kind != authctx.KindUser {
		t.Fatalf("resolved %+v", a)
	}
}

// TestErrorClassesMapToProblems: every auth server error class becomes
// its Problem (status, code, Retry-After), for every flow, and no body
// or error text carries the password, code or verifier.
func TestErrorClassesMapToProblems(t *testing.T) {
	t.Parallel()
	cases := []struct {
		status     int
		code       string
		header     string
		wantStatus int
		wantCode   problem.Code
		retryAfter string
	}{
		{400, "invalid_credentials", "", 401, CodeInvalidCredentials, ""},
		{400, "email_not_confirmed", "", 403, CodeNotConfirmed, ""},
		{400, "phone_not_confirmed", "", 403, CodeNotConfirmed, ""},
		{429, "over_request_rate_limit", "17", 429, CodeRateLimited, "17"},
		{429, "over_email_send_rate_limit", "", 429, CodeRateLimited, "60"},
		{429, "", "", 429, CodeRateLimited, "60"},
		{403, "flow_state_expired", "", 400, CodeFlowInvalid, ""},
		{404, "flow_state_not_found", "", 400, CodeFlowInvalid, ""},
		{400, "bad_code_verifier", "", 400, CodeFlowInvalid, ""},
		{403, "otp_expired", "", 401, CodeOTPInvalid, ""},
		{400, "user_banned", "", 403, CodeUserBanned, ""},
		{422, "signup_disabled", "", 403, CodeMethodDisabled, ""},
		{422, "weak_password", "", 422, CodeWeakPassword, ""},
		{400, "validation_failed", "", 400, CodeInvalidInput, ""},
		{400, "something_new", "", 400, CodeRejected, ""},
		{500, "unexpected_failure", "", 503, CodeUnavailable, "5"},
		{503, "", "", 503, CodeUnavailable, "5"},
		{502, "", "", 503, CodeUnavailable, "5"},
	}
	// Every answer is asked for many times: no attempt limit here.
	b := setup(t, func(c *Config) { c.AttemptsPerAccount, c.AttemptsPerAddress = -1, -1 })
	secret := "hunter2-secret-password"
	flows := map[string]func(w http.ResponseWriter) error{
		"password": func(w http.ResponseWriter) error {
			_, err := b.flows.SignInWithPassword(w, b.req("POST", "/", nil), &PasswordCredentials{Email: "a@example.com", Password: secret})
			return err
		},
		"otp": func(w http.ResponseWriter) error {
			return b.flows.SendOTP(w, b.req("POST", "/", nil), &OTPRequest{Email: "a@example.com"})
		},
		"verify": func(w http.ResponseWriter) error {
			_, err := b.flows.VerifyOTP(w, b.req("POST", "/", nil), &VerifyRequest{Email: "a@example.com", Token: secret, Type: "email"})
			return err
		},
		"pkce exchange": func(w http.ResponseWriter) error {
			sw := httptest.NewRecorder()
			if _, err := b.flows.StartOAuth(sw, b.req("GET", "/", nil), &OAuthRequest{Provider: "github"}); err != nil {
				return err
			}
			_, err := b.flows.ExchangeCode(w, b.req("GET", "/auth/callback", jar(nil, sw)), secret, "")
			return err
		},
	}
	session := b.signedIn()
	signOut := func(w http.ResponseWriter) error {
		return b.flows.SignOut(w, b.req("POST", "/", session), &SignOutOpts{Scope: "global"})
	}
	for _, tc := range cases {
		if tc.status != 401 && tc.status != 403 && tc.status != 404 {
			// (those mean "already signed out" to a sign-out, as in auth-js)
			flows["sign-out global"] = signOut
		} else {
			delete(flows, "sign-out global")
		}
		h := func(w http.ResponseWriter, r *http.Request) {
			if tc.header != "" {
				w.Header().Set("Retry-After", tc.header)
			}
			if tc.code == "" {
				w.WriteHeader(tc.status)
				return
			}
			gotrueErr(w, tc.status, tc.code, "message that quotes "+secret)
		}
		b.gt.set("/token", h)
		b.gt.set("/otp", h)
		b.gt.set("/verify", h)
		b.gt.set("/logout", h)
		for name, run := range flows {
			w := httptest.NewRecorder()
			err := run(w)
			p, ok := problem.As(err)
			if !ok {
				t.Fatalf("%s %d %s: err %v is not a Problem", name, tc.status, tc.code, err)
			}
			problem.Write(w, p)
			if w.Code != tc.wantStatus || p.Code != tc.wantCode {
				t.Errorf("%s %d %s: got %d %s, want %d %s", name, tc.status, tc.code, w.Code, p.Code, tc.wantStatus, tc.wantCode)
			}
			if got := w.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("%s %d %s: Retry-After %q, want %q", name, tc.status, tc.code, got, tc.retryAfter)
			}
			if strings.Contains(w.Body.String(), secret) || strings.Contains(err.Error(), secret) {
				t.Errorf("%s %d %s: the secret is echoed: %s", name, tc.status, tc.code, w.Body.String())
			}
			if len(w.Header().Values("Set-Cookie")) != 0 && name != "otp" && name != "pkce exchange" {
				t.Errorf("%s: a failed sign-in wrote cookies: %q", name, w.Header().Values("Set-Cookie"))
			}
		}
	}
}

// TestSlowAuthServerIsBounded: an auth server slower than Config.Timeout
// gives 503 AUTH_UNAVAILABLE within the bound, for every flow.
func TestSlowAuthServerIsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Timeout = 150 * time.Millisecond })
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(30 * time.Second): // far beyond the bound checked below
		case <-r.Context().Done():
		}
	}
	sess := b.signedIn()
	for _, p := range []string{"/token", "/otp", "/verify", "/logout"} {
		b.gt.set(p, slow)
	}
	runs := map[string]func(w http.ResponseWriter) error{
		"password": func(w http.ResponseWriter) error {
			_, err := b.flows.SignInWithPassword(w, b.req("POST", "/", nil), &PasswordCredentials{Email: "a@example.com", Password: "x"})
			return err
		},
		"otp": func(w http.ResponseWriter) error {
			return b.flows.SendOTP(w, b.req("POST", "/", nil), &OTPRequest{Phone: "15550001111"})
		},
		"verify": func(w http.ResponseWriter) error {
			_, err := b.flows.VerifyOTP(w, b.req("POST", "/", nil), &VerifyRequest{TokenHash: "h", Type: "email"})
			return err
		},
		"sign-out global": func(w http.ResponseWriter) error {
			return b.flows.SignOut(w, b.req("POST", "/", sess), nil)
		},
		"pkce exchange": func(w http.ResponseWriter) error {
			sw := httptest.NewRecorder()
			if _, err := b.flows.StartOAuth(sw, b.req("GET", "/", nil), &OAuthRequest{Provider: "github"}); err != nil {
				return err
			}
			_, err := b.flows.ExchangeCode(w, b.req("GET", "/auth/callback", jar(nil, sw)), "code", "")
			return err
		},
	}
	for name, run := range runs {
		start := time.Now()
		err := run(httptest.NewRecorder())
		el := time.Since(start)
		p, _ := problem.As(err)
		if p == nil || p.Code != CodeUnavailable || p.Status != 503 {
			t.Errorf("%s: %v, want 503 AUTH_UNAVAILABLE", name, err)
		}
		if el > 10*time.Second {
			t.Errorf("%s took %v with a 150ms bound", name, el)
		}
	}
}

// signedIn returns the cookies of a fresh session.
func (b *bundle) signedIn() []*http.Cookie {
	b.t.Helper()
	w := httptest.NewRecorder()
	if _, err := b.flows.SignInWithPassword(w, b.req("POST", "/", nil), &PasswordCredentials{Email: "a@example.com", Password: testPassword}); err != nil {
		b.t.Fatal(err)
	}
	return jar(nil, w)
}

// TestOAuthPKCERoundTrip: StartOAuth stores the verifier in auth-js's
// three slots and builds the authorize URL; the callback exchanges the
// code with that verifier, writes the session and clears the slots.
func TestOAuthPKCERoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	w := httptest.NewRecorder()
	u, err := b.flows.StartOAuth(w, b.req("GET", "/auth/oauth", nil), &OAuthRequest{Provider: "github", Next: "/account?tab=1", Scopes: "read:user repo"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u, b.gt.URL()+"/auth/v1/authorize?provider=github&redirect_to=") ||
		!strings.Contains(u, "&scopes=read%3Auser%20repo&code_challenge=") || !strings.HasSuffix(u, "&code_challenge_method=s256") {
		t.Fatalf("authorize URL %s", u)
	}
	q := queryOf(t, u)
	redirect := q.Get("redirect_to")
	rq := queryOf(t, redirect)
	flowID := rq.Get(FlowIDParam)
	if !strings.HasPrefix(redirect, "https://app.example.com/auth/callback?") || rq.Get("next") != "https://app.example.com/account?tab=1" || len(flowID) != 32 {
		t.Fatalf("redirect_to %s", redirect)
	}
	cookies := jar(nil, w)
	if got := strings.Join(names(cookies), ","); got != strings.Join([]string{flowVerifierCookieName(b.cookie, flowID), flowIndexCookieName(b.cookie), verifierCookieName(b.cookie)}, ",") {
		t.Fatalf("cookies %s", got)
	}
	var h []string
	for _, c := range cookies {
		h = append(h, c.Name+"="+c.Value)
	}
	verifier, pending := parseCallbackCookies([]string{strings.Join(h, "; ")}, b.cookie, flowID)
	sum := sha256.Sum256([]byte(verifier))
	if len(verifier) != 112 || base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || len(pending) != 1 || pending[0] != flowID {
		t.Fatalf("verifier %q pending %v", verifier, pending)
	}
	b.gt.AddAuthCode("the-auth-code", q.Get("code_challenge"))

	cw := httptest.NewRecorder()
	b.flows.ServeCallback(cw, b.req("GET", "/auth/callback?"+rq.Encode()+"&code=the-auth-code", cookies))
	if cw.Code != http.StatusSeeOther || cw.Header().Get("Location") != "https://app.example.com/account?tab=1" {
		t.Fatalf("callback %d %s %s", cw.Code, cw.Header().Get("Location"), cw.Body)
	}
	if got := b.gt.last(); got.Query != "grant_type=pkce" || got.Body != `{"auth_code":"the-auth-code","code_verifier":"`+verifier+`"}` {
		t.Fatalf("exchange %s %s", got.Query, got.Body)
	}
	after := jar(cookies, cw)
	if got := strings.Join(names(after), ","); got != b.cookie {
		t.Fatalf("after the callback the cookies are %s, want only the session", got)
	}
	if a := b.resolve(after); a.Kind != authctx.KindUser {
		t.Fatalf("resolved %+v", a)
	}
	// HEAD (link checkers, prefetchers) never spends a code.
	n0 := b.gt.count()
	hw := httptest.NewRecorder()
	b.flows.ServeCallback(hw, b.req("HEAD", "/auth/callback?code=x", cookies))
	if hw.Code != 405 || b.gt.count() != n0 {
		t.Fatalf("HEAD callback: %d", hw.Code)
	}
	// The code is single-use and the verifier is gone: replaying the
	// callback fails without a call.
	n := b.gt.count()
	rw := httptest.NewRecorder()
	b.flows.ServeCallback(rw, b.req("GET", "/auth/callback?"+rq.Encode()+"&code=the-auth-code", after))
	if rw.Code != 400 || !strings.Contains(rw.Body.String(), string(CodeFlowInvalid)) || b.gt.count() != n {
		t.Fatalf("replay %d %s (%d calls)", rw.Code, rw.Body, b.gt.count()-n)
	}
}

// TestPKCEFlowRing: at most five flows wait; a sixth evicts the oldest
// slot; a callback without sb_flow_id uses the legacy slot (newest flow).
func TestPKCEFlowRing(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var cookies []*http.Cookie
	var ids []string
	for i := 0; i < 6; i++ {
		w := httptest.NewRecorder()
		u, err := b.flows.StartOAuth(w, b.req("GET", "/", cookies), &OAuthRequest{Provider: "github"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, queryOf(t, queryOf(t, u).Get("redirect_to")).Get(FlowIDParam))
		cookies = jar(cookies, w)
	}
	raw, _ := ssrcookie.Read(cookies, flowIndexCookieName(b.cookie))
	want, _ := json.Marshal(ids[1:])
	if string(raw) != string(want) {
		t.Fatalf("index %s, want %s", raw, want)
	}
	for _, c := range cookies {
		if c.Name == flowVerifierCookieName(b.cookie, ids[0]) {
			t.Fatalf("the oldest slot was not evicted")
		}
	}
	if len(cookies) != 7 { // 5 slots, index, legacy
		t.Fatalf("%d cookies: %v", len(cookies), names(cookies))
	}
	legacy, _ := readVerifier(cookies, b.cookie, "")
	newest, _ := readVerifier(cookies, b.cookie, ids[5])
	if legacy == "" || legacy != newest {
		t.Fatalf("legacy slot %q, newest %q", legacy, newest)
	}
	// Finishing flow 3 (by id) leaves the others pending.
	sum := sha256.Sum256([]byte(mustVerifier(t, cookies, b.cookie, ids[3])))
	b.gt.AddAuthCode("c3", base64.RawURLEncoding.EncodeToString(sum[:]))
	w := httptest.NewRecorder()
	b.flows.ServeCallback(w, b.req("GET", "/auth/callback?code=c3&sb_flow_id="+ids[3], cookies))
	if w.Code != 303 {
		t.Fatalf("callback %d %s", w.Code, w.Body)
	}
	cookies = jar(cookies, w)
	raw, _ = ssrcookie.Read(cookies, flowIndexCookieName(b.cookie))
	want, _ = json.Marshal([]string{ids[1], ids[2], ids[4], ids[5]})
	if string(raw) != string(want) {
		t.Fatalf("index after finishing flow 3: %s", raw)
	}
}

func mustVerifier(t *testing.T, cookies []*http.Cookie, name, id string) string {
	t.Helper()
	v, _ := readVerifier(cookies, name, id)
	if v == "" {
		t.Fatalf("no verifier for %s", id)
	}
	return v
}

// TestSignOutScopes: local and global clear the session and verifier
// cookies, set the marker, and the next request resolves anon/signed_out;
// others keeps this session; a session unknown to the server counts as
// signed out; an unreachable server clears locally only for "local".
func TestSignOutScopes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, scope := range []string{"local", "global", ""} {
		cookies := b.signedIn()
		w := httptest.NewRecorder()
		if err := b.flows.SignOut(w, b.req("POST", "/auth/sign-out", cookies), &SignOutOpts{Scope: scope}); err != nil {
			t.Fatalf("%q: %v", scope, err)
		}
		want := scope
		if want == "" {
			want = "global"
		}
		if got := b.gt.last(); got.Path != "/logout" || got.Query != "scope="+want || !strings.HasPrefix(got.Header.Get("Authorization"), "Bearer ey") {
			t.Fatalf("%q: logout call %s?%s", scope, got.Path, got.Query)
		}
		after := jar(cookies, w)
		if got := strings.Join(names(after), ","); got != authctx.SignedOutCookieName(b.cookie) {
			t.Fatalf("%q: cookies after sign-out %s", scope, got)
		}
		if a := b.resolve(after); a.Kind != authctx.KindAnon || a.Reason != authctx.ReasonSignedOut {
			t.Fatalf("%q: next request %+v, want anon/signed_out", scope, a)
		}
		// Signing in again deletes the marker.
		w = httptest.NewRecorder()
		if _, err := b.flows.SignInWithPassword(w, b.req("POST", "/", after), &PasswordCredentials{Email: "a@example.com", Password: testPassword}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(names(jar(after, w)), ","); got != b.cookie {
			t.Fatalf("after a new sign-in: %s", got)
		}
	}
	cookies := b.signedIn()
	w := httptest.NewRecorder()
	if err := b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "others"}); err != nil {
		t.Fatal(err)
	}
	if len(w.Header().Values("Set-Cookie")) != 0 || b.resolve(jar(cookies, w)).Kind != authctx.KindUser {
		t.Fatalf("others: %q", w.Header().Values("Set-Cookie"))
	}
	// The server forgot the session already (403 session_not_found): still signed out here.
	w = httptest.NewRecorder()
	_ = b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "local"})
	w = httptest.NewRecorder()
	if err := b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "global"}); err != nil {
		t.Fatalf("unknown session: %v", err)
	}
	// Unreachable server.
	b.gt.set("/logout", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(502) })
	cookies = b.signedIn()
	w = httptest.NewRecorder()
	if err := b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "global"}); err == nil || len(w.Header().Values("Set-Cookie")) != 0 {
		t.Fatalf("global with the server down: %v %q", err, w.Header().Values("Set-Cookie"))
	}
	w = httptest.NewRecorder()
	if err := b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "local"}); err != nil || b.resolve(jar(cookies, w)).Reason != authctx.ReasonSignedOut {
		t.Fatalf("local with the server down: %v", err)
	}
	if err := b.flows.SignOut(httptest.NewRecorder(), b.req("POST", "/", nil), &SignOutOpts{Scope: "everything"}); err == nil {
		t.Fatal("unknown scope accepted")
	}
}

// TestSignOutRefreshesExpiredToken: an expired access token is refreshed
// first so /logout can revoke the session server-side.
func TestSignOutRefreshesExpiredToken(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.gt.SetTokenTTL(10 * time.Second) // inside auth-js's 90 s margin
	cookies := b.signedIn()
	b.gt.SetTokenTTL(0)
	n := b.gt.count()
	if err := b.flows.SignOut(httptest.NewRecorder(), b.req("POST", "/", cookies), nil); err != nil {
		t.Fatal(err)
	}
	if calls := b.gt.Calls(); len(calls)-n != 2 || calls[n].Query != "grant_type=refresh_token" {
		t.Fatalf("calls %+v", calls[n:])
	}
	// "others" keeps this session: the refreshed one is stored, since the
	// old refresh token is spent.
	b.gt.SetTokenTTL(10 * time.Second)
	cookies = b.signedIn()
	b.gt.SetTokenTTL(0)
	w := httptest.NewRecorder()
	if err := b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "others"}); err != nil {
		t.Fatal(err)
	}
	after := jar(cookies, w)
	old, _ := ssrsession.Read(cookies, b.cookie)
	now, ok := ssrsession.Read(after, b.cookie)
	if !ok || now.RefreshToken == old.RefreshToken || b.resolve(after).Kind != authctx.KindUser {
		t.Fatalf("others with an expiring token: refreshed session not stored (%v)", ok)
	}
	// A session the server no longer refreshes is cleared even for "others".
	b.gt.SetTokenTTL(10 * time.Second)
	cookies = b.signedIn()
	b.gt.SetTokenTTL(0)
	b.gt.set("/token", func(w http.ResponseWriter, r *http.Request) {
		gotrueErr(w, 400, "refresh_token_not_found", "Invalid Refresh Token: Refresh Token Not Found")
	})
	w = httptest.NewRecorder()
	if err := b.flows.SignOut(w, b.req("POST", "/", cookies), &SignOutOpts{Scope: "others"}); err != nil {
		t.Fatal(err)
	}
	if a := b.resolve(jar(cookies, w)); a.Reason != authctx.ReasonSignedOut {
		t.Fatalf("rejected refresh during sign-out: %+v", a)
	}
}

// TestCrossSitePostsRefused: every cookie-writing flow refuses a
// cross-site unsafe request (login CSRF, sign-out CSRF), unless the
// origin is trusted.
func TestCrossSitePostsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.TrustedOrigins = []string{"https://partner.example.org"} })
	cookies := b.signedIn()
	n := b.gt.count()
	cross := func() *http.Request {
		r := b.req("POST", "/auth/sign-out", cookies)
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		r.Header.Set("Origin", "https://evil.example.net")
		return r
	}
	calls := map[string]func(w http.ResponseWriter, r *http.Request) error{
		"password": func(w http.ResponseWriter, r *http.Request) error {
			_, err := b.flows.SignInWithPassword(w, r, &PasswordCredentials{Email: "a@example.com", Password: testPassword})
			return err
		},
		"otp": func(w http.ResponseWriter, r *http.Request) error {
			return b.flows.SendOTP(w, r, &OTPRequest{Email: "a@example.com"})
		},
		"sign-out": func(w http.ResponseWriter, r *http.Request) error { return b.flows.SignOut(w, r, nil) },
		"verify": func(w http.ResponseWriter, r *http.Request) error {
			_, err := b.flows.VerifyOTP(w, r, &VerifyRequest{TokenHash: "good-hash", Type: "email"})
			return err
		},
	}
	for name, run := range calls {
		w := httptest.NewRecorder()
		p, _ := problem.As(run(w, cross()))
		if p == nil || p.Code != problem.CodeCrossSiteRequest || len(w.Header().Values("Set-Cookie")) != 0 {
			t.Errorf("%s: %v", name, p)
		}
	}
	// The form handler too.
	hw := httptest.NewRecorder()
	r := cross()
	r.Body = http.NoBody
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	b.flows.Handler().ServeHTTP(hw, r)
	if hw.Code != 403 {
		t.Errorf("handler sign-out cross-site: %d", hw.Code)
	}
	if b.gt.count() != n {
		t.Fatalf("a cross-site request reached the auth server")
	}
	r = b.req("POST", "/", cookies)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	r.Header.Set("Origin", "https://partner.example.org")
	if err := b.flows.SignOut(httptest.NewRecorder(), r, nil); err != nil {
		t.Errorf("trusted origin refused: %v", err)
	}
}

// TestOpenRedirectsRefused: next/redirect targets stay on the site or
// the configured URLs.
func TestOpenRedirectsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	good := map[string]string{
		"/account":                                  "https://app.example.com/account",
		"/a/b?x=1#frag":                             "https://app.example.com/a/b?x=1#frag",
		"https://app.example.com/deep/link":         "https://app.example.com/deep/link",
		"https://admin.example.com/console/users/1": "https://admin.example.com/console/users/1",
		"https://admin.example.com/console":         "https://admin.example.com/console",
	}
	for in, want := range good {
		if got, ok := b.flows.SafeRedirect(in); !ok || got != want {
			t.Errorf("SafeRedirect(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{
		"", "//evil.example.net", "///evil.example.net", "/\\evil.example.net", "\\\\evil.example.net",
		"https://evil.example.net/", "http://app.example.com.evil.net/", "https://app.example.com@evil.net/",
		"https://user:pw@app.example.com/", "javascript:alert(1)", "data:text/html,x", "evil.example.net",
		"https://admin.example.com/consoleX", "https://admin.example.com/", "/%0d%0aSet-Cookie:x=1", "/a\r\nb",
		"/ok\x00", "http://[::1]:80/", "ftp://app.example.com/", "https:evil.example.net", strings.Repeat("/a", 2000),
		// Dot segments a browser resolves out of the allowed path.
		"https://admin.example.com/console/../users", "https://admin.example.com/console/%2e%2e/users",
		"https://admin.example.com/console/%2E%2E%2Fusers", "https://admin.example.com/console/./../x", "/a/../b", "/%2e%2e/b",
	} {
		if got, ok := b.flows.SafeRedirect(bad); ok || got != "https://app.example.com/" {
			if bad == "/%0d%0aSet-Cookie:x=1" && ok && !strings.ContainsAny(got, "\r\n") {
				continue // percent-encoded stays encoded in the path: harmless
			}
			t.Errorf("SafeRedirect(%q) = %q %v, want the site root", bad, got, ok)
		}
	}
	// The callback and the sign-out route never redirect off-site.
	cookies := b.signedIn()
	form := url.Values{"next": {"//evil.example.net/x"}}
	r := b.req("POST", "/auth/sign-out", cookies)
	r.Body = http.NoBody
	r = httptest.NewRequest("POST", b.site+"/auth/sign-out", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	w := httptest.NewRecorder()
	b.flows.Handler().ServeHTTP(w, r)
	if w.Code != 303 || w.Header().Get("Location") != "https://app.example.com/" {
		t.Fatalf("sign-out next: %d %s", w.Code, w.Header().Get("Location"))
	}
	w = httptest.NewRecorder()
	b.flows.ServeCallback(w, b.req("GET", "/auth/callback?token_hash="+b.tokenHash()+"&type=email&next=https%3A%2F%2Fevil.example.net", nil))
	if w.Code != 303 || w.Header().Get("Location") != "https://app.example.com/" {
		t.Fatalf("callback next: %d %s", w.Code, w.Header().Get("Location"))
	}
	// StartOAuth never puts a foreign next into redirect_to.
	u, _ := b.flows.StartOAuth(httptest.NewRecorder(), b.req("GET", "/", nil), &OAuthRequest{Provider: "github", Next: "https://evil.example.net"})
	if strings.Contains(u, "evil") {
		t.Fatalf("authorize URL carries the foreign next: %s", u)
	}
}

// TestVerifierCookieInjection: malformed flow ids, index entries and
// verifier values never name a cookie nor reach the auth server.
func TestVerifierCookieInjection(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	enc := func(v string) string { return "base64-" + base64.RawURLEncoding.EncodeToString([]byte(v)) }
	n := b.gt.count()
	for _, tc := range []struct {
		name, query string
		cookies     []*http.Cookie
	}{
		{"flow id with a dot", "code=c&sb_flow_id=abcdefgh.0", nil},
		{"flow id too short", "code=c&sb_flow_id=abc", nil},
		{"flow id with a semicolon", "code=c&sb_flow_id=abcdefgh%3Bx%3D1", nil},
		{"repeated code", "code=a&code=b", nil},
		{"verifier with a space", "code=c", []*http.Cookie{{Name: verifierCookieName(b.cookie), Value: enc(`"abc def"`)}}},
		{"verifier not a string", "code=c", []*http.Cookie{{Name: verifierCookieName(b.cookie), Value: enc(`{"v":1}`)}}},
		{"verifier too long", "code=c", []*http.Cookie{{Name: verifierCookieName(b.cookie), Value: enc(`"` + strings.Repeat("a", 300) + `"`)}}},
		{"slot of another flow", "code=c&sb_flow_id=bbbbbbbbbbbbbbbb", []*http.Cookie{{Name: flowVerifierCookieName(b.cookie, "aaaaaaaaaaaaaaaa"), Value: enc(`"abc"`)}}},
	} {
		w := httptest.NewRecorder()
		b.flows.ServeCallback(w, b.req("GET", "/auth/callback?"+tc.query, tc.cookies))
		if w.Code != 400 {
			t.Errorf("%s: %d %s", tc.name, w.Code, w.Body)
		}
	}
	if b.gt.count() != n {
		t.Fatalf("%d calls reached the auth server", b.gt.count()-n)
	}
	// Bogus index entries are ignored, valid ones kept.
	idx := enc(`["../../etc","aaaaaaaaaaaaaaaa",7,"b b b b b b b b"]`)
	_, pending := parseCallbackCookies([]string{flowIndexCookieName(b.cookie) + "=" + idx}, b.cookie, "")
	if len(pending) != 1 || pending[0] != "aaaaaaaaaaaaaaaa" {
		t.Fatalf("pending %v", pending)
	}
}

// TestOTPSendStartsPKCEAndMagicLinkLands: an email OTP starts a PKCE
// flow; the magic link lands on the callback with a code, which is
// exchanged with the stored verifier. A failed send drops the verifier.
func TestOTPSendStartsPKCEAndMagicLinkLands(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	w := httptest.NewRecorder()
	if err := b.flows.SendOTP(w, b.req("POST", "/auth/otp", nil), &OTPRequest{Email: "a@example.com", Next: "/inbox"}); err != nil {
		t.Fatal(err)
	}
	got := b.gt.last()
	if !strings.HasPrefix(got.Body, `{"email":"a@example.com","data":{},"create_user":true,"gotrue_meta_security":{},"code_challenge":"`) ||
		!strings.HasSuffix(got.Body, `","code_challenge_method":"s256"}`) {
		t.Fatalf("otp body %s", got.Body)
	}
	cookies := jar(nil, w)
	landing := b.followLink(b.gt.lastSent(t).Link)
	cw := httptest.NewRecorder()
	b.flows.ServeCallback(cw, b.req("GET", strings.TrimPrefix(landing, b.site), cookies))
	if cw.Code != 303 || cw.Header().Get("Location") != "https://app.example.com/inbox" {
		t.Fatalf("magic link callback %d %s %s", cw.Code, cw.Header().Get("Location"), cw.Body)
	}
	if a := b.resolve(jar(cookies, cw)); a.Kind != authctx.KindUser {
		t.Fatalf("resolved %+v", a)
	}
	// Phone OTP body, then a token hash callback and a typed code.
	if err := b.flows.SendOTP(httptest.NewRecorder(), b.req("POST", "/", nil), &OTPRequest{Phone: "15550001111"}); err != nil {
		t.Fatal(err)
	}
	if got := b.gt.last().Body; got != `{"phone":"15550001111","data":{},"create_user":true,"gotrue_meta_security":{},"channel":"sms"}` {
		t.Fatalf("phone otp body %s", got)
	}
	hash := b.gt.lastSent(t).TokenHash
	vw := httptest.NewRecorder()
	b.flows.ServeCallback(vw, b.req("GET", "/auth/callback?token_hash="+hash+"&type=magiclink", nil))
	if vw.Code != 303 || b.gt.last().Body != `{"token_hash":"`+hash+`","type":"magiclink","gotrue_meta_security":{}}` {
		t.Fatalf("token hash callback %d %s", vw.Code, b.gt.last().Body)
	}
	if err := b.flows.SendOTP(httptest.NewRecorder(), b.req("POST", "/", nil), &OTPRequest{Phone: "15550001111"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.flows.VerifyOTP(httptest.NewRecorder(), b.req("POST", "/", nil), &VerifyRequest{Phone: "15550001111", Token: b.gt.lastSent(t).Code, Type: "sms"}); err != nil {
		t.Fatal(err)
	}
	// A failed send removes the new verifier (no cookie survives).
	b.gt.set("/otp", func(w http.ResponseWriter, r *http.Request) {
		gotrueErr(w, 429, "over_email_send_rate_limit", "slow down")
	})
	fw := httptest.NewRecorder()
	if err := b.flows.SendOTP(fw, b.req("POST", "/", nil), &OTPRequest{Email: "a@example.com"}); err == nil {
		t.Fatal("rate limit not reported")
	}
	if left := jar(nil, fw); len(left) != 0 {
		t.Fatalf("cookies after a failed send: %v", names(left))
	}
	// The auth server redirected with an error: a Problem, slot cleared.
	ew := httptest.NewRecorder()
	b.flows.ServeCallback(ew, b.req("GET", "/auth/callback?error=access_denied&error_code=otp_expired&error_description=Email+link+is+invalid", cookies))
	if ew.Code != 401 || !strings.Contains(ew.Body.String(), string(CodeOTPInvalid)) {
		t.Fatalf("error callback %d %s", ew.Code, ew.Body)
	}
}

func TestNewValidates(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]*Config{
		"nil":               nil,
		"no key":            {ProjectURL: "http://x", SiteURL: "http://app"},
		"no site":           {ProjectURL: "http://x", PublishableKey: "k"},
		"bad project":       {ProjectURL: "ftp://x", PublishableKey: "k", SiteURL: "http://app"},
		"site query":        {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app/?a=1"},
		"relative allow":    {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", RedirectURLs: []string{"/x"}},
		"base path":         {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "auth/"},
		"base path /auth/":  {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/auth/"},
		"base path /":       {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/"},
		"base path //auth":  {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "//auth"},
		"base path /a//b":   {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/a//b"},
		"base path /a/../b": {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/a/../b"},
		"base path /a/./b":  {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/a/./b"},
		"base path /{x}":    {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/{x}"},
		"base path /a b":    {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/a b"},
		"base path /a%2fb":  {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/a%2fb"},
		"base path /aü":     {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: "/aü"},
		"site userinfo":     {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://u:p@app"},
		"site dots":         {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app/a/../b"},
		"ftp allow":         {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", RedirectURLs: []string{"ftp://files/x"}},
		"allow dots":        {ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", RedirectURLs: []string{"https://h/a/%2e%2e"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	f, err := New(&Config{ProjectURL: "http://127.0.0.1:54321", PublishableKey: "k", SiteURL: "http://localhost:3000"})
	if err != nil || f.CookieName() != "sb-127-auth-token" || f.CallbackURL() != "http://localhost:3000/auth/callback" {
		t.Fatalf("%v %s %s", err, f.CookieName(), f.CallbackURL())
	}
	for _, bp := range []string{"/auth", "/api/v1/auth", "/a-b_c.d~e"} {
		f, err := New(&Config{ProjectURL: "http://x", PublishableKey: "k", SiteURL: "http://app", BasePath: bp})
		if err != nil || f.CallbackURL() != "http://app"+bp+"/callback" {
			t.Errorf("BasePath %s: %v", bp, err)
			continue
		}
		_ = f.Handler() // registers its routes without a panic
	}
	_ = context.Background
}

// TestHandlerWrongMethod: another method on a flow's path is a Problem
// 405 with the Allow header, and never reaches the auth server.
func TestHandlerWrongMethod(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	h := b.flows.Handler()
	n := b.gt.count()
	for _, c := range []struct{ method, path, allow string }{
		{"GET", "/auth/sign-in", "POST"}, {"PUT", "/auth/otp", "POST"}, {"GET", "/auth/verify", "POST"},
		{"DELETE", "/auth/sign-out", "POST"}, {"POST", "/auth/oauth", "GET, HEAD"}, {"POST", "/auth/callback", "GET"},
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, b.req(c.method, c.path, nil))
		if w.Code != 405 || w.Header().Get("Allow") != c.allow || w.Header().Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s %s: %d Allow %q %s %s", c.method, c.path, w.Code, w.Header().Get("Allow"), w.Header().Get("Content-Type"), w.Body)
		}
	}
	// Paths that are no flow stay unanswered (404), for the app to serve.
	w := httptest.NewRecorder()
	h.ServeHTTP(w, b.req("GET", "/auth/profile", nil))
	if w.Code != 404 {
		t.Errorf("GET /auth/profile: %d", w.Code)
	}
	if b.gt.count() != n {
		t.Fatal("a wrong method reached the auth server")
	}
}

// tokenHash has the auth server send a code and link to a@example.com and
// returns the link's token hash.
func (b *bundle) tokenHash() string {
	b.t.Helper()
	if err := b.flows.SendOTP(httptest.NewRecorder(), b.req("POST", "/", nil), &OTPRequest{Email: "a@example.com"}); err != nil {
		b.t.Fatal(err)
	}
	return b.gt.lastSent(b.t).TokenHash
}

// followLink opens a magic link at the auth server as a browser does and
// returns where it redirects (the callback, with an auth code).
func (b *bundle) followLink(link string) string {
	b.t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(link)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		b.t.Fatalf("magic link: %d to %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	return resp.Header.Get("Location")
}
