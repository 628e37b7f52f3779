package ssr_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/integration/internal/itest"
)

// TestCookieHeaderMatchesSSR: for the same raw Cookie header, the
// Resolver's cookie read (HeaderCookies → ssrcookie.Read → ssrcookie.LoadSession) loads the
// very session the real @supabase/ssr 0.12.7 loads, or none when it loads
// none. The headers include the ones where net/http's cookie parser
// differs from the JavaScript one (legacy JSON with quotes, backslashes
// and UTF-8, which net/http drops; a quoted value, which net/http
// unquotes; spaces around the value), chunk rules, first-wins duplicates
// and sessions auth-js rejects.
func TestCookieHeaderMatchesSSR(t *testing.T) {
	t.Parallel()
	const n = "sb-abcdefghijklmnopqrst-auth-token"
	vec := loadCookieVectors(t)
	pair := func(line string) string { return strings.SplitN(line, ";", 2)[0] }
	small := pair(vec.Small.SetCookie[0])
	large := pair(vec.Large.SetCookie[1]) + "; " + pair(vec.Large.SetCookie[2])
	legacy := `{"access_token":"l.e.g","token_type":"bearer","expires_in":3600,"expires_at":4102444800,"refresh_token":"rl",` +
		`"user":{"name":"Zoë \"q\" \u00e9 \\ ✓"}}`
	b64s := func(json string) string { return "base64-" + base64.RawURLEncoding.EncodeToString([]byte(json)) }
	full := func(at string) string {
		return `{"access_token":"` + at + `","refresh_token":"r","expires_at":4102444800}`
	}
	half := len(legacy) / 2
	headers := []string{
		small,
		large,
		"theme=dark; " + small + "; lang=en",
		n + "=" + legacy, // net/http drops it
		n + ".0=" + legacy[:half] + "; " + n + ".1=" + legacy[half:], // legacy, chunked
		n + "=" + url.QueryEscape(legacy),                            // raw mode
		n + `="` + b64s(full("q.u.o")) + `"`,                         // net/http unquotes it
		n + "=  " + b64s(full("s.p.c")) + " \t",
		" " + n + " =" + b64s(full("k.e.y")),
		n + "=" + b64s(full("p.a.d")) + "==",
		n + "=; " + n + ".0=" + b64s(full("c.h.k"))[:20] + "; " + n + ".1=" + b64s(full("c.h.k"))[20:],
		n + ".0=" + b64s(full("b.a.r")) + "; " + n + "=" + b64s(full("b.a.n")), // the bare name wins
		n + "=" + legacy + "; " + n + ".0=" + b64s(full("x.x.x")),              // bare legacy over chunks
		n + "=" + b64s(full("f.s.t")) + "; " + n + "=" + b64s(full("s.n.d")),   // the first pair wins
		n + "=garbage; " + n + "=" + b64s(full("s.n.d")),
		n + ".1=" + b64s(full("g.a.p")),
		n + ".0=" + b64s(full("g.a.p")) + "; " + n + ".2=junk",
		n + "=" + b64s(`{"access_token":"a.b.c","expires_at":4102444800}`),
		n + "=" + b64s(`{"access_token":"a.b.c","refresh_token":"","expires_at":4102444800}`),
		n + "=" + b64s(`{"access_token":null,"refresh_token":null,"expires_at":null}`),
		n + "=" + b64s(`["a.b.c","r",null,null]`),
		n + "=" + b64s(full("a.b.c"))[:30] + "+/",
		n + "=%E0%A4%A; other=1",
		n + "=%7B%22access_token%22%3A%22u.r.i%22%2C%22refresh_token%22%3A%22r%22%2C%22expires_at%22%3A4102444800%7D",
		"",
	}

	var fromNode []*string
	runNode(t, map[string]any{"url": "https://abcdefghijklmnopqrst.supabase.co", "key": "sb_publishable_TESTKEY", "headers": headers},
		&fromNode, "ssr-read-header.mjs")
	if len(fromNode) != len(headers) {
		t.Fatalf("node answered %d headers of %d", len(fromNode), len(headers))
	}

	loaded := 0
	for i, h := range headers {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Cookie", h)
		raw, err := ssrcookie.Read(ssrcookie.HeaderCookies(r.Header["Cookie"], n), n)
		if err == nil {
			_, err = ssrcookie.LoadSession(raw)
		}
		ok := err == nil
		want := fromNode[i]
		if ok != (want != nil) {
			t.Errorf("header %d %.80q: go loaded %v, @supabase/ssr loaded %v", i, h, ok, want != nil)
			continue
		}
		if !ok {
			continue
		}
		loaded++
		// getSession returns the parsed object; compare in JSON.stringify form.
		got, err := ssrcookie.StringifyJSON(raw)
		if err != nil || string(got) != *want {
			t.Errorf("header %d %.80q: sessions differ:\n go   %s\n node %s", i, h, got, *want)
		}
	}
	if loaded < 12 {
		t.Fatalf("only %d headers held a session: the table lost its positive cases", loaded)
	}
}

// cookieVectors are the cookies @supabase/ssr 0.12.7 writes for two
// sessions, kept in authctx/testdata/supabase-cookie-vectors.json.
type cookieVectors struct {
	Small, Large struct {
		SessionJSON string   `json:"session_json"`
		SetCookie   []string `json:"set_cookie"`
	}
}

func loadCookieVectors(t *testing.T) cookieVectors {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(itest.RepoRoot(), "authctx", "testdata", "supabase-cookie-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v cookieVectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
