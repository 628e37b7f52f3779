package ssrcookie

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxChunkSize is the longest cookie value @supabase/ssr writes, measured on
// the URI-encoded value ("base64-" prefix included). Longer values are
// split into numbered chunks.
const MaxChunkSize = 3180

// MaxAge is the Max-Age of every cookie written (400 days), the
// DEFAULT_COOKIE_OPTIONS value that @supabase/ssr always forces on a set.
const MaxAge = 400 * 24 * 60 * 60

// Read limits. Browsers keep cookies of at most about 4 KiB each, so a real
// session never comes near them; they only bound the work a hostile request
// can cause.
const (
	// MaxChunks is the largest number of chunks Read combines.
	MaxChunks = 64
	// MaxValueBytes is the largest combined stored value Read decodes.
	MaxValueBytes = 256 << 10
)

// Base64Prefix marks a base64url-encoded stored value.
const Base64Prefix = "base64-"

// ErrNoSession is returned by [Read] when the request carries no session
// cookie, or one that cannot be decoded (the JavaScript client treats an
// undecodable value as absent and does not delete it).
var ErrNoSession = errors.New("ssrcookie: no session cookie")

// ErrTooLarge is returned by [Read] when the session cookie chunks exceed
// [MaxChunks] or [MaxValueBytes]. It wraps [ErrNoSession]: such a request
// is treated as carrying no session.
var ErrTooLarge = fmt.Errorf("%w: session cookie exceeds the size limit", ErrNoSession)

// Name returns the storage key, which is also the cookie name, for a
// Supabase project URL: "sb-" + first DNS label of the hostname +
// "-auth-token", as supabase-js derives its default storage key
// ("https://abcdefghijklmnopqrst.supabase.co" gives
// "sb-abcdefghijklmnopqrst-auth-token", "http://127.0.0.1:54321" gives
// "sb-127-auth-token"). It fails when projectURL is not an absolute http(s)
// URL with a host.
func Name(projectURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(projectURL))
	if err != nil {
		return "", fmt.Errorf("ssrcookie: project url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", errors.New("ssrcookie: project url must use http or https")
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", errors.New("ssrcookie: project url has no host")
	}
	if strings.Contains(host, ":") { // IPv6: the WHATWG URL keeps the brackets
		host = "[" + host + "]"
	}
	label, _, _ := strings.Cut(host, ".")
	return "sb-" + label + "-auth-token", nil
}

// isChunkLike reports whether a cookie name is the key itself or one of its
// numbered chunks (key.0, key.1, …; no leading zeros), like isChunkLike in
// @supabase/ssr.
func isChunkLike(cookieName, key string) bool {
	if cookieName == key {
		return true
	}
	_, ok := chunkIndex(cookieName, key)
	return ok
}

