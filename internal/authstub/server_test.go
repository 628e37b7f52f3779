package authstub

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/keys"
)

const (
	testUserID   = "11111111-1111-4111-8111-111111111111"
	testEmail    = "demo-user@example.com"
	testPhone    = "15550001111"
	testPassword = "right-password"
	testAPIKey   = "sb_publishable_test"
	// testChallenge is the S256 challenge of testVerifier.
	testChallenge = "aj9AXZ3Fr5MAa44sYY3qG1nsrrBYxWcK3-UV9IY5ARc"
	testVerifier  = "dBjftJeZ4CKP-1JOkEdeljyCgeTUyXUJ7P64SJOwPWE"
)

// testKeySet returns a key set of one new ES256 signing key.
func testKeySet(t *testing.T) *keys.Set {
	t.Helper()
	k, err := keys.NewJWK(keys.ES256)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal([]keys.JWK{k})
	ks, err := keys.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

// stubApp is a server started for one test, with one account (the user
// of testEmail and testPhone) and the codes it sent.
type stubApp struct {
	t      *testing.T
	url    string
	gotrue *Server

	mu   sync.Mutex
	sent []Sent
}

// startStub starts a server with testAPIKey and no wait between codes;
// mod, when set, changes its config first.
func startStub(t *testing.T, mod func(*Config)) *stubApp {
	t.Helper()
	a := &stubApp{t: t}
	cfg := Config{APIKey: testAPIKey, OTPInterval: -1,
		SentFunc: func(m Sent) { a.mu.Lock(); a.sent = append(a.sent, m); a.mu.Unlock() }}
	if mod != nil {
		mod(&cfg)
	}
	a.gotrue = Start(t, cfg)
	a.url = a.gotrue.URL()
	a.gotrue.AddAccount(Account{Token: keys.TokenSpec{Sub: testUserID, TTL: time.Hour}, Email: testEmail, Phone: testPhone, Password: testPassword})
	return a
}

// TestRefreshRotation: a used refresh token answers the current one for
// the reuse interval; reused later, it revokes the session.
func TestRefreshRotation(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s, err := New(Config{Keys: testKeySet(t), Issuer: "http://demo/auth/v1", APIKey: testAPIKey, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	_, rt1, err := s.SignIn(keys.TokenSpec{Sub: testUserID, TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	call := func(tok string) (int, map[string]any) {
		req := httptest.NewRequest("POST", "/auth/v1/token?grant_type=refresh_token", strings.NewReader(`{"refresh_token":"`+tok+`"}`))
		req.Header.Set("apikey", testAPIKey)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		return w.Code, m
	}
	code, m := call(rt1)
	rt2, _ := m["refresh_token"].(string)
	if code != http.StatusOK || rt2 == "" || rt2 == rt1 || m["expires_in"] != float64(60) {
		t.Fatalf("first refresh: %d %v", code, m)
	}
	now = now.Add(9 * time.Second)
	if code, m := call(rt1); code != 200 || m["refresh_token"] != rt2 {
		t.Fatalf("reuse inside the interval: %d %v", code, m)
	}
	now = now.Add(2 * time.Second)
	if code, m := call(rt1); code != 400 || m["code"] != "refresh_token_already_used" {
		t.Fatalf("reuse after the interval: %d %v", code, m)
	}
	// The reuse revoked the whole session, the current token included.
	if code, m := call(rt2); code != 400 || m["code"] != "session_not_found" {
		t.Fatalf("current token after revocation: %d %v", code, m)
	}
	if code, _ := call(""); code != 400 {
		t.Fatalf("empty token: %d", code)
	}
	for key, want := range map[string]int{"": 401, "sb_publishable_wrong": 401} {
		req := httptest.NewRequest("POST", "/auth/v1/token?grant_type=refresh_token", strings.NewReader(`{"refresh_token":"x"}`))
		if key != "" {
			req.Header.Set("apikey", key)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != want {
			t.Errorf("apikey %q: %d", key, w.Code)
		}
	}
}

// TestAuthorizeBurstIsBounded: /authorize needs no key; a burst past
// maxPending flow states is answered with GoTrue's rate-limit error
// instead of growing memory, and expired states make room again.
func TestAuthorizeBurstIsBounded(t *testing.T) {
	t.Parallel()
	now := time.Now()
	a := startStub(t, func(c *Config) { c.Now = func() time.Time { return now } })
	a.gotrue.mu.Lock()
	acct := a.gotrue.accounts[0]
	for i := 0; i < maxPending; i++ {
		a.gotrue.flows[keys.NewUUID()] = &flowState{challenge: "c", account: acct, expires: now.Add(flowStateTTL)}
	}
	a.gotrue.mu.Unlock()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func() string {
		resp, err := c.Get(a.url + "/auth/v1/authorize?provider=demo&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=s256")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Location")
	}
	if loc := get(); !strings.Contains(loc, "error_code=over_request_rate_limit") {
		t.Fatalf("burst past the bound: %s", loc)
	}
	// A challenge that is not PKCE's (RFC 7636: 43 to 128 unreserved
	// characters) is refused before it is stored: each flow state held a
	// challenge of up to 1 MB (the header limit), 10 GB at the bound.
	for _, ch := range []string{"x", strings.Repeat("A", 129), strings.Repeat("A", 42) + "+"} {
		resp, err := c.Get(a.url + "/auth/v1/authorize?provider=demo&code_challenge_method=s256&code_challenge=" + url.QueryEscape(ch))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); !strings.Contains(loc, "error_code=validation_failed") {
			t.Errorf("challenge of %d bytes: %s", len(ch), loc)
		}
	}
	now = now.Add(flowStateTTL + time.Second)
	if loc := get(); !strings.Contains(loc, "code=") || strings.Contains(loc, "error") {
		t.Fatalf("after expiry: %s", loc)
	}
	a.gotrue.mu.Lock()
	n := len(a.gotrue.flows)
	a.gotrue.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d flow states kept after pruning", n)
	}
}
