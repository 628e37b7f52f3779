package authctx

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Limits of the session cookie reader.
const (
	// maxCookieChunks bounds the .0, .1, … chunks read for one session.
	maxCookieChunks = 32
	// maxSessionBytes bounds the combined cookie value of one session.
	maxSessionBytes = 64 << 10
)

// CookieSession is the part of an @supabase/ssr session cookie that
// caller resolution reads. The full session JSON is kept in Raw for the
// refresh flow.
type CookieSession struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
	// ExpiresAt is the session's expires_at (Unix seconds), 0 when absent.
	ExpiresAt int64 `json:"expires_at"`
	// Raw is the decoded session JSON.
	Raw json.RawMessage `json:"-"`
	// Chunked reports whether the value came from .N chunks.
	Chunked bool `json:"-"`
}

// CookieNameFor returns the @supabase/ssr cookie name for a project URL:
// "sb-" + the first DNS label of the host + "-auth-token"
// (https://abc.supabase.co → sb-abc-auth-token, http://127.0.0.1:54321 →
// sb-127-auth-token).
func CookieNameFor(projectURL string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(projectURL))
	if err != nil || u.Hostname() == "" {
		return "", &url.Error{Op: "parse", URL: projectURL, Err: errNoHost}
	}
	return "sb-" + strings.Split(u.Hostname(), ".")[0] + "-auth-token", nil
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errNoHost = constErr("project URL has no host")

// ReadSessionCookie reads the session stored under name in the
// @supabase/ssr format from a request's cookies: a cookie named exactly
// name wins, otherwise the chunks name.0, name.1, … up to the first
// missing index are joined. A "base64-" value is base64url-decoded
// (padding and whitespace tolerated, like @supabase/ssr); any other value
// is the legacy plain JSON, URI-decoded when needed. ok is false when no
// cookie is present or the value is not a session object with a string
// access_token (such cookies count as absent, as in @supabase/ssr). It
// never panics, whatever the input (fuzzed through Resolve).
func ReadSessionCookie(cookies []*http.Cookie, name string) (CookieSession, bool) {
	var s CookieSession
	if name == "" {
		return s, false
	}
	value, chunked := combineChunks(cookies, name)
	if value == "" {
		return s, false
	}
	raw, ok := decodeSessionValue(value)
	if !ok {
		return s, false
	}
	if len(raw) == 0 || raw[0] != '{' {
		return s, false
	}
	var probe struct {
		AccessToken  any `json:"access_token"`
		RefreshToken any `json:"refresh_token"`
		ExpiresAt    any `json:"expires_at"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return s, false
	}
	at, ok := probe.AccessToken.(string)
	if !ok || at == "" {
		return s, false
	}
	s.AccessToken = at
	s.RefreshToken, _ = probe.RefreshToken.(string)
	if f, ok := probe.ExpiresAt.(float64); ok && f > 0 && f < 1e12 {
		s.ExpiresAt = int64(f)
	}
	s.Raw = raw
	s.Chunked = chunked
	return s, true
}

func combineChunks(cookies []*http.Cookie, name string) (string, bool) {
	for _, c := range cookies {
		if c.Name == name && c.Value != "" {
			return c.Value, false
		}
	}
	var b strings.Builder
	for i := 0; i < maxCookieChunks; i++ {
		want := name + "." + strconv.Itoa(i)
		found := false
		for _, c := range cookies {
			if c.Name == want {
				if b.Len()+len(c.Value) > maxSessionBytes {
					return "", false
				}
				b.WriteString(c.Value)
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return b.String(), true
}

func decodeSessionValue(v string) ([]byte, bool) {
	if len(v) > maxSessionBytes {
		return nil, false
	}
	if rest, ok := strings.CutPrefix(v, "base64-"); ok {
		clean := strings.Map(func(r rune) rune {
			switch r {
			case ' ', '\t', '\n', '\r', '=':
				return -1
			}
			return r
		}, rest)
		b, err := base64.RawURLEncoding.DecodeString(clean)
		if err != nil {
			return nil, false
		}
		return b, true
	}
	if strings.HasPrefix(v, "{") {
		return []byte(v), true
	}
	if strings.HasPrefix(v, "%7B") || strings.HasPrefix(v, "%7b") {
		d, err := url.PathUnescape(v)
		if err != nil {
			return nil, false
		}
		return []byte(d), true
	}
	return nil, false
}

// lenientSessionCookies picks the session cookie (and its chunks) out of
// raw Cookie headers without net/http's value checks, which drop values
// holding '"' — the legacy plain-JSON session format.
func lenientSessionCookies(headers []string, name string) []*http.Cookie {
	var out []*http.Cookie
	for _, h := range headers {
		for part := range strings.SplitSeq(h, ";") {
			part = strings.TrimSpace(part)
			k, v, ok := strings.Cut(part, "=")
			if !ok || (k != name && !strings.HasPrefix(k, name+".")) {
				continue
			}
			if len(out) >= maxCookieChunks+1 {
				return out
			}
			out = append(out, &http.Cookie{Name: k, Value: v})
		}
	}
	return out
}
