package authflow

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// testClock is an injectable clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// answer is what a client sees of one form post.
type answer struct {
	status           int
	retryAfter, body string
	contentType      string
	cookies          int
}

func (a answer) String() string {
	return fmt.Sprintf("%d Retry-After %q %s", a.status, a.retryAfter, a.body)
}

// postForm posts a form to the handler's route from remote (host:port),
// with extra header pairs.
func (b *bundle) postForm(path string, form url.Values, remote string, hdr ...string) answer {
	r := httptest.NewRequest("POST", b.site+path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	r.RemoteAddr = remote
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Add(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	b.flows.Handler().ServeHTTP(w, r)
	return answer{status: w.Code, retryAfter: w.Header().Get("Retry-After"), body: w.Body.String(),
		contentType: w.Header().Get("Content-Type"), cookies: len(w.Header().Values("Set-Cookie"))}
}

func signInForm(email, password string) url.Values {
	return url.Values{"email": {email}, "password": {password}, "next": {"/account"}}
}

// With the default limits, wrong passwords for one account beyond 10 in
// a minute answer 429 AUTH_RATE_LIMITED with Retry-After; the right
// password is then refused too, without reaching the auth server, until
// the window passes. A sign-in that succeeds does not count.
func TestWrongPasswordsAreLimitedPerAccount(t *testing.T) {
	t.Parallel()
	clock := &testClock{t: time.Now()}
	b := setup(t, func(c *Config) { c.Now = clock.now })
	const addr = "198.51.100.7:40000"
	for i := range 9 {
		if a := b.postForm("/auth/sign-in", signInForm("a@example.com", fmt.Sprint("wrong-", i)), addr); a.status != 401 {
			t.Fatalf("wrong password %d: %s", i+1, a)
		}
		clock.add(time.Second)
	}
	// The right password within the limit signs in, and is not counted.
	if a := b.postForm("/auth/sign-in", signInForm("a@example.com", testPassword), addr); a.status != 303 || a.cookies == 0 {
		t.Fatalf("right password within the limit: %s", a)
	}
	// The 10th wrong password (another spelling of the address) is still
	// judged by the auth server; the 11th is refused.
	if a := b.postForm("/auth/sign-in", signInForm(" A@Example.COM", "wrong-9"), addr); a.status != 401 {
		t.Fatalf("10th wrong password: %s", a)
	}
	calls := b.gt.count()
	a := b.postForm("/auth/sign-in", signInForm("a@example.com", "wrong-10"), addr)
	if a.status != 429 || a.contentType != "application/problem+json" || !strings.Contains(a.body, `"code":"AUTH_RATE_LIMITED"`) {
		t.Fatalf("11th wrong password: %s (%s)", a, a.contentType)
	}
	if a.retryAfter != "51" { // the window opened 9 s before the right password, 10 s ago
		t.Fatalf("Retry-After %q, want 51", a.retryAfter)
	}
	// The right password, from another address too, is refused until the
	// window passes.
	for _, from := range []string{addr, "203.0.113.50:1"} {
		if a := b.postForm("/auth/sign-in", signInForm("a@example.com", testPassword), from); a.status != 429 || a.cookies != 0 {
			t.Fatalf("right password after the limit from %s: %s", from, a)
		}
	}
	clock.add(50 * time.Second)
	if a := b.postForm("/auth/sign-in", signInForm("a@example.com", testPassword), addr); a.status != 429 || a.retryAfter != "1" {
		t.Fatalf("right password 1 s before the window ends: %s", a)
	}
	if n := b.gt.count(); n != calls {
		t.Fatalf("refused attempts reached the auth server (%d calls, want %d)", n, calls)
	}
	clock.add(time.Second)
	if a := b.postForm("/auth/sign-in", signInForm("a@example.com", testPassword), addr); a.status != 303 || a.cookies == 0 {
		t.Fatalf("right password after the window: %s", a)
	}
	// Other accounts were never limited.
	if a := b.postForm("/auth/sign-in", signInForm("b@example.com", "x"), addr); a.status != 401 {
		t.Fatalf("another account: %s", a)
	}
}

// An address no account has gets exactly the answers of one that has an
// account, attempt by attempt: the limiter tells nothing of accounts.
func TestUnknownAccountsGetTheSameAnswers(t *testing.T) {
	t.Parallel()
	run := func(email string) []answer {
		clock := &testClock{t: time.Unix(2e9, 0)}
		b := setup(t, func(c *Config) { c.Now = clock.now })
		var out []answer
		for i := range 14 {
			out = append(out, b.postForm("/auth/sign-in", signInForm(email, "wrong"), "198.51.100.7:1"))
			clock.add(3 * time.Second)
			if i == 12 {
				clock.add(time.Minute)
			}
		}
		// The sign-in and verify-code routes, past their limit.
		for range 11 {
			out = append(out, b.postForm("/auth/verify", url.Values{"email": {email}, "token": {"000000"}, "type": {"email"}}, "198.51.100.7:1"))
		}
		return out
	}
	known, unknown := run("a@example.com"), run("nobody@example.com")
	for i := range known {
		if known[i] != unknown[i] {
			t.Fatalf("attempt %d: known account %s, unknown %s", i+1, known[i], unknown[i])
		}
	}
	if known[10].status != 429 || known[13].status != 401 {
		t.Fatalf("the sequence did not reach the limit and the next window: %v", known)
	}
}

// The limit per client address keys on the connection's address, unless
// a trusted proxy header is configured: a header the client sends is
// ignored otherwise, and with one configured, only its last entry (the
// one the proxy wrote) counts.
func TestLimitPerAddressHonoursOnlyTheTrustedProxyHeader(t *testing.T) {
	t.Parallel()
	const proxy = "10.0.0.2:5000"
	for _, c := range []struct {
		name, header string
		// xff returns the header of attempt i; limited says whether the
		// 6th attempt is refused.
		xff     func(i int) string
		limited bool
	}{
		{"no header configured, spoofed header rotated", "", func(i int) string { return fmt.Sprintf("203.0.113.%d", i) }, true},
		{"header configured, one client", "X-Forwarded-For", func(i int) string { return fmt.Sprintf("1.1.1.%d, 203.0.113.9", i) }, true},
		{"header configured, several clients", "X-Forwarded-For", func(i int) string { return fmt.Sprintf("203.0.113.%d", i) }, false},
		{"header configured but absent: the proxy's address", "X-Real-IP", func(i int) string { return "" }, true},
	} {
		b := setup(t, func(cfg *Config) {
			cfg.AttemptsPerAddress = 5
			cfg.TrustedProxyHeader = c.header
		})
		var last answer
		for i := range 6 {
			var hdr []string
			if v := c.xff(i); v != "" {
				h := c.header
				if h == "" {
					h = "X-Forwarded-For"
				}
				hdr = []string{h, v}
			}
			// A new account each time: only the address limit applies.
			last = b.postForm("/auth/sign-in", signInForm(fmt.Sprintf("user%d@example.com", i), "wrong"), proxy, hdr...)
			if i < 5 && last.status != 401 {
				t.Fatalf("%s: attempt %d: %s", c.name, i+1, last)
			}
		}
		if got := last.status == 429; got != c.limited {
			t.Errorf("%s: 6th attempt %s, want limited %v", c.name, last, c.limited)
		}
	}
}

// Codes: sending and verifying count against the account too (wrong
// codes beyond the limit are refused), and a token-hash link counts
// against the address only.
func TestOTPSendAndVerifyAreLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.AttemptsPerAccount = 3 })
	const addr = "198.51.100.8:1"
	for i := range 2 {
		if a := b.postForm("/auth/otp", url.Values{"email": {"a@example.com"}}, addr); a.status != 303 {
			t.Fatalf("send %d: %s", i+1, a)
		}
	}
	sent := b.gt.lastSent(t)
	if a := b.postForm("/auth/verify", url.Values{"email": {"a@example.com"}, "token": {wrongCode(sent.Code)}, "type": {"email"}}, addr); a.status != 401 {
		t.Fatalf("wrong code: %s", a)
	}
	if a := b.postForm("/auth/verify", url.Values{"email": {"a@example.com"}, "token": {sent.Code}, "type": {"email"}}, addr); a.status != 429 || a.retryAfter == "" {
		t.Fatalf("right code past the limit: %s", a)
	}
	if a := b.postForm("/auth/otp", url.Values{"email": {"a@example.com"}}, addr); a.status != 429 {
		t.Fatalf("send past the limit: %s", a)
	}
	// Phone spellings share a key.
	for i, p := range []string{"+1 555 000 1111", "15550001111", "1-555-000-1111"} {
		a := b.postForm("/auth/verify", url.Values{"phone": {p}, "token": {wrongCode(sent.Code)}, "type": {"sms"}}, addr)
		if want := 401; i == 2 {
			if a.status != 401 {
				t.Fatalf("3rd wrong phone code: %s", a)
			}
		} else if a.status != want {
			t.Fatalf("wrong phone code %d: %s", i+1, a)
		}
	}
	if a := b.postForm("/auth/verify", url.Values{"phone": {"+15550001111"}, "token": {sent.Code}, "type": {"sms"}}, addr); a.status != 429 {
		t.Fatalf("4th phone attempt: %s", a)
	}
	// The token-hash callback: the address limit only (60 by default).
	w := httptest.NewRecorder()
	b.flows.ServeCallback(w, b.req("GET", "/auth/callback?token_hash="+sent.TokenHash+"&type=email", nil))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("token-hash link: %d %s", w.Code, w.Body)
	}
}

