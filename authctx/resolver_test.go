package authctx

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
)

func TestMiddlewareStoresResultAndAppliesWrites(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	name := b.rv.CookieName()
	exp := time.Now().Add(30 * time.Second) // inside the 60 s leeway
	stale := b.token(map[string]any{"exp": exp.Unix()})
	fresh := b.token(map[string]any{"exp": time.Now().Add(time.Hour).Unix(), "session_id": "fresh"})
	var calls atomic.Int64
	// Stand-in for the refresh flow at the seam: it writes a new session.
	b.rv.refresh = func(r *http.Request, res *Result, sess ssrsession.Cookie, cur Auth) Auth {
		calls.Add(1)
		if sess.AccessToken != stale || cur.Kind != KindUser {
			t.Errorf("refresh seam got %s for another token", cur.Kind)
		}
		c := &http.Cookie{Name: name, Value: sessionCookieValue(fresh, time.Now().Add(time.Hour).Unix()), Path: "/"}
		res.SetCookies = append(res.SetCookies, c)
		res.Header = http.Header{"Cache-Control": {"private, no-cache, no-store, must-revalidate, max-age=0"}}
		res.RequestCookies = []*http.Cookie{{Name: name, Value: c.Value}, {Name: "theme", Value: "dark"}}
		res.CookiesChanged = true
		a, _ := b.rv.token(r.Context(), fresh)
		return a
	}
	var seen Result
	var seenCookie string
	h := b.rv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var ok bool
		seen, ok = FromContext(r.Context())
		if !ok {
			t.Error("no Result in the context")
		}
		if c, err := r.Cookie(name); err == nil {
			seenCookie = c.Value
		}
		if AuthFrom(r.Context()).Kind != KindUser {
			t.Error("AuthFrom is not the user")
		}
		w.WriteHeader(204)
	}))
	r := cookieReq(name, sessionCookieValue(stale, exp.Unix()))
	r.AddCookie(&http.Cookie{Name: "theme", Value: "dark"})
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if calls.Load() != 1 || seen.Auth.User == nil || seen.Auth.User.Token != fresh {
		t.Fatalf("refresh calls %d, handler saw %+v", calls.Load(), seen.Auth)
	}
	if seenCookie != seen.RequestCookies[0].Value {
		t.Errorf("handler saw the stale cookie")
	}
	if len(w.Result().Cookies()) != 1 || w.Header().Get("Cache-Control") == "" {
		t.Errorf("Apply did not write Set-Cookie/Cache-Control: %v", w.Header())
	}
	// Without the seam (refresh off) nothing is written and the token stays a user until exp.
	b.rv.refresh = nil
	w = httptest.NewRecorder()
	h.ServeHTTP(w, cookieReq(name, sessionCookieValue(stale, exp.Unix())))
	if len(w.Header()) != 0 || seen.Auth.Kind != KindUser || seen.Auth.User.Token != stale {
		t.Errorf("refresh off: headers %v, auth %s", w.Header(), seen.Auth.Kind)
	}
	if AuthFrom(t.Context()).Kind != KindAnon {
		t.Errorf("AuthFrom without middleware is not anon")
	}
}

// TestRefreshConfig: Config.Refresh installs the refresh flow with the
// configured leeway (default DefaultLeeway), and New refuses a refresh
// configuration it cannot serve before fetching anything.
func TestRefreshConfig(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	rv, err := New(context.Background(), &Config{ProjectURL: b.jwks.URL, Refresh: true, Leeway: 90 * time.Second,
		PublishableKeys: []string{"sb_publishable_x"}})
	if err != nil {
		t.Fatal(err)
	}
	rv.Close()
	if rv.refresh == nil || rv.leeway != 90*time.Second {
		t.Fatalf("refresh flow not installed with the leeway: %v %v", rv.refresh != nil, rv.leeway)
	}
	rv, err = New(context.Background(), &Config{ProjectURL: b.jwks.URL})
	if err != nil {
		t.Fatal(err)
	}
	rv.Close()
	if rv.refresh != nil || rv.leeway != DefaultLeeway {
		t.Fatalf("refresh off: flow %v, leeway %v", rv.refresh != nil, rv.leeway)
	}
}

