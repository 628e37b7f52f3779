package authflow

import (
	"net/url"
	"path"
	"strings"
	"testing"
)

// FuzzParseCallback: the callback query parser never panics, and what it
// accepts is well-formed (a valid flow id, a known type, bounded sizes).
func FuzzParseCallback(f *testing.F) {
	for _, s := range []string{
		"code=abc&sb_flow_id=0123456789abcdef0123456789abcdef&next=%2Fa",
		"token_hash=h&type=email", "token_hash=h&type=nope", "code=a&code=b",
		"error=access_denied&error_code=otp_expired&error_description=x", "sb_flow_id=..%2F..&code=x",
		"code=&token_hash=", "next=%2F%2Fevil", "%zz", "code=x;sb_flow_id=y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, _ := url.ParseQuery(raw)
		c, err := ParseCallback(q)
		if err != nil {
			return
		}
		if c.AuthError != "" {
			if strings.Trim(c.AuthError, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != "" || len(c.AuthError) > 64 {
				t.Fatalf("error code %q", c.AuthError)
			}
			return
		}
		if c.Code != "" && (len(c.Code) > 1024 || (c.FlowID != "" && !validFlowID(c.FlowID))) {
			t.Fatalf("accepted %+v", c)
		}
		if c.TokenHash != "" && !emailTypes[c.Type] {
			t.Fatalf("accepted type %q", c.Type)
		}
		if (c.Code == "") == (c.TokenHash == "") {
			t.Fatalf("accepted neither or both: %+v", c)
		}
	})
}

// FuzzParseCallbackCookies: the verifier slot parser never panics and
// returns only printable verifiers and valid flow ids.
func FuzzParseCallbackCookies(f *testing.F) {
	for _, s := range []string{
		`sb-x-auth-token-code-verifier=base64-ImFiYyI; sb-x-auth-token-flows-code-verifier=base64-WyJhYWFhYWFhYWFhYWFhYWFhIl0`,
		`sb-x-auth-token-code-verifier="abc"`, `sb-x-auth-token-code-verifier.0=base64-Im; sb-x-auth-token-code-verifier.1=FiYyI`,
		`sb-x-auth-token-flow-aaaaaaaaaaaaaaaa-code-verifier=base64-ImFiYyI`, `;;==;`, `sb-x-auth-token-flows-code-verifier=%5B1%2C2%5D`,
	} {
		f.Add(s, "aaaaaaaaaaaaaaaa")
		f.Add(s, "")
	}
	f.Fuzz(func(t *testing.T, header, flowID string) {
		v, pending := parseCallbackCookies([]string{header}, "sb-x-auth-token", flowID)
		for i := 0; i < len(v); i++ {
			if v[i] <= ' ' || v[i] > '~' {
				t.Fatalf("verifier %q", v)
			}
		}
		if len(v) > maxVerifierBytes {
			t.Fatalf("verifier of %d bytes", len(v))
		}
		for _, id := range pending {
			if !validFlowID(id) {
				t.Fatalf("pending id %q", id)
			}
		}
	})
}

// FuzzSafeRedirect: whatever the input, the target is under the site or
// an allowed URL, and carries no control characters.
func FuzzSafeRedirect(f *testing.F) {
	fl, err := New(&Config{ProjectURL: "http://127.0.0.1:54321", PublishableKey: "k", SiteURL: "https://app.example.com",
		RedirectURLs: []string{"https://admin.example.com/console"}})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"/a", "//evil", "/\\evil", "https://admin.example.com/console/x", "https://app.example.com@evil",
		"https://admin.example.com/console/../x", "https://admin.example.com/console/%2e%2e/x",
		"javascript:x", "/%2F%2Fevil", "/a?next=//evil", "https://APP.example.com/x", "http://app.example.com/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, next string) {
		got, ok := fl.SafeRedirect(next)
		if strings.ContainsAny(got, "\r\n\x00\\") {
			t.Fatalf("target %q", got)
		}
		u, err := url.Parse(got)
		if err != nil {
			t.Fatalf("target %q does not parse", got)
		}
		host := strings.ToLower(u.Host)
		if u.User != nil || (host != "app.example.com" && host != "admin.example.com") {
			t.Fatalf("SafeRedirect(%q) = %q %v leaves the allowed hosts", next, got, ok)
		}
		// As a browser sees it: dot segments resolved.
		if host == "admin.example.com" && !underPath(path.Clean("/"+u.Path), "/console") {
			t.Fatalf("SafeRedirect(%q) = %q outside the allowed path", next, got)
		}
	})
}
