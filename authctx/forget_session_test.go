package authctx

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/gotrue"
)

// TestForgetSessionDropsCachedRefresh: after ForgetSession of the
// refreshed session's refresh token (a sign-out), a request still carrying
// the previous cookies is not handed the cached new session: the resolver
// asks the auth server again, which refuses the signed-out session.
func TestForgetSessionDropsCachedRefresh(t *testing.T) {
	t.Parallel()
	for _, forget := range []bool{false, true} {
		b := rfSetup(t, true, nil)
		old := b.cookies(-time.Minute)
		if res := b.rv.Resolve(rfRequest(old)); res.Auth.Kind != KindUser {
			t.Fatalf("first refresh: %s/%s", res.Auth.Kind, res.Auth.Reason)
		}
		// The session is signed out on the auth server.
		b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			w.Write([]byte(`{"code":"refresh_token_not_found","message":"Invalid Refresh Token"}`))
		})
		if forget {
			b.rv.ForgetSession("newrefresh1")
		}
		res := b.rv.Resolve(rfRequest(old))
		switch {
		case forget && res.Auth.Kind == KindUser:
			t.Errorf("after ForgetSession, the previous cookies were signed back in (%d auth calls)", b.auth.calls.Load())
		case !forget && res.Auth.Kind != KindUser:
			t.Errorf("control: without ForgetSession the cached refresh should answer (got %s/%s); the test no longer shows the cache", res.Auth.Kind, res.Auth.Reason)
		}
	}
}

// TestRefreshFailuresBoundedWithoutWipe: past the bound, one remembered
// failure makes room for the next, instead of every session's backoff
// being forgotten at once (a flood of made-up refresh tokens used to wipe
// the backoff of real sessions).
func TestRefreshFailuresBoundedWithoutWipe(t *testing.T) {
	t.Parallel()
	srv, _ := rfCountingServer(t, 503, func(int64) string { return `{}` }, nil)
	clock := &rfClock{t: time.Unix(1700000000, 0)}
	f := newRefresher(&gotrue.Client{ProjectURL: srv, APIKey: "k"}, rfEngineTimeout, clock.Now)
	f.max = 5
	for i := range 12 {
		f.refresh(context.Background(), fmt.Sprint("t", i), true)
		f.mu.Lock()
		n := len(f.failures)
		f.mu.Unlock()
		if want := min(i+1, 5); n != want {
			t.Fatalf("after %d failures %d are remembered, want %d", i+1, n, want)
		}
	}
}
