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
	for _, line := range lines {
		for rest := line; rest != ""; {
			var pair string
			pair, rest, _ = strings.Cut(rest, ";")
			k, v, ok := strings.Cut(pair, "=")
			if !ok {
				continue
			}
			k = trimSpaceTab(k)
			slot := 0
			if k != name {
				i, ok := chunkIndex(k, name)
				if !ok || i < 0 || i > MaxChunks {
					continue
				}
				slot = i + 1
			}
			if seen[slot] {
				continue
			}
			seen[slot] = true
			out = append(out, &http.Cookie{Name: k, Value: trimSpaceTab(v)})
		}
	}
	return out
}

// trimSpaceTab trims spaces and tabs, the only characters cookie@1.1.1
// trims around names and values.
func trimSpaceTab(s string) string {
	return strings.Trim(s, " \t")
}
