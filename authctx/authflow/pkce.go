package authflow

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/problem"
)

// FlowIDParam is the query parameter that carries the PKCE flow id on the
// redirect back to the callback (auth-js PKCE_FLOW_ID_PARAM).
const FlowIDParam = "sb_flow_id"

// MaxPendingFlows is how many PKCE flows may wait at once; a new flow
// beyond it evicts the oldest (auth-js PKCE_MAX_CONCURRENT_FLOWS).
const MaxPendingFlows = 5

// maxVerifierBytes bounds a stored verifier (RFC 7636 allows 128
// characters; "/recovery" may follow).
const maxVerifierBytes = 256

// verifierCookieName returns the legacy verifier slot of a session cookie
// name: <name>-code-verifier.
func verifierCookieName(cookieName string) string { return cookieName + "-code-verifier" }

// flowVerifierCookieName returns the per-flow verifier slot:
// <name>-flow-<flowID>-code-verifier.
func flowVerifierCookieName(cookieName, flowID string) string {
	return cookieName + "-flow-" + flowID + "-code-verifier"
}

// flowIndexCookieName returns the pending-flow index:
// <name>-flows-code-verifier (a JSON array of flow ids, oldest first).
func flowIndexCookieName(cookieName string) string { return cookieName + "-flows-code-verifier" }

