package authstub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/keys"
)

// TestAuthorizeFloodFromOneAddress: /authorize needs no key and each
// call holds a flow state for 5 minutes. 10 050 calls from one client
// address (in-process, so that it has its own address) hold at most
// maxPendingPerAddress states and are then refused with GoTrue's
// over_request_rate_limit, while a client at another address completes
// OAuth sign-ins (/authorize, then the PKCE grant) during the flood and
// after it. Before, the flood took all
// 10 000 shared states and every later OAuth sign-in failed for 5 minutes.
func TestAuthorizeFloodFromOneAddress(t *testing.T) {
	t.Parallel()
	now := time.Now()
	var clock atomic.Pointer[time.Time]
	clock.Store(&now)
	a := startStub(t, func(c *Config) { c.Now = func() time.Time { return *clock.Load() } })
	mux := a.gotrue
	const flooder = "198.51.100.66:40000"
	flood := func() (loc string) {
		r := httptest.NewRequest("GET", "/auth/v1/authorize?provider=demo&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=s256", nil)
		r.RemoteAddr = flooder
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, r)
		return w.Header().Get("Location")
	}
	signIn := func(when string) {
		t.Helper()
		if err := a.oauthSignIn(); err != nil {
			t.Fatalf("OAuth sign-in %s: %v", when, err)
		}
	}

	const total = 10_050
	var sent, granted, refused atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for sent.Add(1) <= total {
				switch loc := flood(); {
				case strings.Contains(loc, "error_code=over_request_rate_limit"):
					refused.Add(1)
				case strings.Contains(loc, "code="):
					granted.Add(1)
				default:
					t.Errorf("flood answer: %s", loc)
					return
				}
			}
		}()
	}
	// During the flood (once it has used its share), another client signs in.
	for refused.Load() == 0 && sent.Load() < total {
		// sleep: the poll step of the wait for the flood's first refusal, bounded by the flood's end
		time.Sleep(time.Millisecond)
	}
	signIn("during the flood")
	wg.Wait()
	signIn("after the flood")
	if g, r := granted.Load(), refused.Load(); g != maxPendingPerAddress || g+r != total {
		t.Fatalf("flood: %d granted, %d refused; want %d granted of %d", g, r, maxPendingPerAddress, total)
	}
	a.gotrue.mu.Lock()
	held, byFlooder := len(a.gotrue.flows), len(a.gotrue.flowsBy["198.51.100.66"])
	a.gotrue.mu.Unlock()
	if byFlooder != maxPendingPerAddress || held > maxPendingPerAddress+2 {
		t.Fatalf("%d flow states held, %d by the flooder; want at most %d by it", held, byFlooder, maxPendingPerAddress)
	}
	// Its states expire with their flows: then it may start flows again,
	// and the expired ones are gone.
	later := now.Add(flowStateTTL + time.Second)
	clock.Store(&later)
	if loc := flood(); !strings.Contains(loc, "code=") || strings.Contains(loc, "error") {
		t.Fatalf("after the flood's flows expired: %s", loc)
	}
	a.gotrue.mu.Lock()
	byFlooder = len(a.gotrue.flowsBy["198.51.100.66"])
	a.gotrue.mu.Unlock()
	if byFlooder != 1 {
		t.Fatalf("%d flow states of the flooder after expiry, want 1", byFlooder)
	}
}

// TestPasswordGrantLimit: the password grant allows
// passwordAttempts wrong passwords per email or phone in passwordWindow;
// then it answers 429 over_request_rate_limit with Retry-After, to the
// right password too, until the window ends. An unknown address gets the
// same answers, and a sign-in that succeeds does not count.
func TestPasswordGrantLimit(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	s, err := New(Config{Keys: testKeySet(t), Issuer: "http://demo/auth/v1", APIKey: testAPIKey, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	s.AddAccount(Account{Token: keys.TokenSpec{Sub: testUserID, TTL: time.Hour}, Email: testEmail, Phone: testPhone, Password: testPassword})
	type answer struct {
		status     int
		code       string
		retryAfter string
	}
	grant := func(login, password string) answer {
		// login is an email or a phone number, by its shape.
		field := "phone"
		if strings.Contains(login, "@") {
			field = "email"
		}
		body, _ := json.Marshal(map[string]string{field: login, "password": password})
		r := httptest.NewRequest("POST", "/auth/v1/token?grant_type=password", strings.NewReader(string(body)))
		r.Header.Set("apikey", testAPIKey)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		var m map[string]any
		_ = json.Unmarshal(w.Body.Bytes(), &m)
		code, _ := m["code"].(string)
		return answer{w.Code, code, w.Header().Get("Retry-After")}
	}
	// A success within the limit does not count.
	if a := grant(testEmail, testPassword); a.status != 200 {
		t.Fatalf("right password: %+v", a)
	}
	var known, unknown []answer
	for i := range passwordAttempts + 2 {
		known = append(known, grant(testEmail, fmt.Sprint("wrong-", i)))
		unknown = append(unknown, grant("nobody@example.com", fmt.Sprint("wrong-", i)))
		now = now.Add(time.Second)
	}
	for i := range known {
		want := answer{400, "invalid_credentials", ""}
		if i >= passwordAttempts {
			want = answer{429, "over_request_rate_limit", fmt.Sprint(60 - i)}
		}
		if known[i] != want || unknown[i] != want {
			t.Fatalf("attempt %d: known %+v, unknown %+v, want %+v", i+1, known[i], unknown[i], want)
		}
	}
	// Another spelling of the address shares its limit; the right password
	// is refused until the window ends.
	if a := grant(" Demo-User@Example.com", testPassword); a.status != 429 {
		t.Fatalf("right password past the limit: %+v", a)
	}
	// The phone has its own key.
	if a := grant("15550001111", testPassword); a.status != 200 {
		t.Fatalf("phone: %+v", a)
	}
	now = now.Add(passwordWindow)
	if a := grant(testEmail, testPassword); a.status != 200 {
		t.Fatalf("right password after the window: %+v", a)
	}
}

// oauthSignIn signs the first account in as a browser does with the
// server's own OAuth provider: /authorize, then the PKCE grant.
func (a *stubApp) oauthSignIn() error {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(a.url + "/auth/v1/authorize?provider=demo&code_challenge=" + testChallenge + "&code_challenge_method=s256")
	if err != nil {
		return err
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		return fmt.Errorf("authorize: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	body, _ := json.Marshal(map[string]string{"auth_code": loc.Query().Get("code"), "code_verifier": testVerifier})
	req, _ := http.NewRequest("POST", a.url+"/auth/v1/token?grant_type=pkce", strings.NewReader(string(body)))
	req.Header.Set("apikey", testAPIKey)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		return err
	}
	defer resp.Body.Close()
	var session struct {
		AccessToken string `json:"access_token"`
		User        struct {
			ID string `json:"id"`
		} `json:"user"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&session); err != nil || resp.StatusCode != 200 ||
		session.AccessToken == "" || session.User.ID != testUserID {
		return fmt.Errorf("PKCE grant: %d %+v %v", resp.StatusCode, session, err)
	}
	return nil
}