// Limits can be turned off, and bad values are refused with the cause.
func TestAttemptLimitConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.AttemptsPerAccount, c.AttemptsPerAddress = -1, -1 })
	for i := range 30 {
		if a := b.postForm("/auth/sign-in", signInForm("a@example.com", "wrong"), "198.51.100.9:1"); a.status != 401 {
			t.Fatalf("attempt %d with the limits off: %s", i+1, a)
		}
	}
	base := Config{ProjectURL: "https://p.supabase.co", PublishableKey: "k", SiteURL: "https://app.example.com"}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.AttemptsPerAccount = -2 }, "AttemptsPerAccount"},
		{func(c *Config) { c.AttemptWindow = -time.Second }, "AttemptWindow"},
		{func(c *Config) { c.TrustedProxyHeader = "X Forwarded For" }, "TrustedProxyHeader"},
	} {
		cfg := base
		c.mod(&cfg)
		if _, err := New(&cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
}

// A burst of 300 wrong passwords at once for one account (before, all
// reached the auth server in a quarter of a second and the right password
// then signed in): only the limit's 10 reach it, the rest answer 429, and
// the right password is refused after them.
func TestPasswordBurstIsLimited(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	before := b.gt.count()
	var wg sync.WaitGroup
	statuses := make(chan int, 300)
	for i := range 300 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- b.postForm("/auth/sign-in", signInForm("a@example.com", fmt.Sprint("guess-", i)), fmt.Sprintf("203.0.113.%d:1", i%200)).status
		}()
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for s := range statuses {
		count[s]++
	}
	if count[401] != DefaultAttemptsPerAccount || count[429] != 300-DefaultAttemptsPerAccount {
		t.Fatalf("answers %v, want %d × 401 and the rest 429", count, DefaultAttemptsPerAccount)
	}
	if n := b.gt.count() - before; n != DefaultAttemptsPerAccount {
		t.Fatalf("%d guesses reached the auth server, want %d", n, DefaultAttemptsPerAccount)
	}
	if a := b.postForm("/auth/sign-in", signInForm("a@example.com", testPassword), "198.51.100.1:1"); a.status != 429 {
		t.Fatalf("right password after the burst: %s", a)
	}
}

// wrongCode returns a six-digit code other than code.
func wrongCode(code string) string {
	if code == "000000" {
		return "111111"
	}
	return "000000"
}
