package ssrcookie

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const vectorName = "sb-abcdefghijklmnopqrst-auth-token"

// vectors are the @supabase/ssr 0.12.7 outputs captured in Node
// (testdata/supabase-cookie-vectors.json, the same file as
// authctx/testdata/supabase-cookie-vectors.json).
type vectors struct {
	Small struct {
		SessionJSON   string            `json:"session_json"`
		SetCookie     []string          `json:"set_cookie"`
		SetAllHeaders map[string]string `json:"setAll_headers"`
	} `json:"small"`
	Large struct {
		SessionJSON  string   `json:"session_json"`
		SetCookie    []string `json:"set_cookie"`
		ChunkLengths [][2]any `json:"chunk_lengths"`
	} `json:"large"`
}

func loadVectors(t testing.TB) vectors {
	t.Helper()
	b, err := os.ReadFile("testdata/supabase-cookie-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	if v.Small.SessionJSON == "" || len(v.Small.SetCookie) != 1 || len(v.Large.SetCookie) != 3 {
		t.Fatal("vector file does not have the expected shape")
	}
	return v
}

func lines(set []*http.Cookie) []string {
	out := make([]string, len(set))
	for i, c := range set {
		out[i] = Serialize(c)
	}
	return out
}

// cookieFromLine returns the name=value pair of a Set-Cookie line as a
// request cookie, as the browser would send it back.
func cookieFromLine(t *testing.T, line string) *http.Cookie {
	t.Helper()
	c, err := http.ParseSetCookie(line)
	if err != nil {
		t.Fatalf("parse %q: %v", line[:min(len(line), 60)], err)
	}
	return &http.Cookie{Name: c.Name, Value: c.Value}
}

func equalLines(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d Set-Cookie lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("line %d:\n got %.160s…\nwant %.160s…", i, got[i], want[i])
		}
	}
}

