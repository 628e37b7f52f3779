package authctx

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// An auth server answering 5xx, and one session sending steady traffic
// (20 requests a second for a minute of the session's clock, its token
// inside the leeway and then expired): the auth server sees at most 6
// calls in that minute (backoff 2, 4, 8, 16, 30 s), not one per request.
func TestRefreshFailing5xxAtMostAHandfulPerMinute(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, func(c *Config) { c.RefreshWait = 0 })
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"code":500,"error_code":"unexpected_failure"}`)
	})
	cookies := b.cookies(30 * time.Second) // expires 30 s into the minute
	users, anons := 0, 0
	for step := 0; step < 60*20; step++ {
		res := b.rv.Resolve(rfRequest(cookies))
		switch {
		case res.Auth.Kind == KindUser:
			users++
		case res.Auth.Kind == KindAnon && res.Auth.Reason == ReasonRefreshFailed:
			anons++
		default:
			t.Fatalf("step %d: %s/%s", step, res.Auth.Kind, res.Auth.Reason)
		}
		assertNothingWritten(t, res)
		b.clock.Add(50 * time.Millisecond)
		if step%20 == 0 {
			// sleep: let the refresh started in the background end; the refresher exposes no signal for its end
			time.Sleep(time.Millisecond)
		}
	}
	calls := b.auth.calls.Load()
	t.Logf("1200 requests in a minute: %d auth calls; %d served the still-valid token, %d anon/refresh_failed after expiry", calls, users, anons)
	if calls > 6 {
		t.Fatalf("a failing auth server saw %d calls from one session in a minute, want at most 6", calls)
	}
	if users < 590 {
		t.Fatalf("only %d requests kept the still-valid token", users)
	}
}

// An auth server that hangs (never answers within the 5 s timeout): a
// request whose token is still valid waits at most RefreshWait once, and
// later requests of the session do not wait at all; one call in total.
func TestRefreshHangingAuthServerDoesNotDelayValidTokens(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	const wait = 100 * time.Millisecond
	b := rfSetup(t, false, func(c *Config) { c.RefreshWait = wait; c.RefreshTimeout = 5 * time.Second })
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusGatewayTimeout)
	})
	t.Cleanup(func() { close(release) })
	cookies := b.cookies(30 * time.Second)
	var later time.Duration
	for i := 0; i < 50; i++ {
		start := time.Now()
		res := b.rv.Resolve(rfRequest(cookies))
		d := time.Since(start)
		if res.Auth.Kind != KindUser || res.Auth.User.ID != rfUserID {
			t.Fatalf("request %d: %s/%s, want the still-valid user", i, res.Auth.Kind, res.Auth.Reason)
		}
		assertNothingWritten(t, res)
		if i == 0 && d > time.Second {
			t.Fatalf("first request waited %v, want at most RefreshWait (100ms)", d)
		}
		if i > 0 {
			later += d
		}
	}
	// Waiting RefreshWait each, the 49 later requests would take ~4.9 s;
	// not waiting, a few ms each. The bound is half the waiting cost, so
	// that a loaded machine's slow resolutions do not cross it.
	if later > 49*wait/2 {
		t.Fatalf("49 later requests took %v in total: they waited for a refresh known to hang", later)
	}
	if n := b.auth.calls.Load(); n != 1 {
		t.Fatalf("%d auth calls, want 1 (the hanging one)", n)
	}
}

// A slow but successful refresh finishes in the background: the request
// that started it goes on with its still-valid token, and the session's
// next request — even after RefreshResultTTL — gets the new session and
// writes it, without a second call.
func TestRefreshSlowSuccessReachesTheNextRequest(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, func(c *Config) { c.RefreshWait = 50 * time.Millisecond })
	done := make(chan struct{})
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		time.Sleep(300 * time.Millisecond) // sleep: the auth server answers slowly on purpose
		next.ServeHTTP(w, r)
		close(done)
	})
	cookies := b.cookies(30 * time.Second)
	res := b.rv.Resolve(rfRequest(cookies))
	if res.Auth.Kind != KindUser {
		t.Fatalf("first request: %s/%s", res.Auth.Kind, res.Auth.Reason)
	}
	assertNothingWritten(t, res)
	<-done
	// The call stores its result a moment after the server answered. Until
	// then the session's requests go on with the old token at once (the
	// call is known to be slow) and send no call of their own.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		res = b.rv.Resolve(rfRequest(cookies))
		if res.CookiesChanged {
			break
		}
		if res.Auth.Kind != KindUser {
			t.Fatalf("while the result is stored: %s/%s", res.Auth.Kind, res.Auth.Reason)
		}
		assertNothingWritten(t, res)
		if time.Now().After(deadline) {
			t.Fatal("the background refresh's result reached no request within 10 s")
		}
	}
	b.assertNewSession(res, "newrefresh1")
	// Nobody waited for it: it is kept past RefreshResultTTL.
	b.clock.Add(RefreshResultTTL + 5*time.Second)
	res = b.rv.Resolve(rfRequest(cookies))
	b.assertNewSession(res, "newrefresh1")
	if n := b.auth.calls.Load(); n != 1 {
		t.Fatalf("%d auth calls, want 1", n)
	}
}
