package authctx

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

type rfNodeCookie struct {
	Name    string         `json:"name"`
	Value   string         `json:"value"`
	Options map[string]any `json:"options,omitempty"`
}

type rfNodeRead struct {
	Session *struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresAt    int64  `json:"expires_at"`
	} `json:"session"`
	SessionJSON *string        `json:"session_json"`
	Error       *string        `json:"error"`
	SetAll      []rfNodeCookie `json:"setAll"`
}

// rfJar applies Set-Cookie lines to a browser's cookies for one site.
func rfJar(t *testing.T, jar []*http.Cookie, h http.Header) []*http.Cookie {
	t.Helper()
	for _, c := range parsedSetCookies(t, h) {
		out := jar[:0:0]
		for _, old := range jar {
			if old.Name != c.Name {
				out = append(out, old)
			}
		}
		if c.MaxAge > 0 {
			out = append(out, &http.Cookie{Name: c.Name, Value: c.Value})
		}
		jar = out
	}
	return jar
}

func rfNodeCookies(cs []*http.Cookie) []rfNodeCookie {
	out := make([]rfNodeCookie, len(cs))
	for i, c := range cs {
		out[i] = rfNodeCookie{Name: c.Name, Value: c.Value}
	}
	return out
}

// The cookies tablegate writes after a refresh are read back by the real
// createServerClient to the same session, byte for byte, for a single
// cookie and for a chunked one.
func TestRefreshInteropNodeReadsTablegateCookies(t *testing.T) {
	t.Parallel()
	for _, bio := range []string{"short", strings.Repeat("x", 3000)} {
		b := rfSetupBio(t, true, bio, nil)
		jar := b.cookies(30 * time.Second)
		res := b.rv.Resolve(rfRequest(jar))
		b.assertNewSession(res, "newrefresh1")
		stored, _ := ssrcookie.Read(res.RequestCookies, b.name)
		jar = rfJar(t, jar, applied(res))
		chunks := 0
		for _, c := range jar {
			if strings.HasPrefix(c.Name, b.name) {
				chunks++
			}
		}
		if (len(bio) > 100) != (chunks > 1) {
			t.Fatalf("bio %d chars: %d session cookies", len(bio), chunks)
		}

		var got rfNodeRead
		runNode(t, map[string]any{"url": b.auth.URL(), "key": rfAPIKey, "cookies": rfNodeCookies(jar)}, &got, "ssr-read-session.mjs")
		if got.Error != nil || got.Session == nil {
			t.Fatalf("node: no session (%v)", got.Error)
		}
		if got.Session.AccessToken != res.Auth.User.Token || got.Session.RefreshToken != "newrefresh1" {
			t.Fatalf("node read other tokens: refresh %q", got.Session.RefreshToken)
		}
		if *got.SessionJSON != string(stored) {
			t.Fatalf("node's JSON.stringify differs from the stored bytes:\nnode %s\ngo   %s", *got.SessionJSON, stored)
		}
		if len(got.SetAll) != 0 {
			t.Fatalf("node rewrote cookies: %v", got.SetAll)
		}
		if b.auth.calls.Load() != 1 {
			t.Fatalf("%d refresh calls (node must not refresh a fresh session)", b.auth.calls.Load())
		}
	}
}

// A session written by the real @supabase/ssr (signInWithPassword against
// the stand-in auth server) is refreshed by tablegate, and node reads the
// result.
func TestRefreshInteropTablegateRefreshesNodeSession(t *testing.T) {
	t.Parallel()
	b := rfSetupBio(t, true, strings.Repeat("y", 3000), nil) // chunked on both sides
	var signin struct {
		Error  *string        `json:"error"`
		SetAll []rfNodeCookie `json:"setAll"`
	}
	b.auth.SetTokenTTL(30 * time.Second) // the session node stores expires within the leeway
	runNode(t, map[string]any{"url": b.auth.URL(), "key": rfAPIKey, "email": "a@example.com", "password": "pw"}, &signin, "ssr-sign-in.mjs")
	b.auth.SetTokenTTL(0)
	if signin.Error != nil {
		t.Fatalf("node sign-in: %s", *signin.Error)
	}
	var jar []*http.Cookie
	for _, c := range signin.SetAll {
		if c.Value != "" {
			jar = append(jar, &http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	if len(jar) < 2 || jar[0].Name != b.name+".0" {
		t.Fatalf("node wrote %v", jar)
	}
	res := b.rv.Resolve(rfRequest(jar))
	b.assertNewSession(res, "newrefresh2")
	b.auth.mu.Lock()
	rt := b.auth.lastRT
	b.auth.mu.Unlock()
	if rt != "newrefresh1" || b.auth.calls.Load() != 1 {
		t.Fatalf("refresh sent %q, %d calls; want the token node stored", rt, b.auth.calls.Load())
	}
	jar = rfJar(t, jar, applied(res))
	var got rfNodeRead
	runNode(t, map[string]any{"url": b.auth.URL(), "key": rfAPIKey, "cookies": rfNodeCookies(jar)}, &got, "ssr-read-session.mjs")
	if got.Session == nil || got.Session.AccessToken != res.Auth.User.Token || got.Session.RefreshToken != "newrefresh2" {
		t.Fatalf("node after tablegate's refresh: %+v %v", got.Session, got.Error)
	}
}
