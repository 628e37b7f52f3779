package authctx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestRefreshReplacesLegacyJSONCookie: a session in the legacy raw-JSON
// cookie format (read as @supabase/ssr reads it, although net/http's
// parser drops its value) is deleted when its refresh is refused, and
// deleted when the refreshed session is written in chunks, so the next
// request reads the new session instead of the spent one.
func TestRefreshReplacesLegacyJSONCookie(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		reject bool
	}{{"refused", true}, {"refreshed-in-chunks", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bio := ""
			if !tc.reject {
				bio = strings.Repeat("x", 6000) // the new session needs chunks
			}
			b := rfSetupBio(t, true, bio, nil)
			if tc.reject {
				b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					w.Write([]byte(`{"code":"refresh_token_not_found","message":"Invalid Refresh Token"}`))
				})
			}
			raw, _ := json.Marshal(map[string]any{"access_token": b.auth.sign(10*time.Second, nil), "refresh_token": rfOldRT,
				"expires_at": time.Now().Add(10 * time.Second).Unix(), "token_type": "bearer"})
			jar := [][2]string{{b.name, string(raw)}, {"other", "1"}}
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Cookie", jarHeader(jar))
			if len(r.Cookies()) != 1 {
				t.Fatalf("net/http reads %d cookies; the test needs a value it drops", len(r.Cookies()))
			}
			res := b.rv.Resolve(r)
			if tc.reject != (res.Auth.Kind == KindAnon) {
				t.Fatalf("resolved as %s/%s", res.Auth.Kind, res.Auth.Reason)
			}
			h := applied(res)
			deleted := false
			var names []string
			for _, l := range h.Values("Set-Cookie") {
				names = append(names, l[:strings.IndexByte(l, '=')])
				if strings.HasPrefix(l, b.name+"=;") && strings.Contains(l, "Max-Age=0") {
					deleted = true
				}
				c, err := http.ParseSetCookie(l)
				if err != nil {
					t.Fatal(err)
				}
				jar = jarApply(jar, c)
			}
			if !deleted {
				t.Errorf("the legacy session cookie %s was not deleted (Set-Cookie for %q)", b.name, names)
			}
			r2 := httptest.NewRequest("GET", "/", nil)
			r2.Header.Set("Cookie", jarHeader(jar))
			sess, ok := requestSession(r2, b.name)
			switch {
			case tc.reject && ok:
				t.Errorf("after the refused refresh the browser still sends a session (refresh token %q)", sess.RefreshToken)
			case !tc.reject && (!ok || sess.RefreshToken == rfOldRT):
				t.Errorf("the next request reads refresh token %q (ok %v), want the new session", sess.RefreshToken, ok)
			}
		})
	}
}

// jarHeader renders a browser's cookies, in order, as a Cookie header.
func jarHeader(jar [][2]string) string {
	var parts []string
	for _, c := range jar {
		parts = append(parts, c[0]+"="+c[1])
	}
	return strings.Join(parts, "; ")
}

// jarApply applies one Set-Cookie to the browser's cookies.
func jarApply(jar [][2]string, c *http.Cookie) [][2]string {
	out := jar[:0:0]
	for _, j := range jar {
		if j[0] != c.Name {
			out = append(out, j)
		}
	}
	if c.MaxAge >= 0 && c.Value != "" {
		out = append(out, [2]string{c.Name, c.Value})
	}
	return out
}
