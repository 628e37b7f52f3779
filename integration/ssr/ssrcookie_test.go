package ssr_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
)

// TestDifferentialAgainstNode has the real @supabase/ssr store sessions
// (signInWithPassword against a fake auth server) and checks that Write
// emits the very same Set-Cookie lines, byte for byte, for the same
// request cookies and options: single and chunked values, deletes of the
// bare name and of strays, dedupe of unchanged chunks, host-only deletes
// with a Domain. The session JSON exercises JSON.stringify details (HTML
// characters escaped by Go's encoder, U+2028, non-ASCII, 1e21, integer-like
// keys).
func TestDifferentialAgainstNode(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)

	session := func(bio string) []byte {
		// Encoded by Go like GoTrue does: <, >, & and U+2028 escaped.
		b, _ := json.Marshal(map[string]any{
			"access_token": "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1In0.c2ln", "token_type": "bearer",
			"expires_in": 3600, "expires_at": 4102444800, "refresh_token": "abcdefghijkl",
			"user": map[string]any{"id": "u1", "email": "a<b>&c@example.com", "big": 1e21, "small": 1.5e-7,
				"user_metadata": map[string]any{"bio": bio, "name": "Zoë ✓\u2028", "10": 1, "2": 2}},
		})
		return b
	}
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	defer srv.Close()
	name, err := ssrcookie.Name(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	small, large := session("short"), session(strings.Repeat("x", 6000))
	smallStored, _ := ssrcookie.StringifyJSON(small)
	_, smallCookies := ssrcookie.Write(name, smallStored, nil, ssrcookie.Options{})
	largeStored, _ := ssrcookie.StringifyJSON(large)
	_, largeCookies := ssrcookie.Write(name, largeStored, nil, ssrcookie.Options{})
	other := &http.Cookie{Name: "theme", Value: "dark"}
	stray := &http.Cookie{Name: name + ".5", Value: "stray"}

	cases := []struct {
		name    string
		body    []byte
		request []*http.Cookie
		opts    ssrcookie.Options
		nodeOpt map[string]any
	}{
		{"small, no cookies", small, nil, ssrcookie.Options{}, nil},
		{"large over a single cookie and a stray", large, append([]*http.Cookie{other, stray}, smallCookies...), ssrcookie.Options{}, nil},
		{"small over chunks", small, append(append([]*http.Cookie{}, largeCookies...), stray), ssrcookie.Options{}, nil},
		{"unchanged value writes nothing", large, largeCookies, ssrcookie.Options{}, nil},
		{"domain and secure", small, append(append([]*http.Cookie{}, largeCookies...), stray),
			ssrcookie.Options{Domain: ".example.com", Secure: true, HTTPOnly: true, Path: "/app", SameSite: http.SameSiteStrictMode},
			map[string]any{"domain": ".example.com", "secure": true, "httpOnly": true, "path": "/app", "sameSite": "strict"}},
	}
	for _, tc := range cases {
		body = tc.body
		var reqCookies []map[string]string
		for _, c := range tc.request {
			reqCookies = append(reqCookies, map[string]string{"name": c.Name, "value": c.Value})
		}
		var res struct {
			Error     *string           `json:"error"`
			SetCookie []string          `json:"set_cookie"`
			Headers   map[string]string `json:"headers"`
		}
		nodetest.Run(t, 60*time.Second, "ssr-sign-in.mjs", map[string]any{"url": srv.URL, "key": "sb_publishable_TESTKEY", "email": "a@example.com",
			"password": "pw", "cookies": reqCookies, "cookieOptions": tc.nodeOpt}, &res)
		if res.Error != nil {
			t.Fatalf("%s: node: %s", tc.name, *res.Error)
		}
		stored, err := ssrcookie.StringifyJSON(tc.body)
		if err != nil {
			t.Fatal(err)
		}
		set, _ := ssrcookie.Write(name, stored, tc.request, tc.opts)
		got := setCookieLines(set)
		t.Logf("%s: %d lines", tc.name, len(got))
		if strings.Join(got, "\n") != strings.Join(res.SetCookie, "\n") {
			t.Errorf("%s:\n go   %d lines: %.300q\n node %d lines: %.300q", tc.name, len(got), got, len(res.SetCookie), res.SetCookie)
		}
		if len(set) > 0 {
			for k, v := range ssrcookie.CacheHeaders() {
				if res.Headers[k] != v[0] {
					t.Errorf("%s: header %s: node %q, go %q", tc.name, k, res.Headers[k], v[0])
				}
			}
		} else if len(res.Headers) != 0 {
			t.Errorf("%s: node sent headers %v without cookies", tc.name, res.Headers)
		}
	}
}

// setCookieLines renders cookies as the Set-Cookie lines ssrcookie writes.
func setCookieLines(set []*http.Cookie) []string {
	out := make([]string, len(set))
	for i, c := range set {
		out[i] = ssrcookie.Serialize(c)
	}
	return out
}
