package ssrcookie

import (
	"net/http"
	"strings"
)

// HeaderCookies returns the cookies [Read] needs for name — name itself and
// name.0 … name.[MaxChunks] — from the lines of a request's Cookie header
// (pass r.Header["Cookie"]), split the way parseCookieHeader of
// @supabase/ssr (cookie@1.1.1 parse) splits them: pairs are separated by
// ';', a pair without '=' is skipped, name and value are trimmed of spaces
// and tabs, and the first pair of a name wins. Values are returned
// undecoded; Read percent-decodes them like the JavaScript parser.
//
// Use it, rather than [http.Request.Cookies], to read exactly the session
// the JavaScript client reads from the same header. net/http differs on a
// few values: it drops those holding '"', '\' or bytes outside ASCII (the
// legacy raw-JSON format has all three), removes surrounding double
// quotes, and keeps spaces after the '='.
//
// At most one cookie per name is returned, so the result holds at most
// MaxChunks+2 cookies whatever the header. Safe for concurrent use.
func HeaderCookies(lines []string, name string) []*http.Cookie {
	if name == "" {
		return nil
	}
	var out []*http.Cookie
	var seen [MaxChunks + 2]bool // [0] the bare name, [i+1] chunk i
	for k, v := range pairs(lines) {
		slot, ok := slotOf(k, name)
		if !ok || seen[slot] {
			continue
		}
		seen[slot] = true
		out = append(out, &http.Cookie{Name: k, Value: v})
	}
	return out
}

// HeaderCookiesFor is [HeaderCookies] for several names in one pass over
// the header: the cookies of each name (itself and its chunks), in the
// header's order. Reading many names one at a time costs a pass over the
// whole header for each. No name may be a chunk name of another ("a" and
// "a.0"): such a cookie is read as the name it equals.
func HeaderCookiesFor(lines []string, names ...string) []*http.Cookie {
	seen := make(map[string]*[MaxChunks + 2]bool, len(names))
	for _, n := range names {
		if n != "" {
			seen[n] = new([MaxChunks + 2]bool)
		}
	}
	var out []*http.Cookie
	for k, v := range pairs(lines) {
		base := k
		if _, ok := seen[k]; !ok {
			i := strings.LastIndexByte(k, '.')
			if i < 0 {
				continue
			}
			base = k[:i]
		}
		s := seen[base]
		if s == nil {
			continue
		}
		slot, ok := slotOf(k, base)
		if !ok || s[slot] {
			continue
		}
		s[slot] = true
		out = append(out, &http.Cookie{Name: k, Value: v})
	}
	return out
}

// pairs yields the name and value of each pair of the Cookie header lines,
// split as cookie@1.1.1's parse splits them: at ';', pairs without '='
// skipped, name and value trimmed of spaces and tabs.
func pairs(lines []string) func(yield func(k, v string) bool) {
	return func(yield func(k, v string) bool) {
		for _, line := range lines {
			for rest := line; rest != ""; {
				var pair string
				pair, rest, _ = strings.Cut(rest, ";")
				k, v, ok := strings.Cut(pair, "=")
				if !ok {
					continue
				}
				if !yield(trimSpaceTab(k), trimSpaceTab(v)) {
					return
				}
			}
		}
	}
}

// slotOf places cookie k among name's cookies: 0 for name itself, i+1 for
// chunk i; ok is false for any other cookie.
func slotOf(k, name string) (slot int, ok bool) {
	if k == name {
		return 0, true
	}
	i, ok := chunkIndex(k, name)
	if !ok || i < 0 || i > MaxChunks {
		return 0, false
	}
	return i + 1, true
}

// trimSpaceTab trims spaces and tabs, the only characters cookie@1.1.1
// trims around names and values.
func trimSpaceTab(s string) string {
	return strings.Trim(s, " \t")
}
