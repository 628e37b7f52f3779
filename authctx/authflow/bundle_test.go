package authflow

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/internal/sitejar"
)

const (
	testUser     = "11111111-1111-4111-8111-111111111111"
	testKey      = "sb_publishable_TESTKEY"
	testPassword = "correct horse battery staple"
)

// stub is the auth server of a test: internal/authstub with one account
// (a@example.com, phone 15550001111, testPassword), recording every call.
type stub struct {
	*authstub.Server
	mu   sync.Mutex
	sent []authstub.Sent // the codes and links it sent, oldest first
}

// newStub starts the auth server. now is its clock (nil: time.Now), and
// limited whether it limits password grants itself.
func newStub(t *testing.T, now func() time.Time, limited bool) *stub {
	t.Helper()
	s := &stub{}
	cfg := authstub.Config{APIKey: testKey, SiteURL: "https://app.example.com", Now: now, OTPInterval: -1, RecordCalls: true,
		SentFunc: func(m authstub.Sent) { s.mu.Lock(); s.sent = append(s.sent, m); s.mu.Unlock() }}
	if !limited {
		cfg.PasswordAttempts = -1
	}
	s.Server = authstub.Start(t, cfg)
	s.AddAccount(authstub.Account{Token: keys.TokenSpec{Sub: testUser, TTL: time.Hour}, Email: "a@example.com",
		Phone: "15550001111", Password: testPassword, UserMetadata: map[string]any{"name": "Zoë <a&b>"}})
	return s
}

// set makes h answer every request to path (under /auth/v1).
func (s *stub) set(path string, h http.HandlerFunc) {
	s.Hook(path, func(w http.ResponseWriter, r *http.Request, _ http.Handler) { h(w, r) })
}

// last is the last call the server received.
func (s *stub) last() authstub.Call {
	calls := s.Calls()
	if len(calls) == 0 {
		return authstub.Call{}
	}
	return calls[len(calls)-1]
}

// count is how many calls the server received.
func (s *stub) count() int { return len(s.Calls()) }

// lastSent is the code and link the server sent last.
func (s *stub) lastSent(t *testing.T) authstub.Sent {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) == 0 {
		t.Fatal("the auth server sent no code")
	}
	return s.sent[len(s.sent)-1]
}

// gotrueErr writes an error as GoTrue does (X-Supabase-Api-Version
// 2024-01-01 bodies).
func gotrueErr(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Supabase-Api-Version", "2024-01-01")
	w.Header().Set("x-sb-error-code", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"code": code, "message": msg})
}

// bundle is a test setup: the auth server, the flows and a resolver that
// reads the cookies they write.
type bundle struct {
	t      *testing.T
	gt     *stub
	flows  *Flows
	rv     *authctx.Resolver
	site   string
	cookie string
}

func setup(t *testing.T, mod func(*Config)) *bundle {
	t.Helper()
	cfg := &Config{PublishableKey: testKey, SiteURL: "https://app.example.com",
		RedirectURLs: []string{"https://admin.example.com/console"}, Timeout: 2 * time.Second}
	if mod != nil {
		mod(cfg)
	}
	// The auth server shares the flows' clock, and limits password grants
	// itself only while the flows do.
	gt := newStub(t, cfg.Now, cfg.AttemptsPerAccount >= 0)
	cfg.ProjectURL = gt.URL()
	f, err := New(cfg)
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

// req builds a same-origin request to target on the site carrying cookies.
func (b *bundle) req(method, target string, cookies []*http.Cookie) *http.Request {
	return sitejar.Request(method, b.site+target, cookies)
}

// jar applies the Set-Cookie lines of w to cookies like a browser.
func jar(cookies []*http.Cookie, w *httptest.ResponseRecorder) []*http.Cookie {
	return sitejar.Apply(cookies, w.Header())
}

func names(cookies []*http.Cookie) []string { return sitejar.Names(cookies) }

// queryOf parses the query of a URL string.
func queryOf(t *testing.T, s string) url.Values {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}
