package authctx

import (
	"net/http"
	"testing"
	"time"
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
		b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, n int64) {
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
