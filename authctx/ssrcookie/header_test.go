package ssrcookie

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestHeaderCookies: the Cookie header is split like cookie@1.1.1 parse
// (the rules are checked against the real @supabase/ssr end to end in
// TestCookieHeaderMatchesSSR of integration/ssr).
func TestHeaderCookies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lines []string
		want  string // name=value pairs joined by "|"
	}{
		{"none", nil, ""},
		{"only session-like names", []string{"a=1; k=v; k.0=c0; k.x=1; k.01=2; kk=3; k.1=c1"}, "k=v|k.0=c0|k.1=c1"},
		{"values net/http drops", []string{`k={"a":"Zoë \"q\" \\"}`}, `k={"a":"Zoë \"q\" \\"}`},
		{"quotes kept", []string{`k="base64-x"`}, `k="base64-x"`},
		{"spaces and tabs trimmed", []string{" \tk \t= \t v v \t;k.0=  "}, "k=v v|k.0="},
		{"other whitespace kept", []string{"k=\vv\n"}, "k=\vv\n"},
		{"'=' in the value", []string{"k=a=b=="}, "k=a=b=="},
		{"pair without '=' skipped", []string{"k; k.0=x; =y; k"}, "k.0=x"},
		{"first pair of a name wins", []string{"k=1; k=2; k.0=a", "k.0=b; k=3"}, "k=1|k.0=a"},
		{"undecoded", []string{"k=%7B%7D"}, "k=%7B%7D"},
		{"chunk index bound", []string{"k." + strconv.Itoa(MaxChunks) + "=last; k." + strconv.Itoa(MaxChunks+1) + "=over; k.99999999999999999999=x"},
			"k." + strconv.Itoa(MaxChunks) + "=last"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range HeaderCookies(tc.lines, "k") {
				got = append(got, c.Name+"="+c.Value)
			}
			if strings.Join(got, "|") != tc.want {
				t.Fatalf("got %q, want %q", strings.Join(got, "|"), tc.want)
			}
		})
	}
	if HeaderCookies([]string{"=x"}, "") != nil {
		t.Error("empty name matched")
	}
	// A hostile header repeating names yields one cookie per name.
	h := strings.Repeat("k=1; k.0=2; ", 10000)
	for i := range MaxChunks + 10 {
		h += "k." + strconv.Itoa(i) + "=x; "
	}
	if n := len(HeaderCookies([]string{h}, "k")); n != MaxChunks+2 {
		t.Fatalf("%d cookies, want at most %d", n, MaxChunks+2)
	}
	// What net/http reads the same way, HeaderCookies reads the same way.
	r := &http.Request{Header: http.Header{"Cookie": {"x=1; k.1=b; k=base64-eyJhIjoxfQ; k.0=a"}}}
	a, _ := Read(r.Cookies(), "k")
	b, _ := Read(HeaderCookies(r.Header["Cookie"], "k"), "k")
	if string(a) != `{"a":1}` || string(a) != string(b) {
		t.Fatalf("net/http %q, HeaderCookies %q", a, b)
	}
}
