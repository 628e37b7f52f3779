package ssrcookie

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRead feeds arbitrary Cookie headers to Read, split both by net/http
// and by HeaderCookies: it must never panic, must honour the size limit,
// and anything it returns from a base64 value must be valid JSON that
// Write stores and Read returns unchanged. HeaderCookies returns only
// chunk-like names, at most one per name.
func FuzzRead(f *testing.F) {
	v := loadVectors(f)
	small := strings.SplitN(v.Small.SetCookie[0], ";", 2)[0]
	f.Add(small)
	f.Add("k=base64-eyJhIjoxfQ")
	f.Add("k.0=base64-eyJh; k.1=IjoxfQ")
	f.Add("k=%7B%22a%22%3A1%7D")
	f.Add("k=; k.0=base64-e; k.1=yJhIjoxfQ==; k.5=x")
	f.Add("k.0=base64-+/; k.00=x")
	f.Add("k=base64-_-_-")
	f.Add(`k={"a":"Zoë \"q\""}; k.0="base64-eyJhIjoxfQ"`)
	f.Add(" k \t= \tbase64-eyJhIjoxfQ ; k=x")
	f.Fuzz(func(t *testing.T, header string) {
		r := &http.Request{Header: http.Header{"Cookie": {header}}}
		for _, name := range []string{"k", vectorName} {
			hc := HeaderCookies(r.Header["Cookie"], name)
			if len(hc) > MaxChunks+2 {
				t.Fatalf("HeaderCookies returned %d cookies", len(hc))
			}
			seen := map[string]bool{}
			for _, c := range hc {
				if !isChunkLike(c.Name, name) || seen[c.Name] {
					t.Fatalf("HeaderCookies returned %q", c.Name)
				}
				seen[c.Name] = true
			}
			readRoundTrip(t, r.Cookies(), name)
			readRoundTrip(t, hc, name)
		}
	})
}

// readRoundTrip checks Read on cookies and, for a JSON result, that Write
// stores it so that Read returns it unchanged.
func readRoundTrip(t *testing.T, cookies []*http.Cookie, name string) {
	t.Helper()
	got, err := Read(cookies, name)
	if err != nil {
		if !errors.Is(err, ErrNoSession) {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	if len(got) == 0 || len(got) > MaxValueBytes {
		t.Fatalf("returned %d bytes", len(got))
	}
	_, _ = LoadSession(got)
	_, _ = ParseSession(got)
	if !json.Valid(got) || !utf8.Valid(got) {
		// The legacy raw path returns the value as stored, which may be
		// no JSON, or (from HeaderCookies: raw header bytes) not UTF-8.
		// Write stores session JSON, a JavaScript string: UTF-8.
		return
	}
	set, after := Write(name, got, cookies, Options{Domain: "example.com"})
	for _, c := range set {
		_ = Serialize(c)
	}
	back, err := Read(after, name)
	if err != nil || !bytes.Equal(back, got) {
		t.Fatalf("round trip: %v", err)
	}
}

// FuzzStringifyJSON: StringifyJSON never panics, prints valid JSON with the
// same meaning as its input, and is a fixed point on its own output.
func FuzzStringifyJSON(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[1e21,1e-7,-0,0.1]`, `{"2":1,"1":2,"b":"\u2028<>&"}`, `"\ud800"`, `123456789012345678901234567890`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, err := StringifyJSON([]byte(in))
		if err != nil {
			if json.Valid([]byte(in)) {
				t.Fatalf("valid JSON refused: %v", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid output %q", out)
		}
		var a, b any
		if json.Unmarshal([]byte(in), &a) == nil && json.Unmarshal(out, &b) == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q -> %q", in, out)
		}
		again, err := StringifyJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q", out, again)
		}
	})
}

// FuzzBase64 checks the fast path of decodeBase64URL against the
// character-by-character port of the JavaScript decoder.
func FuzzBase64(f *testing.F) {
	for _, s := range []string{"eyJhIjoxfQ", "eyJhIjoxfQ==", "eyJh IjoxfQ", "eyJhIjoxfR", "a", "ab", "abc", "+/", "_-_-", "eyJ\r\nh"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, aok := decodeBase64URL(s)
		b, bok := decodeBase64URLSlow(s)
		if aok != bok || !bytes.Equal(a, b) {
			t.Fatalf("%q: fast %q %v, slow %q %v", s, a, aok, b, bok)
		}
	})
}

// FuzzTokensOnly: TokensOnly never panics; what it returns is valid JSON
// without a top-level user member, equal to StringifyJSON's output when
// the input had no user.
func FuzzTokensOnly(f *testing.F) {
	for _, s := range []string{
		`{"access_token":"a","user":{"id":"u"},"refresh_token":"r"}`, `{"user":1,"user":2}`, `{"0":1,"user":null,"a":[]}`,
		`[]`, `{}`, `{"access_token":"a\u2028"}`, `{"user`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := TokensOnly(raw)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("TokensOnly(%q) = %q is not a JSON object", raw, out)
		}
		if _, has := m["user"]; has {
			t.Fatalf("TokensOnly(%q) kept user: %q", raw, out)
		}
	})
}