func TestMemoExpiresAtExp(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := setup(t, func(c *Config) { c.Now = clock; c.ClockSkew = -1 })
	tok := b.token(map[string]any{"exp": now.Add(10 * time.Second).Unix(), "iat": now.Unix()})
	if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindUser {
		t.Fatalf("fresh: %s %v", a.Kind, a.Err)
	}
	if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindUser || b.rv.memo.len() != 1 {
		t.Fatalf("memo hit: %s", a.Kind)
	}
	mu.Lock()
	now = now.Add(11 * time.Second)
	mu.Unlock()
	if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindInvalid || a.Reason != ReasonToken {
		t.Fatalf("memoized token past exp: %s/%s", a.Kind, a.Reason)
	}
	// The cookie path turns the same expiry into anon/expired.
	r := cookieReq(b.rv.CookieName(), sessionCookieValue(tok, 0))
	if a := b.rv.Resolve(r).Auth; a.Kind != KindAnon || a.Reason != ReasonExpired {
		t.Fatalf("cookie past exp: %s/%s", a.Kind, a.Reason)
	}
}

func TestMemoIsBoundedAndConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MemoSize = 32 })
	toks := make([]string, 100)
	for i := range toks {
		toks[i] = b.token(map[string]any{"session_id": fmt.Sprint(i)})
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				tok := toks[(i*7+g)%len(toks)]
				if a := b.rv.Resolve(bearerReq(tok)).Auth; a.Kind != KindUser || a.User.Token != tok {
					t.Errorf("got %s for another token", a.Kind)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := b.rv.memo.len(); n > 32 || n == 0 {
		t.Fatalf("memo holds %d entries, bound 32", n)
	}
}

func TestJWKWithoutAlgStillChecksKeyType(t *testing.T) {
	t.Parallel()
	testKeys(t)
	ec := ecJWK(ecKey, kidEC)
	delete(ec, "alg")
	rs := rsaJWK(rsaKey, kidRSA)
	delete(rs, "alg")
	srv := newJWKSServer(t, jwksJSON(ec, rs))
	rv, err := New(context.Background(), &Config{ProjectURL: srv.URL, VerifierConfig: VerifierConfig{Issuer: testIssuer}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if a := rv.Resolve(bearerReq(signES(t, ecKey, kidEC, userClaims(nil)))).Auth; a.Kind != KindUser {
		t.Fatalf("ES256 on an alg-less EC key: %s %v", a.Kind, a.Err)
	}
	if a := rv.Resolve(bearerReq(signRS(t, kidEC, userClaims(nil)))).Auth; a.Kind != KindInvalid {
		t.Fatalf("RS256 header on an EC key: %s", a.Kind)
	}
	if a := rv.Resolve(bearerReq(signES(t, ecKey, kidRSA, userClaims(nil)))).Auth; a.Kind != KindInvalid {
		t.Fatalf("ES256 header on an RSA key: %s", a.Kind)
	}
}

func TestMemoComparesWholeToken(t *testing.T) {
	t.Parallel()
	m := newMemo(64, 0)
	sig := strings.Repeat("s", 64)
	a, forged := "header.payload-a."+sig, "header.payload-b."+sig
	m.put(a, Service("a"), time.Now().Add(time.Hour))
	if got, ok := m.get(a, time.Now()); !ok || got.KeyName != "a" {
		t.Fatalf("hit: %v %v", got, ok)
	}
	if _, ok := m.get(forged, time.Now()); ok {
		t.Fatalf("a token sharing the signature end hit the memo")
	}
	if _, ok := m.get(a, time.Now().Add(2*time.Hour)); ok {
		t.Fatalf("an expired entry hit")
	}
	if m.len() != 0 {
		t.Fatalf("expired entry not removed")
	}
	if newMemo(-1, 0) != nil {
		t.Fatalf("negative size must disable the memo")
	}
}

func TestResolveToken(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Claims = StandardClaimsSchema() })
	if a := b.rv.ResolveToken(t.Context(), b.token(nil)); a.Kind != KindUser || a.User.Claims["roles"] == nil {
		t.Fatalf("valid token: %s %v", a.Kind, a.User)
	}
	if a := b.rv.ResolveToken(t.Context(), "garbage"); a.Kind != KindInvalid || a.Reason != ReasonToken {
		t.Fatalf("garbage: %s/%s", a.Kind, a.Reason)
	}
}
