package authstub

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/keys"
)

// TestOTPGuessing: the server keeps one pending code
// per account, burns it after maxWrongCodes wrong codes, and sends an
// account a new one at most once per otpInterval (60 s: without that wait
// a new code every five guesses allowed ≈ 5 000 guesses a second). Before, every
// POST /otp added a code (up to 10 000 pending) and wrong codes cost
// nothing: with 2000 codes requested for demo-user, 3000 guesses at
// /verify returned 2 sessions (knowing only the email and the publishable
// key).
func TestOTPGuessing(t *testing.T) {
	t.Parallel()
	a := startStub(t, nil)
	post := func(path, body string) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", a.url+path, strings.NewReader(body))
		req.Header.Set("apikey", testAPIKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	sendCode := func() string {
		t.Helper()
		if st := post("/auth/v1/otp", fmt.Sprintf(`{"email":%q}`, testEmail)); st != 200 {
			t.Fatalf("otp: %d", st)
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.sent[len(a.sent)-1].Code
	}
	verify := func(code string) int {
		return post("/auth/v1/verify", fmt.Sprintf(`{"type":"email","email":%q,"token":%q}`, testEmail, code))
	}
	// The interval (the default): a second code within it is
	// refused as GoTrue refuses it, and nothing is sent.
	a.gotrue.mu.Lock()
	a.gotrue.otpInterval = defaultOTPInterval
	a.gotrue.mu.Unlock()
	if st := post("/auth/v1/otp", fmt.Sprintf(`{"email":%q}`, testEmail)); st != 200 {
		t.Fatalf("first otp: %d", st)
	}
	if st := post("/auth/v1/otp", fmt.Sprintf(`{"email":%q}`, testEmail)); st != http.StatusTooManyRequests {
		t.Fatalf("otp within the interval: %d", st)
	}
	// The account's phone shares the interval: the answer is the address's
	// (200, a first request for it), but no code is sent. An unknown
	// address answers as a known one does (200, then 429), so the answers
	// reveal nothing.
	if st := post("/auth/v1/otp", `{"phone":"15550001111"}`); st != 200 {
		t.Fatalf("otp by phone within the email's interval: %d", st)
	}
	for i, want := range []int{200, http.StatusTooManyRequests} {
		if st := post("/auth/v1/otp", `{"email":"nobody@example.com"}`); st != want {
			t.Fatalf("unknown address, request %d: %d, want %d", i+1, st, want)
		}
	}
	a.mu.Lock()
	if len(a.sent) != 1 {
		t.Errorf("sent %d codes, want 1", len(a.sent))
	}
	a.mu.Unlock()
	// A flood of other addresses filling the remembered ones blocks nobody;
	// the account's own interval still holds.
	a.gotrue.mu.Lock()
	for i := range maxPending {
		a.gotrue.otpSentTo[fmt.Sprintf("flood%d@example.com\x00", i)] = a.gotrue.now()
	}
	a.gotrue.mu.Unlock()
	for i, want := range []int{200, http.StatusTooManyRequests} {
		if st := post("/auth/v1/otp", `{"email":"someone-else@example.com"}`); st != want {
			t.Fatalf("a new address with the remembered addresses full, request %d: %d, want %d", i+1, st, want)
		}
	}
	// An address folded as accounts are matched ("ſ" is "s") is the same
	// address, known or not; a long one is refused before it is kept.
	for i, want := range []int{200, http.StatusTooManyRequests} {
		if st := post("/auth/v1/otp", []string{`{"email":"nobody-s@example.com"}`, `{"email":"nobody-ſ@example.com"}`}[i]); st != want {
			t.Fatalf("folded unknown address, request %d: %d, want %d", i+1, st, want)
		}
	}
	if st := post("/auth/v1/otp", fmt.Sprintf(`{"email":"%s@example.com"}`, strings.Repeat("a", maxEmail))); st != http.StatusBadRequest {
		t.Fatalf("an address past %d bytes: %d", maxEmail, st)
	}
	// The flood may have made the map forget the account's address (an
	// arbitrary one goes): the answer is then 200, but no code is sent.
	a.mu.Lock()
	sentBefore := len(a.sent)
	a.mu.Unlock()
	if st := post("/auth/v1/otp", fmt.Sprintf(`{"email":%q}`, testEmail)); st != http.StatusTooManyRequests && st != 200 {
		t.Fatalf("the account within its interval, addresses full: %d", st)
	}
	a.mu.Lock()
	if len(a.sent) != sentBefore {
		t.Errorf("a code was sent within the account's interval")
	}
	a.mu.Unlock()
	a.gotrue.mu.Lock()
	a.gotrue.otpInterval = 0 // the rest sends codes back to back
	a.gotrue.mu.Unlock()

	// A new code replaces the previous one.
	first := sendCode()
	second := sendCode()
	for second == first {
		second = sendCode()
	}
	if st := verify(first); st != 403 {
		t.Fatalf("a replaced code verified: %d", st)
	}
	if st := verify(second); st != 200 {
		t.Fatalf("the current code: %d", st)
	}
	// Wrong codes burn the pending one.
	code := sendCode()
	for i, n := 0, 0; n < maxWrongCodes; i++ {
		if guess := fmt.Sprintf("%06d", i); guess != code {
			if st := verify(guess); st != 403 {
				t.Fatalf("wrong code %s: %d", guess, st)
			}
			n++
		}
	}
	if st := verify(code); st != 403 {
		t.Fatalf("the code still verified after %d wrong ones: %d", maxWrongCodes, st)
	}
	// The link of that code still signs its owner in: guessing badly does
	// not lock the owner out.
	a.mu.Lock()
	hash := a.sent[len(a.sent)-1].TokenHash
	a.mu.Unlock()
	if st := post("/auth/v1/verify", fmt.Sprintf(`{"type":"magiclink","token_hash":%q}`, hash)); st != 200 {
		t.Fatalf("the link after the code was burned: %d", st)
	}
}

// TestFlowFloodLeavesCodes: /authorize needs no key, and each call
// holds a flow state for minutes; when they fill their bound, codes are
// still sent and a magic link still signs in (before, one shared bound
// made ≈ 10 000 anonymous GETs stop every code and link for 5 minutes).
func TestFlowFloodLeavesCodes(t *testing.T) {
	t.Parallel()
	a := startStub(t, nil)
	g := a.gotrue
	g.mu.Lock()
	for range maxPending {
		g.flows[keys.NewUUID()] = &flowState{challenge: "x", expires: g.now().Add(flowStateTTL)}
	}
	g.mu.Unlock()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	// The flood's own door is shut.
	resp, err := noFollow.Get(a.url + "/auth/v1/authorize?provider=demo&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=s256")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); !strings.Contains(loc, "over_request_rate_limit") {
		t.Fatalf("authorize with the flows full: %d %s", resp.StatusCode, loc)
	}
	// A code is sent, and its magic link (PKCE) still yields an auth code.
	req, _ := http.NewRequest("POST", a.url+"/auth/v1/otp", strings.NewReader(
		fmt.Sprintf(`{"email":%q,"code_challenge":"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM","code_challenge_method":"s256"}`, testEmail)))
	req.Header.Set("apikey", testAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("otp with the flows full: %d", resp.StatusCode)
	}
	a.mu.Lock()
	link := a.sent[len(a.sent)-1].Link
	a.mu.Unlock()
	resp, err = noFollow.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "code=") || strings.Contains(loc, "error") {
		t.Fatalf("magic link with the flows full: %d %s", resp.StatusCode, loc)
	}
}
