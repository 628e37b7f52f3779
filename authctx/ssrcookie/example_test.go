package ssrcookie_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// Write a session in the @supabase/ssr format, then read it back from the
// cookies the browser returns.
func Example() {
	name, _ := ssrcookie.Name("https://abcdefghijklmnopqrst.supabase.co")
	session := []byte(`{"access_token":"a.b.c","token_type":"bearer","expires_in":3600,"expires_at":4102444800,"refresh_token":"abcdefghijkl"}`)

	rec := httptest.NewRecorder()
	set, _ := ssrcookie.Write(name, session, nil, ssrcookie.Options{})
	ssrcookie.AddHeaders(rec.Header(), set)
	fmt.Println(rec.Header().Get("Set-Cookie"))
	fmt.Println(rec.Header().Get("Cache-Control"))

	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range set {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	raw, err := ssrcookie.Read(req.Cookies(), name)
	if err != nil {
		panic(err)
	}
	s, _ := ssrcookie.ParseSession(raw)
	fmt.Println(s.RefreshToken, s.ExpiresAt)
	// Output:
	// sb-abcdefghijklmnopqrst-auth-token=base64-eyJhY2Nlc3NfdG9rZW4iOiJhLmIuYyIsInRva2VuX3R5cGUiOiJiZWFyZXIiLCJleHBpcmVzX2luIjozNjAwLCJleHBpcmVzX2F0Ijo0MTAyNDQ0ODAwLCJyZWZyZXNoX3Rva2VuIjoiYWJjZGVmZ2hpamtsIn0; Max-Age=34560000; Path=/; SameSite=Lax
	// private, no-cache, no-store, must-revalidate, max-age=0
	// abcdefghijkl 4102444800
}

// Read a legacy plain-JSON session from the raw Cookie header, as the
// JavaScript client does; net/http's cookie parser drops such a value.
func ExampleHeaderCookies() {
	const name = "sb-abcdefghijklmnopqrst-auth-token"
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Cookie", `theme=dark; `+name+`={"access_token":"a.b.c","refresh_token":"r","expires_at":4102444800}`)

	_, err := ssrcookie.Read(req.Cookies(), name)
	fmt.Println("net/http:", err)

	raw, _ := ssrcookie.Read(ssrcookie.HeaderCookies(req.Header["Cookie"], name), name)
	s, err := ssrcookie.LoadSession(raw)
	fmt.Println("HeaderCookies:", s.AccessToken, s.RefreshToken, err)
	// Output:
	// net/http: ssrcookie: no session cookie
	// HeaderCookies: a.b.c r <nil>
}