// chunkIndex returns N when cookieName is key+"."+N with N written without
// leading zeros. Indexes too large for an int are reported with ok true and
// idx -1.
func chunkIndex(cookieName, key string) (idx int, ok bool) {
	if len(cookieName) < len(key)+2 || cookieName[:len(key)] != key || cookieName[len(key)] != '.' {
		return 0, false
	}
	digits := cookieName[len(key)+1:]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	if len(digits) > 1 && digits[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil {
		return -1, true
	}
	return n, true
}

// cookieValue returns a cookie's value as the cookie@1.1.1 parser hands it
// to @supabase/ssr: percent-decoded when it holds a '%' and decodes to valid
// UTF-8, unchanged otherwise. Base64url values are never changed.
func cookieValue(v string) string {
	if !strings.Contains(v, "%") {
		return v
	}
	d, err := url.PathUnescape(v)
	if err != nil || !utf8.ValidString(d) {
		return v
	}
	return d
}

// Read returns the stored session JSON from the request cookies for the
// cookie name (see [Name]). It combines the chunks like @supabase/ssr (a
// non-empty cookie named exactly name wins; otherwise name.0, name.1, … are
// joined up to the first missing or empty one), then strips the "base64-"
// prefix and base64url-decodes, ignoring the characters the JavaScript
// decoder ignores (space, tab, CR, LF and '='). A value without the prefix
// is the legacy raw-JSON format and is returned as stored.
//
// Read returns [ErrNoSession] when no cookie is present, and also when a
// base64 value does not decode to valid UTF-8 JSON, because the JavaScript
// client treats such a value as absent. It returns [ErrTooLarge] (which
// matches ErrNoSession) beyond [MaxChunks] or [MaxValueBytes].
//
// When several cookies share a name the first one counts, as in the
// JavaScript client. Values are percent-decoded like the cookie parser
// does, so the cookies of [http.Request.Cookies] can be passed as they are.
func Read(cookies []*http.Cookie, name string) ([]byte, error) {
	var bare string
	var haveBare bool
	chunks := make([]string, 0, 4)
	seen := make([]bool, 0, 4)
	for _, c := range cookies {
		if c == nil {
			continue
		}
		if c.Name == name {
			if !haveBare {
				haveBare = true
				bare = c.Value
			}
			continue
		}
		i, ok := chunkIndex(c.Name, name)
		if !ok || i < 0 || i > MaxChunks { // index MaxChunks only detects overflow
			continue
		}
		for len(chunks) <= i {
			chunks = append(chunks, "")
			seen = append(seen, false)
		}
		if !seen[i] {
			seen[i] = true
			chunks[i] = c.Value
		}
	}

	var stored string
	if v := cookieValue(bare); v != "" {
		if len(v) > MaxValueBytes {
			return nil, ErrTooLarge
		}
		stored = v
	} else {
		var b strings.Builder
		n := 0
		for i := range chunks {
			v := cookieValue(chunks[i])
			if !seen[i] || v == "" {
				break
			}
			if i == MaxChunks {
				return nil, ErrTooLarge
			}
			n += len(v)
			if n > MaxValueBytes {
				return nil, ErrTooLarge
			}
			b.WriteString(v)
		}
		stored = b.String()
	}
	if stored == "" {
		return nil, ErrNoSession
	}
	return decodeStored(stored)
}

// decodeStored turns a combined stored value into the session JSON.
func decodeStored(stored string) ([]byte, error) {
	if !strings.HasPrefix(stored, Base64Prefix) {
		return []byte(stored), nil // legacy raw JSON, returned as stored
	}
	b, ok := decodeBase64URL(stored[len(Base64Prefix):])
	if !ok || !utf8.Valid(b) || !validJSON(b) {
		return nil, ErrNoSession
	}
	return b, nil
}

// Options are the cookie options of [Write] and [Clear]. The zero value is
// the @supabase/ssr default (DEFAULT_COOKIE_OPTIONS): Path "/", SameSite
// Lax, neither HttpOnly nor Secure, no Domain. Max-Age is not an option: it
// is always [MaxAge] on a set and 0 on a delete, as in @supabase/ssr.
type Options struct {
	// Domain, when set, scopes the cookies to a domain; deletes are then
	// also sent host-only first, to clear leftovers without a Domain.
	Domain string
	// Path defaults to "/".
	Path string
	// Secure adds the Secure attribute.
	Secure bool
	// HTTPOnly adds the HttpOnly attribute. The browser client cannot read
	// an HttpOnly session cookie, so leave it off when one is in use.
	HTTPOnly bool
	// SameSite defaults to Lax (zero value). http.SameSiteDefaultMode
	// omits the attribute.
	SameSite http.SameSite
}

// DefaultOptions returns the @supabase/ssr default cookie options in
// explicit form (the same as the zero Options).
func DefaultOptions() Options {
	return Options{Path: "/", SameSite: http.SameSiteLaxMode}
}

func (o Options) cookie(name, value string, maxAge int, withDomain bool) *http.Cookie {
	c := &http.Cookie{Name: name, Value: value, Path: o.Path, Secure: o.Secure, HttpOnly: o.HTTPOnly, SameSite: o.SameSite, MaxAge: maxAge}
	if c.Path == "" {
		c.Path = "/"
	}
	if c.SameSite == 0 {
		c.SameSite = http.SameSiteLaxMode
	}
	if withDomain {
		c.Domain = o.Domain
	}
	return c
}

// chunk is one cookie of a stored value.
type chunk struct{ name, value string }

// Encode returns the stored cookie value for session JSON: "base64-"
// followed by its base64url encoding without padding.
func Encode(value []byte) string {
	return Base64Prefix + encodeBase64URL(value)
}

// chunksOf splits a stored base64 value like createChunks. Base64url text
// needs no URI escaping, so chunks are plain MaxChunkSize-character slices.
func chunksOf(name, stored string) []chunk {
	if len(stored) <= MaxChunkSize {
		return []chunk{{name, stored}}
	}
	out := make([]chunk, 0, len(stored)/MaxChunkSize+1)
	for i := 0; len(stored) > 0; i++ {
		n := min(MaxChunkSize, len(stored))
		out = append(out, chunk{name + "." + strconv.Itoa(i), stored[:n]})
		stored = stored[n:]
	}
	return out
}

// Write returns the Set-Cookie cookies that store value (the session JSON,
// as [EncodeJSON] or auth-js produce it) under name, exactly as
// applyServerStorage in @supabase/ssr emits them, in this order:
//
//  1. when opts.Domain is set, a host-only delete of each cookie in step 2;
//  2. a delete (Max-Age=0, empty value) of every chunk-like request cookie
//     (name, name.0, name.1, …) that the new value does not use, in request
//     order, including strays such as name.5;
//  3. a set (Max-Age=[MaxAge]) of each new chunk whose value differs from
//     the request cookie of that name.
//
// Deletes are returned with MaxAge -1 (net/http's "Max-Age=0"), sets with
// MaxAge [MaxAge]. Render them with [Serialize] to get the @supabase/ssr
// bytes; [http.SetCookie] produces the same cookies with another attribute
// order. When set is non-empty, the response must also carry
// [CacheHeaders].
//
// requestAfter is the cookie list the rest of the request must see: the
// request cookies without the deleted ones, with the new chunks in place.
func Write(name string, value []byte, request []*http.Cookie, opts Options) (set []*http.Cookie, requestAfter []*http.Cookie) {
	chunks := chunksOf(name, Encode(value))
	newNames := make(map[string]string, len(chunks))
	for _, c := range chunks {
		newNames[c.name] = c.value
	}
	current := currentByName(request)

	var removes []string
	seen := map[string]bool{}
	for _, c := range request {
		if c == nil || seen[c.Name] || !isChunkLike(c.Name, name) {
			continue
		}
		seen[c.Name] = true
		if _, keep := newNames[c.Name]; !keep {
			removes = append(removes, c.Name)
		}
	}

	set = deletes(removes, opts)
	for _, c := range chunks {
		if v, ok := current[c.name]; ok && v == c.value {
			continue
		}
		set = append(set, opts.cookie(c.name, c.value, MaxAge, true))
	}
	return set, after(request, removes, chunks)
}

// Clear returns the deletes of every session chunk present in the request
// (name and name.N), as @supabase/ssr emits them on sign-out:
// host-only deletes first when opts.Domain is set, then deletes with the
// configured options. set is empty when the request carries no session
// cookie. requestAfter is the request cookies without the deleted ones.
func Clear(name string, request []*http.Cookie, opts Options) (set []*http.Cookie, requestAfter []*http.Cookie) {
	var removes []string
	for _, c := range request {
		if c != nil && isChunkLike(c.Name, name) {
			removes = append(removes, c.Name)
		}
	}
	return deletes(removes, opts), after(request, removes, nil)
}

// currentByName maps request cookie names to their (decoded) values; a
// later duplicate overrides an earlier one, like the Map in
// applyServerStorage.
func currentByName(request []*http.Cookie) map[string]string {
	m := make(map[string]string, len(request))
	for _, c := range request {
		if c != nil {
			m[c.Name] = cookieValue(c.Value)
		}
	}
	return m
}

func deletes(removes []string, opts Options) []*http.Cookie {
	if len(removes) == 0 {
		return nil
	}
	var out []*http.Cookie
	if opts.Domain != "" {
		for _, n := range removes {
			out = append(out, opts.cookie(n, "", -1, false))
		}
	}
	for _, n := range removes {
		out = append(out, opts.cookie(n, "", -1, true))
	}
	return out
}

// after builds the cookie list the rest of the request sees.
func after(request []*http.Cookie, removes []string, chunks []chunk) []*http.Cookie {
	drop := make(map[string]bool, len(removes))
	for _, n := range removes {
		drop[n] = true
	}
	newValue := make(map[string]string, len(chunks))
	for _, c := range chunks {
		newValue[c.name] = c.value
	}
	done := make(map[string]bool, len(chunks))
	out := make([]*http.Cookie, 0, len(request)+len(chunks))
	for _, c := range request {
		if c == nil || drop[c.Name] {
			continue
		}
		if v, ok := newValue[c.Name]; ok {
			if done[c.Name] {
				continue
			}
			done[c.Name] = true
			out = append(out, &http.Cookie{Name: c.Name, Value: v})
			continue
		}
		out = append(out, c)
	}
	for _, c := range chunks {
		if !done[c.name] {
			out = append(out, &http.Cookie{Name: c.name, Value: c.value})
		}
	}
	return out
}

// CacheHeaders returns the headers @supabase/ssr passes to setAll with the
// first cookie write of a response: they forbid any cache from storing a
// response that carries a session.
func CacheHeaders() http.Header {
	return http.Header{
		"Cache-Control": {"private, no-cache, no-store, must-revalidate, max-age=0"},
		"Expires":       {"0"},
		"Pragma":        {"no-cache"},
	}
}

// Serialize renders c as a Set-Cookie header value in the attribute order
// of cookie@1.1.1 (used by @supabase/ssr): name=value; Max-Age; Domain;
// Path; HttpOnly; Secure; Partitioned; SameSite. MaxAge < 0 renders as
// "Max-Age=0", MaxAge 0 omits the attribute (net/http's convention). The
// value is written as given; values produced by this package never need
// escaping.
func Serialize(c *http.Cookie) string {
	var b strings.Builder
	b.Grow(len(c.Name) + len(c.Value) + 64)
	b.WriteString(c.Name)
	b.WriteByte('=')
	b.WriteString(c.Value)
	switch {
	case c.MaxAge > 0:
		b.WriteString("; Max-Age=")
		b.WriteString(strconv.Itoa(c.MaxAge))
	case c.MaxAge < 0:
		b.WriteString("; Max-Age=0")
	}
	if c.Domain != "" {
		b.WriteString("; Domain=")
		b.WriteString(c.Domain)
	}
	if c.Path != "" {
		b.WriteString("; Path=")
		b.WriteString(c.Path)
	}
	if !c.Expires.IsZero() {
		b.WriteString("; Expires=")
		b.WriteString(c.Expires.UTC().Format(http.TimeFormat))
	}
	if c.HttpOnly {
		b.WriteString("; HttpOnly")
	}
	if c.Secure {
		b.WriteString("; Secure")
	}
	if c.Partitioned {
		b.WriteString("; Partitioned")
	}
	switch c.SameSite {
	case http.SameSiteLaxMode:
		b.WriteString("; SameSite=Lax")
	case http.SameSiteStrictMode:
		b.WriteString("; SameSite=Strict")
	case http.SameSiteNoneMode:
		b.WriteString("; SameSite=None")
	}
	return b.String()
}

// AddHeaders adds set to h as Set-Cookie lines (see [Serialize]) and, when
// set is non-empty, the [CacheHeaders] (replacing any earlier values of
// those three headers). It does nothing for an empty set.
func AddHeaders(h http.Header, set []*http.Cookie) {
	if len(set) == 0 {
		return
	}
	for _, c := range set {
		h.Add("Set-Cookie", Serialize(c))
	}
	for k, v := range CacheHeaders() {
		h[k] = v
	}
}
