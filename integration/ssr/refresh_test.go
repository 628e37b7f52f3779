package ssr_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

type nodeCookie struct {
	Name    string         `json:"name"`
	Value   string         `json:"value"`
	Options map[string]any `json:"options,omitempty"`
}

type nodeRead struct {
	Session *struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresAt    int64  `json:"expires_at"`
	} `json:"session"`
	SessionJSON *string      `json:"session_json"`
	Error       *string      `json:"error"`
	SetAll      []nodeCookie `json:"setAll"`
}

// browserJar applies Set-Cookie lines to a browser's cookies for one site.
func browserJar(t *testing.T, jar []*http.Cookie, h http.Header) []*http.Cookie {
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

func nodeCookieList(cs []*http.Cookie) []nodeCookie {
	out := make([]nodeCookie, len(cs))
	for i, c := range cs {
		out[i] = nodeCookie{Name: c.Name, Value: c.Value}
	}
	return out
}

// The cookies tablegate writes after a refresh are read back by the real
// createServerClient to the same session, byte for byte, for a single
// cookie and for a chunked one.
func TestRefreshInteropNodeReadsTablegateCookies(t *testing.T) {
	t.Parallel()
	for _, bio := range []string{"short", strings.Repeat("x", 3000)} {
		b := refreshSetup(t, bio, nil)
		jar := b.cookies(30 * time.Second)
		res := b.rv.Resolve(request(jar))
		b.assertNewSession(res, "newrefresh1")
		stored, _ := ssrcookie.Read(res.RequestCookies, b.name)
		jar = browserJar(t, jar, applied(res))
		chunks := 0
		for _, c := range jar {
			if strings.HasPrefix(c.Name, b.name) {
				chunks++
			}
		}
		if (len(bio) > 100) != (chunks > 1) {
			t.Fatalf("bio %d chars: %d session cookies", len(bio), chunks)
		}

		var got nodeRead
		runNode(t, map[string]any{"url": b.auth.URL(), "key": apiKey, "cookies": nodeCookieList(jar)}, &got, "ssr-read-session.mjs")
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
		if rts := b.auth.refreshes(); len(rts) != 1 {
			t.Fatalf("refresh calls sent %q (node must not refresh a fresh session)", rts)
		}
	}
}

// A session written by the real @supabase/ssr (signInWithPassword against
// internal/authstub) is refreshed by tablegate, and node reads the
// result.
func TestRefreshInteropTablegateRefreshesNodeSession(t *testing.T) {
	t.Parallel()
	b := refreshSetup(t, strings.Repeat("y", 3000), nil) // chunked on both sides
	// node's session expires within the resolver's leeway.
	b.auth.SetTokenTTL(30 * time.Second)
	var signin struct {
		Error  *string      `json:"error"`
		SetAll []nodeCookie `json:"setAll"`
	}
	runNode(t, map[string]any{"url": b.auth.URL(), "key": apiKey, "email": "a@example.com", "password": "pw"}, &signin, "ssr-sign-in.mjs")
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
	b.auth.SetTokenTTL(0)
	res := b.rv.Resolve(request(jar))
	b.assertNewSession(res, "newrefresh2")
	if rts := b.auth.refreshes(); len(rts) != 1 || rts[0] != "newrefresh1" {
		t.Fatalf("refresh calls sent %q; want one with the token node stored, newrefresh1", rts)
	}
	jar = browserJar(t, jar, applied(res))
	var got nodeRead
	runNode(t, map[string]any{"url": b.auth.URL(), "key": apiKey, "cookies": nodeCookieList(jar)}, &got, "ssr-read-session.mjs")
	if got.Session == nil || got.Session.AccessToken != res.Auth.User.Token || got.Session.RefreshToken != "newrefresh2" {
		t.Fatalf("node after tablegate's refresh: %+v %v", got.Session, got.Error)
	}
}

// The Set-Cookie lines and headers Result.Apply writes after a refresh are
// byte-identical to those of the real @supabase/ssr storing the same
// session over the same request cookies (its signInWithPassword against a
// server answering with the same body): stale chunks and a stray deleted,
// changed chunks set, unchanged ones skipped.
func TestApplyMatchesSSR(t *testing.T) {
	t.Parallel()
	custom := ssrcookie.Options{Domain: ".example.com", Path: "/app", Secure: true, HTTPOnly: true, SameSite: http.SameSiteStrictMode}
	for _, tc := range []struct {
		name    string
		newBio  string
		opts    ssrcookie.Options
		nodeOpt map[string]any
	}{
		{"small over chunks and a stray", "short", ssrcookie.Options{}, nil},
		{"chunked over chunks", strings.Repeat("y", 4000), ssrcookie.Options{}, nil},
		{"Config.CookieOptions, small over chunks", "short", custom,
			map[string]any{"domain": ".example.com", "path": "/app", "secure": true, "httpOnly": true, "sameSite": "strict"}},
		{"Config.CookieOptions, chunked over chunks", strings.Repeat("y", 4000), custom,
			map[string]any{"domain": ".example.com", "path": "/app", "secure": true, "httpOnly": true, "sameSite": "strict"}},
		{"explicit defaults", "short", ssrcookie.DefaultOptions(), map[string]any{"path": "/", "sameSite": "lax"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The resolver's clock runs years ahead: the request's session is
			// inside its refresh leeway, and far from expiry for node.
			b := refreshSetupAt(t, func() time.Time { return time.Unix(1900000000, 0) }, "", func(c *authctx.Config) { c.CookieOptions = tc.opts })
			body := b.fixedSession(tc.newBio)
			b.auth.serveFixed(body)
			reqCookies := b.cookies(30*time.Second, &http.Cookie{Name: b.name + ".5", Value: "stray"}, &http.Cookie{Name: "theme", Value: "dark"})
			res := b.rv.Resolve(request(reqCookies))
			if res.Auth.Kind != authctx.KindUser || len(res.SetCookies) == 0 {
				t.Fatalf("no refresh: %+v", res.Auth)
			}
			if tc.opts == (ssrcookie.Options{}) {
				b.assertNewSession(res, "fixedrefresh") // also checks the default attributes
			}
			got := applied(res)

			// @supabase/ssr, same body, same request cookies, same cookie name.
			node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			}))
			defer node.Close()
			if name, _ := ssrcookie.Name(node.URL); name != b.name {
				t.Fatalf("cookie names differ: %s, %s", name, b.name)
			}
			var want struct {
				Error     *string           `json:"error"`
				SetCookie []string          `json:"set_cookie"`
				Headers   map[string]string `json:"headers"`
			}
			runNode(t, map[string]any{"url": node.URL, "key": apiKey, "email": "a@example.com", "password": "pw",
				"cookies": nodeCookieList(reqCookies), "cookieOptions": tc.nodeOpt}, &want, "ssr-sign-in.mjs")
			if want.Error != nil || len(want.SetCookie) == 0 {
				t.Fatalf("node: %v, %d lines", want.Error, len(want.SetCookie))
			}
			if g := got.Values("Set-Cookie"); strings.Join(g, "\n") != strings.Join(want.SetCookie, "\n") {
				t.Fatalf("Set-Cookie differs:\n go   %d %.300q\n node %d %.300q", len(g), g, len(want.SetCookie), want.SetCookie)
			}
			for k, v := range want.Headers {
				if got.Get(k) != v {
					t.Errorf("header %s: go %q, node %q", k, got.Get(k), v)
				}
			}
			t.Logf("%d identical Set-Cookie lines", len(want.SetCookie))
		})
	}
}