func TestVectorSmallWrite(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	set, after := Write(vectorName, []byte(v.Small.SessionJSON), nil, Options{})
	equalLines(t, lines(set), v.Small.SetCookie)
	for k, want := range v.Small.SetAllHeaders {
		if got := CacheHeaders().Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if len(CacheHeaders()) != len(v.Small.SetAllHeaders) {
		t.Errorf("CacheHeaders has %d headers, vector %d", len(CacheHeaders()), len(v.Small.SetAllHeaders))
	}
	got, err := Read(after, vectorName)
	if err != nil || string(got) != v.Small.SessionJSON {
		t.Fatalf("Read(requestAfter) = %.40q, %v", got, err)
	}
}

func TestVectorLargeWrite(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	// The request carried the V1 single cookie.
	req := []*http.Cookie{cookieFromLine(t, v.Small.SetCookie[0])}
	set, after := Write(vectorName, []byte(v.Large.SessionJSON), req, Options{})
	equalLines(t, lines(set), v.Large.SetCookie)
	for i, cl := range v.Large.ChunkLengths {
		if i == 0 {
			continue // the delete
		}
		if set[i].Name != cl[0].(string) || len(set[i].Value) != int(cl[1].(float64)) {
			t.Errorf("chunk %d = %s/%d, want %v", i, set[i].Name, len(set[i].Value), cl)
		}
	}
	if len(after) != 2 || after[0].Name != vectorName+".0" || after[1].Name != vectorName+".1" {
		t.Fatalf("requestAfter = %v", after)
	}
	got, err := Read(after, vectorName)
	if err != nil || string(got) != v.Large.SessionJSON {
		t.Fatalf("Read(requestAfter) = %.40q, %v", got, err)
	}
}

func TestVectorsRead(t *testing.T) {
	t.Parallel()
	v := loadVectors(t)
	small := []*http.Cookie{cookieFromLine(t, v.Small.SetCookie[0])}
	if got, err := Read(small, vectorName); err != nil || string(got) != v.Small.SessionJSON {
		t.Fatalf("small: %v", err)
	}
	large := []*http.Cookie{cookieFromLine(t, v.Large.SetCookie[2]), cookieFromLine(t, v.Large.SetCookie[1])}
	if got, err := Read(large, vectorName); err != nil || string(got) != v.Large.SessionJSON {
		t.Fatalf("large: %v", err)
	}
	// StringifyJSON is the identity on JSON.stringify output, including
	// "Zoë ✓" kept as raw UTF-8.
	for _, s := range []string{v.Small.SessionJSON, v.Large.SessionJSON} {
		got, err := StringifyJSON([]byte(s))
		if err != nil || string(got) != s {
			t.Fatalf("StringifyJSON changed a JSON.stringify output: %v", err)
		}
		sess, err := ParseSession([]byte(s))
		if err != nil || sess.RefreshToken != "abcdefghijkl" || sess.ExpiresAt != 4102444800 || sess.ExpiresIn != 3600 || sess.TokenType != "bearer" || !bytes.Equal(sess.Raw, []byte(s)) {
			t.Fatalf("ParseSession = %+v, %v", sess, err)
		}
	}
}

// V3: signOut with chunked cookies and cookieOptions {domain, secure}.
func TestVectorSignOutClear(t *testing.T) {
	t.Parallel()
	req := []*http.Cookie{
		{Name: vectorName + ".0", Value: "base64-abc"},
		{Name: "other", Value: "x"},
		{Name: vectorName + ".1", Value: "def"},
	}
	set, after := Clear(vectorName, req, Options{Domain: ".example.com", Secure: true})
	equalLines(t, lines(set), []string{
		"sb-abcdefghijklmnopqrst-auth-token.0=; Max-Age=0; Path=/; Secure; SameSite=Lax",
		"sb-abcdefghijklmnopqrst-auth-token.1=; Max-Age=0; Path=/; Secure; SameSite=Lax",
		"sb-abcdefghijklmnopqrst-auth-token.0=; Max-Age=0; Domain=.example.com; Path=/; Secure; SameSite=Lax",
		"sb-abcdefghijklmnopqrst-auth-token.1=; Max-Age=0; Domain=.example.com; Path=/; Secure; SameSite=Lax",
	})
	if len(after) != 1 || after[0].Name != "other" {
		t.Fatalf("requestAfter = %v", after)
	}
	if set, _ := Clear(vectorName, []*http.Cookie{{Name: "other", Value: "x"}}, Options{}); len(set) != 0 {
		t.Fatalf("Clear without session cookies = %v", lines(set))
	}
}

// net/http renders the same cookies with another attribute order; parsed
// back, both forms are the same cookie.
func TestSerializeMatchesNetHTTPSemantically(t *testing.T) {
	t.Parallel()
	opts := []Options{{}, {Domain: ".example.com", Secure: true, HTTPOnly: true, SameSite: http.SameSiteStrictMode, Path: "/app"}, {SameSite: http.SameSiteNoneMode, Secure: true}}
	for _, o := range opts {
		for _, c := range []*http.Cookie{o.cookie(vectorName, "base64-eyJ", MaxAge, true), o.cookie(vectorName+".1", "", -1, true)} {
			ours, err := http.ParseSetCookie(Serialize(c))
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := http.ParseSetCookie(c.String())
			if err != nil {
				t.Fatal(err)
			}
			ours.Raw, theirs.Raw = "", ""
			// net/http drops a leading dot from Domain; RFC 6265 §5.2.3
			// ignores it too.
			ours.Domain = strings.TrimPrefix(ours.Domain, ".")
			if !reflect.DeepEqual(ours, theirs) {
				t.Errorf("%q vs %q", Serialize(c), c.String())
			}
		}
	}
}

func TestSetOptions(t *testing.T) {
	t.Parallel()
	set, _ := Write(vectorName, []byte(`{"a":1}`), nil, Options{Domain: "example.com", Path: "/x", Secure: true, HTTPOnly: true})
	want := vectorName + "=base64-eyJhIjoxfQ; Max-Age=34560000; Domain=example.com; Path=/x; HttpOnly; Secure; SameSite=Lax"
	equalLines(t, lines(set), []string{want})
}

func TestChunkBoundaries(t *testing.T) {
	t.Parallel()
	exact := strings.Repeat("a", MaxChunkSize)
	if c := chunksOf("k", exact); len(c) != 1 || c[0].name != "k" {
		t.Fatalf("3180 chars: %d chunks", len(c))
	}
	c := chunksOf("k", exact+"b")
	if len(c) != 2 || c[0].name != "k.0" || len(c[0].value) != MaxChunkSize || c[1].name != "k.1" || c[1].value != "b" {
		t.Fatalf("3181 chars: %+v", c)
	}
	if c := chunksOf("k", exact+exact); len(c) != 2 || len(c[1].value) != MaxChunkSize {
		t.Fatalf("6360 chars: %d chunks", len(c))
	}
	// Through Write: 2379 bytes encode to 3179 stored chars (one cookie),
	// 2380 bytes to 3181 (two). Base64 cannot produce exactly 3180.
	for _, tc := range []struct {
		n      int
		chunks []int
	}{{2379, []int{3179}}, {2380, []int{3180, 1}}, {4764, []int{3180, 3179}}, {4765, []int{3180, 3180, 1}}} {
		val := sessionOfSize(tc.n)
		set, after := Write("k", val, nil, Options{})
		var got []int
		for _, c := range set {
			got = append(got, len(c.Value))
		}
		if !reflect.DeepEqual(got, tc.chunks) {
			t.Errorf("%d bytes: chunk lengths %v, want %v", tc.n, got, tc.chunks)
		}
		if len(tc.chunks) == 1 && set[0].Name != "k" {
			t.Errorf("single chunk named %q", set[0].Name)
		}
		back, err := Read(after, "k")
		if err != nil || !bytes.Equal(back, val) {
			t.Errorf("%d bytes: round trip failed: %v", tc.n, err)
		}
	}
}

// sessionOfSize returns JSON of exactly n bytes.
func sessionOfSize(n int) []byte {
	const head, tail = `{"access_token":"a.b.c","refresh_token":"r","expires_at":1,"pad":"`, `"}`
	return []byte(head + strings.Repeat("p", n-len(head)-len(tail)) + tail)
}

func TestWriteDeletesAndDedupe(t *testing.T) {
	t.Parallel()
	big := sessionOfSize(5000) // 3 chunks
	set, after := Write("k", big, nil, Options{})
	if len(set) != 3 {
		t.Fatalf("want 3 chunks, got %d", len(set))
	}
	// Rewriting the same value with the same cookies plus strays: only the
	// strays are deleted (stray .5, bare name), unchanged chunks skipped.
	req := append([]*http.Cookie{{Name: "k", Value: "base64-old"}, {Name: "k.5", Value: "zzz"}, {Name: "k.05", Value: "not-chunk-like"}, {Name: "k-code-verifier", Value: "v"}}, after...)
	set2, after2 := Write("k", big, req, Options{})
	equalLines(t, lines(set2), []string{"k=; Max-Age=0; Path=/; SameSite=Lax", "k.5=; Max-Age=0; Path=/; SameSite=Lax"})
	names := []string{}
	for _, c := range after2 {
		names = append(names, c.Name)
	}
	if !reflect.DeepEqual(names, []string{"k.05", "k-code-verifier", "k.0", "k.1", "k.2"}) {
		t.Fatalf("requestAfter names = %v", names)
	}
	// Shrinking to one cookie deletes all three chunks, then sets the bare
	// name; with a Domain, host-only deletes come first.
	small := []byte(`{"access_token":"a","refresh_token":"r","expires_at":1}`)
	set3, after3 := Write("k", small, after, Options{Domain: "example.com"})
	want := []string{
		"k.0=; Max-Age=0; Path=/; SameSite=Lax", "k.1=; Max-Age=0; Path=/; SameSite=Lax", "k.2=; Max-Age=0; Path=/; SameSite=Lax",
		"k.0=; Max-Age=0; Domain=example.com; Path=/; SameSite=Lax", "k.1=; Max-Age=0; Domain=example.com; Path=/; SameSite=Lax", "k.2=; Max-Age=0; Domain=example.com; Path=/; SameSite=Lax",
		"k=" + Encode(small) + "; Max-Age=34560000; Domain=example.com; Path=/; SameSite=Lax",
	}
	equalLines(t, lines(set3), want)
	if got, err := Read(after3, "k"); err != nil || !bytes.Equal(got, small) {
		t.Fatalf("read after shrink: %v", err)
	}
	// Unchanged single value: nothing to write.
	if set4, _ := Write("k", small, after3, Options{}); len(set4) != 0 {
		t.Fatalf("unchanged write emitted %v", lines(set4))
	}
}

func TestReadRules(t *testing.T) {
	t.Parallel()
	sess := []byte(`{"access_token":"a","refresh_token":"r","expires_at":1}`)
	enc := Encode(sess)
	other := Encode([]byte(`{"x":1}`))
	tests := []struct {
		name    string
		cookies []*http.Cookie
		want    string
		err     error
	}{
		{"absent", nil, "", ErrNoSession},
		{"unrelated", []*http.Cookie{{Name: "x", Value: enc}}, "", ErrNoSession},
		{"bare", []*http.Cookie{{Name: "k", Value: enc}}, string(sess), nil},
		{"bare wins over chunks", []*http.Cookie{{Name: "k.0", Value: other}, {Name: "k", Value: enc}}, string(sess), nil},
		{"empty bare falls back to chunks", []*http.Cookie{{Name: "k", Value: ""}, {Name: "k.1", Value: enc[10:]}, {Name: "k.0", Value: enc[:10]}}, string(sess), nil},
		{"first duplicate wins", []*http.Cookie{{Name: "k", Value: enc}, {Name: "k", Value: other}}, string(sess), nil},
		{"gap stops", []*http.Cookie{{Name: "k.0", Value: enc}, {Name: "k.2", Value: "AAAA"}}, string(sess), nil},
		{"no .0", []*http.Cookie{{Name: "k.1", Value: enc}}, "", ErrNoSession},
		{"legacy raw JSON", []*http.Cookie{{Name: "k", Value: string(sess)}}, string(sess), nil},
		{"legacy percent-encoded", []*http.Cookie{{Name: "k", Value: "%7B%22a%22%3A%22Zo%C3%AB%22%7D"}}, `{"a":"Zoë"}`, nil},
		{"padding and whitespace ignored", []*http.Cookie{{Name: "k", Value: "base64-eyJh IjoxfQ=="}}, `{"a":1}`, nil},
		{"std base64 char", []*http.Cookie{{Name: "k", Value: "base64-eyJhIjoxfQ+/"}}, "", ErrNoSession},
		{"not JSON", []*http.Cookie{{Name: "k", Value: Encode([]byte("{nope"))}}, "", ErrNoSession},
		{"invalid UTF-8", []*http.Cookie{{Name: "k", Value: Encode([]byte("\"\xff\""))}}, "", ErrNoSession},
		{"mixed generations", []*http.Cookie{{Name: "k.0", Value: enc[:12]}, {Name: "k.1", Value: other[12:]}}, "", ErrNoSession},
		{"nil cookie", []*http.Cookie{nil, {Name: "k", Value: enc}}, string(sess), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(tc.cookies, "k")
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadLimits(t *testing.T) {
	t.Parallel()
	var cs []*http.Cookie
	for i := 0; i <= MaxChunks; i++ {
		cs = append(cs, &http.Cookie{Name: "k." + strconv.Itoa(i), Value: "AAAA"})
	}
	if _, err := Read(cs, "k"); !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrNoSession) {
		t.Fatalf("%d chunks: %v", len(cs), err)
	}
	if _, err := Read([]*http.Cookie{{Name: "k", Value: "base64-" + strings.Repeat("A", MaxValueBytes)}}, "k"); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge bare: %v", err)
	}
	// MaxChunks chunks exactly is accepted.
	sess := sessionOfSize(MaxChunks*MaxChunkSize*3/4 - 200)
	_, after := Write("k", sess, nil, Options{})
	if len(after) > MaxChunks {
		t.Fatalf("test session needs %d chunks", len(after))
	}
	if got, err := Read(after, "k"); err != nil || !bytes.Equal(got, sess) {
		t.Fatalf("%d chunks: %v", len(after), err)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://abcdefghijklmnopqrst.supabase.co": "sb-abcdefghijklmnopqrst-auth-token",
		" https://ABCDEF.supabase.co/ ":            "sb-abcdef-auth-token",
		"http://127.0.0.1:54321":                   "sb-127-auth-token",
		"http://localhost:54321":                   "sb-localhost-auth-token",
		"https://api.example.com/some/path?x=1":    "sb-api-auth-token",
	} {
		got, err := Name(in)
		if err != nil || got != want {
			t.Errorf("Name(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "abcdef.supabase.co", "ftp://x.y", "https://", "://x"} {
		if got, err := Name(bad); err == nil {
			t.Errorf("Name(%q) = %q, want error", bad, got)
		}
	}
}

func TestParseSession(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{}`, `["a","b",null,null]`,
		`{"access_token":"a","refresh_token":"r"}`, `{"access_token":"","refresh_token":"r","expires_at":1}`,
		`{"access_token":1,"refresh_token":"r","expires_at":1}`, `{"access_token":"a","refresh_token":"r","expires_at":null}`,
		`{"access_token":"a","refresh_token":"r","expires_at":1e400}`, `{"access_token":"a"`} {
		if _, err := ParseSession([]byte(bad)); !errors.Is(err, ErrInvalidSession) {
			t.Errorf("ParseSession(%q) = %v", bad, err)
		}
	}
	s, err := ParseSession([]byte(`{"access_token":"a","refresh_token":"r","expires_at":1700000000.6,"user":null,"provider_token":"p"}`))
	if err != nil || s.ExpiresAt != 1700000000 || s.User != nil || s.ProviderToken != "p" {
		t.Fatalf("%+v %v", s, err)
	}
}

// LoadSession is auth-js _isValidSession: the three keys present, whatever
// their values; ParseSession additionally wants usable values.
func TestLoadSession(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{``, `null`, `[]`, `"x"`, `{}`, `["a","b",null,null]`, `{"access_token":"a"`,
		`{"access_token":"a","refresh_token":"r"}`, `{"refresh_token":"r","expires_at":1}`, `{"access_token":"a","expires_at":1}`} {
		if _, err := LoadSession([]byte(bad)); !errors.Is(err, ErrInvalidSession) {
			t.Errorf("LoadSession(%q) = %v", bad, err)
		}
	}
	for _, tc := range []struct {
		in     string
		want   Session
		usable bool // ParseSession accepts it too
	}{
		{`{"access_token":null,"refresh_token":null,"expires_at":null}`, Session{}, false},
		{`{"access_token":1,"refresh_token":"","expires_at":"4102444800"}`, Session{}, false},
		{`{"access_token":"a","refresh_token":"r","expires_at":1e400}`, Session{AccessToken: "a", RefreshToken: "r"}, false},
		{` {"expires_at":-5.9,"refresh_token":"r","access_token":"a\u00e9"}`, Session{AccessToken: "aé", RefreshToken: "r", ExpiresAt: -5}, true},
	} {
		s, err := LoadSession([]byte(tc.in))
		if err != nil || s.AccessToken != tc.want.AccessToken || s.RefreshToken != tc.want.RefreshToken ||
			s.ExpiresAt != tc.want.ExpiresAt || string(s.Raw) != tc.in {
			t.Errorf("LoadSession(%q) = %+v %v, want %+v", tc.in, s, err, tc.want)
			continue
		}
		if _, err := ParseSession([]byte(tc.in)); (err == nil) != tc.usable {
			t.Errorf("ParseSession(%q): %v, usable %v", tc.in, err, tc.usable)
		}
	}
}

func TestEncodeJSON(t *testing.T) {
	t.Parallel()
	type T struct {
		S string         `json:"s"`
		N float64        `json:"n"`
		M map[string]int `json:"m"`
	}
	got, err := EncodeJSON(T{S: "<a&b> \u2028\u2029 \x01\x7f\t\"\\ Zoë", N: 1e21, M: map[string]int{"b": 1, "10": 2, "2": 3, "a": 4}})
	want := `{"s":"<a&b> ` + "\u2028\u2029" + ` \u0001` + "\x7f" + `\t\"\\ Zoë","n":1e+21,"m":{"2":3,"10":2,"a":4,"b":1}}`
	if err != nil || string(got) != want {
		t.Fatalf("got  %s\nwant %s (%v)", got, want, err)
	}
	for in, want := range map[string]string{
		`0`: `0`, `-0`: `0`, `1.0`: `1`, `123456789012345678901`: `123456789012345680000`, `1e21`: `1e+21`,
		`0.000001`: `0.000001`, `0.0000001`: `1e-7`, `1.5e-7`: `1.5e-7`, `-2.5E+3`: `-2500`, `1e400`: `null`,
		`12345678901234567890`: `12345678901234567000`, `0.1`: `0.1`, `100`: `100`,
		`{"a":1,"a":2,"b":3}`: `{"a":2,"b":3}`, `{"4294967295":1,"4294967294":2,"01":3,"1":4}`: `{"1":4,"4294967294":2,"4294967295":1,"01":3}`,
		` [ true , false , null , "\u003c\ud83d\ude00" ] `: `[true,false,null,"<😀"]`, `{}`: `{}`, `[]`: `[]`,
	} {
		got, err := StringifyJSON([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("StringifyJSON(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	if _, err := StringifyJSON([]byte(`{"a":}`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
}

func TestAddHeaders(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	AddHeaders(h, nil)
	if len(h) != 0 {
		t.Fatalf("empty set added headers: %v", h)
	}
	set, _ := Write("k", []byte(`{"a":1}`), nil, Options{})
	h.Set("Cache-Control", "public, max-age=60")
	AddHeaders(h, set)
	if h.Get("Cache-Control") != "private, no-cache, no-store, must-revalidate, max-age=0" || h.Get("Expires") != "0" || h.Get("Pragma") != "no-cache" {
		t.Fatalf("cache headers: %v", h)
	}
	if got := h.Values("Set-Cookie"); len(got) != 1 || got[0] != Serialize(set[0]) {
		t.Fatalf("Set-Cookie: %v", got)
	}
}

func TestTokensOnly(t *testing.T) {
	t.Parallel()
	got, err := TokensOnly([]byte(`{"access_token":"a.b.c","token_type":"bearer","expires_in":3600,"expires_at":4102444800,"refresh_token":"abcdefghijkl","user":{"id":"u","name":"Zoë <x>"},"provider_token":"p"}`))
	want := `{"access_token":"a.b.c","token_type":"bearer","expires_in":3600,"expires_at":4102444800,"refresh_token":"abcdefghijkl","provider_token":"p"}`
	if err != nil || string(got) != want {
		t.Fatalf("TokensOnly = %s %v", got, err)
	}
	for _, bad := range []string{`[]`, `"x"`, `{`} {
		if _, err := TokensOnly([]byte(bad)); err == nil {
			t.Errorf("TokensOnly(%s) accepted", bad)
		}
	}
}