// validFlowID reports whether id has the shape auth-js accepts for a flow
// id, [A-Za-z0-9_-]{8,64}. Ids from URLs and from the index cookie are
// checked before they name a cookie.
func validFlowID(id string) bool {
	if len(id) < 8 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

type pkce struct {
	flowID    string
	challenge string
	verifier  string // as stored (with "/recovery" for a recovery flow)
}

// startPKCE creates a verifier (56 random bytes in hex, like auth-js), a
// 32-hex-digit flow id and the S256 challenge, and returns the cookie
// writes that store it as auth-js's storePKCEVerifier does: the slot, the
// index (evicting the oldest beyond MaxPendingFlows) and the legacy slot.
func (f *Flows) startPKCE(r *http.Request, redirectType string) (pkce, []*http.Cookie, error) {
	var vb [56]byte
	var fb [16]byte
	if _, err := rand.Read(vb[:]); err != nil {
		return pkce{}, nil, problem.New(problem.KindUnexpected, "").WithCause(err)
	}
	_, _ = rand.Read(fb[:])
	verifier := hex.EncodeToString(vb[:])
	sum := sha256.Sum256([]byte(verifier))
	p := pkce{flowID: hex.EncodeToString(fb[:]), challenge: base64.RawURLEncoding.EncodeToString(sum[:]), verifier: verifier}
	if redirectType != "" {
		p.verifier += "/" + redirectType
	}
	cookies := f.pkceCookies(r)
	stored, _ := json.Marshal(p.verifier)
	set, _ := ssrcookie.Write(flowVerifierCookieName(f.cookieName, p.flowID), stored, cookies, f.opts)
	index := slices.DeleteFunc(readIndex(cookies, f.cookieName), func(id string) bool { return id == p.flowID })
	index = append(index, p.flowID)
	for len(index) > MaxPendingFlows {
		evicted := index[0]
		index = index[1:]
		del, _ := ssrcookie.Clear(flowVerifierCookieName(f.cookieName, evicted), cookies, f.opts)
		set = append(set, del...)
	}
	idx, _ := json.Marshal(index)
	s2, _ := ssrcookie.Write(flowIndexCookieName(f.cookieName), idx, cookies, f.opts)
	s3, _ := ssrcookie.Write(verifierCookieName(f.cookieName), stored, cookies, f.opts)
	return p, append(append(set, s2...), s3...), nil
}

// dropNewFlow undoes startPKCE after a failed send: the writes of set are
// replaced by deletes of the new slot and the legacy slot, and the index
// without the flow (auth-js removePKCEVerifier).
func (f *Flows) dropNewFlow(r *http.Request, p pkce, set []*http.Cookie) []*http.Cookie {
	// Pretend the new cookies were stored, then remove them.
	var cookies []*http.Cookie
	for _, c := range set {
		if c.MaxAge > 0 {
			cookies = append(cookies, &http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	for _, c := range f.pkceCookies(r) {
		if !hasName(cookies, c.Name) {
			cookies = append(cookies, c)
		}
	}
	return f.removeVerifier(cookies, p.flowID, p.verifier)
}

// pkceCookies returns the request's verifier cookies: the legacy slot,
// the index and the slot of every flow the index names.
func (f *Flows) pkceCookies(r *http.Request) []*http.Cookie {
	cookies := f.cookies(r, verifierCookieName(f.cookieName), flowIndexCookieName(f.cookieName))
	ids := readIndex(cookies, f.cookieName)
	if len(ids) == 0 {
		return cookies
	}
	slots := make([]string, len(ids))
	for i, id := range ids {
		slots[i] = flowVerifierCookieName(f.cookieName, id)
	}
	// One pass over the header for every slot: the index may name
	// hundreds of flows.
	return append(cookies, ssrcookie.HeaderCookiesFor(r.Header["Cookie"], slots...)...)
}

// parseCallbackCookies is the cookie-slot parser of the callback: given
// the request's Cookie header lines
// and a session cookie name, it returns the verifier auth-js would use for
// flowID ("" when none) and the pending flow ids of the index.
func parseCallbackCookies(lines []string, cookieName, flowID string) (verifier string, pending []string) {
	names := []string{verifierCookieName(cookieName), flowIndexCookieName(cookieName)}
	var cookies []*http.Cookie
	for _, n := range names {
		cookies = append(cookies, ssrcookie.HeaderCookies(lines, n)...)
	}
	pending = readIndex(cookies, cookieName)
	if validFlowID(flowID) {
		cookies = append(cookies, ssrcookie.HeaderCookies(lines, flowVerifierCookieName(cookieName, flowID))...)
	}
	verifier, _ = readVerifier(cookies, cookieName, flowID)
	return verifier, pending
}

// readIndex returns the valid flow ids of the index cookie, oldest first
// (auth-js getPKCEFlowIndex: anything but an array of valid ids is
// ignored).
func readIndex(cookies []*http.Cookie, cookieName string) []string {
	raw, err := ssrcookie.Read(cookies, flowIndexCookieName(cookieName))
	if err != nil || len(raw) > 4096 {
		return nil
	}
	var list []any
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []string
	for _, v := range list {
		if s, ok := v.(string); ok && validFlowID(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// readVerifier returns the stored verifier auth-js's retrievePKCEVerifier
// returns: with a flow id only that slot (no fallback, so another flow's
// verifier is never spent), without one the legacy slot; and the flow id
// used ("" for the legacy slot). An invalid flow id reads nothing. The
// value must be a JSON string of printable ASCII without spaces.
func readVerifier(cookies []*http.Cookie, cookieName, flowID string) (verifier, used string) {
	name := verifierCookieName(cookieName)
	if flowID != "" {
		if !validFlowID(flowID) {
			return "", ""
		}
		name, used = flowVerifierCookieName(cookieName, flowID), flowID
	}
	raw, err := ssrcookie.Read(cookies, name)
	if err != nil || len(raw) > maxVerifierBytes {
		return "", used
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", used
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return "", used
		}
	}
	return s, used
}

// removeVerifier returns the deletes auth-js's removePKCEVerifier makes:
// without a flow id the legacy slot; with one, its slot, the index
// rewritten without it (deleted when empty), and the legacy slot when it
// holds the same verifier.
func (f *Flows) removeVerifier(cookies []*http.Cookie, flowID, verifier string) []*http.Cookie {
	legacy := verifierCookieName(f.cookieName)
	if flowID == "" {
		set, _ := ssrcookie.Clear(legacy, cookies, f.opts)
		return set
	}
	set, _ := ssrcookie.Clear(flowVerifierCookieName(f.cookieName, flowID), cookies, f.opts)
	index := readIndex(cookies, f.cookieName)
	remaining := slices.DeleteFunc(slices.Clone(index), func(id string) bool { return id == flowID })
	if len(remaining) != len(index) {
		if len(remaining) > 0 {
			idx, _ := json.Marshal(remaining)
			s, _ := ssrcookie.Write(flowIndexCookieName(f.cookieName), idx, cookies, f.opts)
			set = append(set, s...)
		} else {
			s, _ := ssrcookie.Clear(flowIndexCookieName(f.cookieName), cookies, f.opts)
			set = append(set, s...)
		}
	}
	if verifier != "" {
		if lv, _ := readVerifier(cookies, f.cookieName, ""); lv == verifier {
			s, _ := ssrcookie.Clear(legacy, cookies, f.opts)
			set = append(set, s...)
		}
	}
	return set
}

// removeAllVerifiers returns the deletes of every verifier slot in the
// index, the index and the legacy slot (auth-js removeAllPKCEVerifiers,
// run when a session ends).
func (f *Flows) removeAllVerifiers(cookies []*http.Cookie) []*http.Cookie {
	var set []*http.Cookie
	for _, id := range readIndex(cookies, f.cookieName) {
		s, _ := ssrcookie.Clear(flowVerifierCookieName(f.cookieName, id), cookies, f.opts)
		set = append(set, s...)
	}
	s, _ := ssrcookie.Clear(flowIndexCookieName(f.cookieName), cookies, f.opts)
	set = append(set, s...)
	s, _ = ssrcookie.Clear(verifierCookieName(f.cookieName), cookies, f.opts)
	return append(set, s...)
}

// encodeURIComponent escapes s like JavaScript's encodeURIComponent.
func encodeURIComponent(s string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

// hasName reports whether cookies holds one named name.
func hasName(cookies []*http.Cookie, name string) bool {
	for _, c := range cookies {
		if c != nil && c.Name == name {
			return true
		}
	}
	return false
}
