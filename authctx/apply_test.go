package authctx

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// rfFixedSession is a GoTrue token response with an access token of the
// auth server, already in JSON.stringify form (no characters that
// Go's encoder escapes), so the stored cookie value is its plain base64url.
func (b *rfBundle) rfFixedSession(bio string) []byte {
	return gotrueSession(b.auth.sign(time.Hour, nil), time.Hour, b.auth.now(), "fixedrefresh",
		map[string]any{"id": rfUserID, "user_metadata": map[string]any{"bio": bio, "name": "Zoë ✓"}}, false)
}

// serveFixed makes the auth server answer every refresh with body.
func (b *rfBundle) serveFixed(body []byte) {
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
}

// A refresh that turns a single-cookie session into a chunked one writes,
// through Result.Apply, the lines @supabase/ssr 0.12.7 writes for it:
// delete the bare name, then .0 (3180 characters, prefix included) and .1,
// each with "; Max-Age=34560000; Path=/; SameSite=Lax" in that order.
func TestApplyWritesChunkedSessionLikeSSR(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, nil)
	body := b.rfFixedSession(strings.Repeat("x", 2000))
	b.serveFixed(body)
	old, err := ssrcookie.EncodeJSON(map[string]any{"access_token": b.auth.sign(30*time.Second, nil), "token_type": "bearer",
		"expires_in": 3600, "expires_at": b.auth.now().Add(30 * time.Second).Unix(), "refresh_token": rfOldRT})
	if err != nil {
		t.Fatal(err)
	}
	res := b.rv.Resolve(rfRequest([]*http.Cookie{{Name: b.name, Value: ssrcookie.Encode(old)}}))
	if res.Auth.Kind != KindUser {
		t.Fatalf("auth %+v", res.Auth)
	}

	value := "base64-" + base64.RawURLEncoding.EncodeToString(body)
	if len(value) <= 3180 || len(value) > 2*3180 {
		t.Fatalf("value of %d characters does not make two chunks", len(value))
	}
	const attrs = "; Max-Age=34560000; Path=/; SameSite=Lax"
	want := []string{
		b.name + "=; Max-Age=0; Path=/; SameSite=Lax",
		b.name + ".0=" + value[:3180] + attrs,
		b.name + ".1=" + value[3180:] + attrs,
	}
	h := applied(res)
	if got := h.Values("Set-Cookie"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Set-Cookie:\n got  %.200q\n want %.200q", got, want)
	}
	if h.Get("Cache-Control") != noStore || h.Get("Expires") != "0" || h.Get("Pragma") != "no-cache" {
		t.Fatalf("cache headers %v", h)
	}
}

// Cookies put into SetCookies by hand: valid ones in the @supabase/ssr
// attribute order, the rest as net/http renders them (quoted or dropped).
func TestApplyHandFilledCookies(t *testing.T) {
	t.Parallel()
	res := Result{SetCookies: []*http.Cookie{
		{Name: "a", Value: "1", Path: "/p", MaxAge: 60, Secure: true, HttpOnly: true, SameSite: http.SameSiteNoneMode, Domain: "example.com"},
		{Name: "b", Value: "x y"},
		{Name: "bad name", Value: "v"},
		{Name: "c", Value: "v", Expires: time.Unix(4102444800, 0)},
	}}
	got := applied(res).Values("Set-Cookie")
	want := []string{
		"a=1; Max-Age=60; Domain=example.com; Path=/p; HttpOnly; Secure; SameSite=None",
		(&http.Cookie{Name: "b", Value: "x y"}).String(),
		"c=v; Expires=Fri, 01 Jan 2100 00:00:00 GMT",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// With Config.CookieOptions {Domain: ".example.com", Secure: true}, a
// rejected refresh deletes the chunks exactly as @supabase/ssr's signOut
// does: host-only deletes first, then the deletes with the Domain.
func TestRefreshRejectedClearsLikeSSRSignOut(t *testing.T) {
	t.Parallel()
	b := rfSetup(t, false, func(c *Config) {
		c.CookieName = "sb-abcdefghijklmnopqrst-auth-token"
		c.CookieOptions = ssrcookie.Options{Domain: ".example.com", Secure: true}
	})
	b.auth.setHandler(func(w http.ResponseWriter, r *http.Request, _ http.Handler) {
		w.WriteHeader(400)
		w.Write([]byte(`{"code":"refresh_token_not_found","message":"Invalid Refresh Token: Refresh Token Not Found"}`))
	})
	request := b.cookies(-time.Minute, &http.Cookie{Name: "theme", Value: "dark"})
	if len(request) != 3 || request[1].Name != b.name+".1" {
		t.Fatalf("request cookies %v, want .0 and .1", request)
	}
	res := b.rv.Resolve(rfRequest(request))
	if res.Auth.Kind != KindAnon || res.Auth.Reason != ReasonSignedOut {
		t.Fatalf("auth %+v, want anon/signed_out", res.Auth)
	}
	h := applied(res)
	want := []string{ // @supabase/ssr's sign-out, verbatim
		"sb-abcdefghijklmnopqrst-auth-token.0=; Max-Age=0; Path=/; Secure; SameSite=Lax",
		"sb-abcdefghijklmnopqrst-auth-token.1=; Max-Age=0; Path=/; Secure; SameSite=Lax",
		"sb-abcdefghijklmnopqrst-auth-token.0=; Max-Age=0; Domain=.example.com; Path=/; Secure; SameSite=Lax",
		"sb-abcdefghijklmnopqrst-auth-token.1=; Max-Age=0; Domain=.example.com; Path=/; Secure; SameSite=Lax",
		// tablegate's own addition after those: the sign-out marker (signed_out.go).
		"sb-abcdefghijklmnopqrst-auth-token-signed-out=1; Domain=.example.com; Path=/; HttpOnly; Secure; SameSite=Lax",
	}
	if got := h.Values("Set-Cookie"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Set-Cookie:\n got  %q\n want %q", got, want)
	}
	if h.Get("Cache-Control") != noStore {
		t.Fatalf("Cache-Control %q", h.Get("Cache-Control"))
	}
}

// New refuses cookie options that would give malformed or ignored cookies.
func TestCookieOptionsConfigErrors(t *testing.T) {
	t.Parallel()
	auth := rfNewAuthServer(t, nil, "")
	for _, o := range []ssrcookie.Options{
		{Domain: "exa mple.com"},
		{Domain: "example.com; HttpOnly"},
		{Path: "app"},
		{Path: "/a;b"},
		{SameSite: http.SameSiteNoneMode},
		{SameSite: 7},
	} {
		_, err := New(context.Background(), &Config{ProjectURL: auth.URL(), PublishableKeys: []string{rfAPIKey}, Refresh: true, CookieOptions: o})
		if err == nil || !strings.Contains(err.Error(), "Config.CookieOptions") {
			t.Errorf("%+v: err %v", o, err)
		}
	}
	rv, err := New(context.Background(), &Config{ProjectURL: auth.URL(), PublishableKeys: []string{rfAPIKey}, Refresh: true,
		CookieOptions: ssrcookie.Options{Domain: "localhost", SameSite: http.SameSiteNoneMode, Secure: true, Path: "/"}})
	if err != nil {
		t.Fatalf("valid options refused: %v", err)
	}
	rv.Close()
}
