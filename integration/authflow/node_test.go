package authflow_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/authflow"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
	"github.com/tablegate/tablegate/internal/sitejar"
)

// nodeOut is the output of integration/node/ssr-flows.mjs.
type nodeOut struct {
	Error   *string `json:"error"`
	URL     *string `json:"url"`
	Session *struct {
		AccessToken  string `json:"access_token"`
		RefreshToken string `json:"refresh_token"`
		ExpiresAt    int64  `json:"expires_at"`
		UserID       string `json:"user_id"`
	} `json:"session"`
	SetAll []struct {
		Name    string         `json:"name"`
		Value   string         `json:"value"`
		Options map[string]any `json:"options"`
	} `json:"setAll"`
	SetCookie []string `json:"set_cookie"`
}

type nodeCookie struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func (b *bundle) node(op string, cookies []*http.Cookie, extra map[string]any) nodeOut {
	b.t.Helper()
	in := map[string]any{"op": op, "url": b.gt.URL(), "key": testKey}
	var cs []nodeCookie
	for _, c := range cookies {
		cs = append(cs, nodeCookie{c.Name, c.Value})
	}
	in["cookies"] = cs
	for k, v := range extra {
		in[k] = v
	}
	var out nodeOut
	nodetest.Run(b.t, 30*time.Second, "ssr-flows.mjs", in, &out)
	return out
}

// apply applies node's setAll to a cookie list like a browser.
func (o nodeOut) apply(cookies []*http.Cookie) []*http.Cookie {
	for _, c := range o.SetAll {
		set := &http.Cookie{Name: c.Name, Value: c.Value}
		if ma, _ := c.Options["maxAge"].(float64); c.Options["maxAge"] != nil && ma == 0 {
			set.MaxAge = -1
		}
		cookies = sitejar.Set(cookies, set)
	}
	return cookies
}

// TestInteropJSStartsPKCEGoFinishes: @supabase/ssr's browser client starts
// an OAuth flow (verifier in its cookies); tablegate's callback finishes
// it with that verifier and clears the slots.
func TestInteropJSStartsPKCEGoFinishes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	out := b.node("oauth-start", nil, map[string]any{"provider": "github", "redirectTo": b.flows.CallbackURL() + "?next=%2Fhome"})
	if out.Error != nil || out.URL == nil {
		t.Fatalf("node: %+v", out)
	}
	q := queryOf(t, *out.URL)
	cookies := out.apply(nil)
	var got []string
	for _, c := range cookies {
		got = append(got, c.Name)
	}
	want := []string{b.cookie + "-code-verifier", b.cookie + "-flows-code-verifier"}
	for _, w := range want {
		if !strings.Contains(strings.Join(got, ","), w) {
			t.Fatalf("JS wrote %v, want %v and a flow slot", got, want)
		}
	}
	b.gt.AddAuthCode("js-code", q.Get("code_challenge"))
	// auth-js 2.119 appends no sb_flow_id by default: the legacy slot is used.
	w := httptest.NewRecorder()
	b.flows.ServeCallback(w, b.req("GET", "/auth/callback?next=%2Fhome&code=js-code", cookies))
	if w.Code != 303 || w.Header().Get("Location") != "https://app.example.com/home" {
		t.Fatalf("callback %d %s", w.Code, w.Body)
	}
	after := jar(cookies, w)
	if a := b.resolve(after); a.Kind != authctx.KindUser {
		t.Fatalf("resolved %+v", a)
	}
	// The legacy slot is gone; the JS index still lists the flow, whose
	// slot... stays only if auth-js would keep it: removePKCEVerifier
	// without a flow id removes the legacy slot only.
	for _, c := range after {
		if c.Name == b.cookie+"-code-verifier" {
			t.Fatalf("legacy verifier slot left behind")
		}
	}
	// With the flow id (what appendPkceFlowIdToRedirects adds), only the slot is read.
	out = b.node("oauth-start", nil, map[string]any{"provider": "github", "redirectTo": b.flows.CallbackURL()})
	cookies = out.apply(nil)
	pending := pendingFlows(t, cookies, b.cookie)
	if len(pending) != 1 {
		t.Fatalf("pending %v", pending)
	}
	b.gt.AddAuthCode("js-code-2", queryOf(t, *out.URL).Get("code_challenge"))
	w = httptest.NewRecorder()
	b.flows.ServeCallback(w, b.req("GET", "/auth/callback?code=js-code-2&sb_flow_id="+pending[0], cookies))
	if w.Code != 303 {
		t.Fatalf("callback with sb_flow_id %d %s", w.Code, w.Body)
	}
	if left := jar(cookies, w); len(left) != 1 || left[0].Name != b.cookie {
		t.Fatalf("cookies left %v", sitejar.Names(left))
	}
}

// pendingFlows reads the ids of the pending PKCE flows from the index
// auth-js keeps in <name>-flows-code-verifier (a JSON array, oldest first).
func pendingFlows(t *testing.T, cookies []*http.Cookie, name string) []string {
	t.Helper()
	raw, err := ssrcookie.Read(cookies, name+"-flows-code-verifier")
	if err != nil {
		t.Fatalf("flow index: %v", err)
	}
	var ids []string
	if err := json.Unmarshal(raw, &ids); err != nil {
		t.Fatalf("flow index %s: %v", raw, err)
	}
	return ids
}

// TestInteropGoStartsPKCEJSFinishes: tablegate starts the flow; the JS
// server client exchanges the code with the verifier from tablegate's
// cookies (legacy slot, and the per-flow slot by flow id) and deletes them.
func TestInteropGoStartsPKCEJSFinishes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for _, byID := range []bool{false, true} {
		w := httptest.NewRecorder()
		u, err := b.flows.StartOAuth(w, b.req("GET", "/auth/oauth", nil), &authflow.OAuthRequest{Provider: "github"})
		if err != nil {
			t.Fatal(err)
		}
		cookies := jar(nil, w)
		flowID := queryOf(t, queryOf(t, u).Get("redirect_to")).Get(authflow.FlowIDParam)
		b.gt.AddAuthCode("go-code", queryOf(t, u).Get("code_challenge"))
		extra := map[string]any{"code": "go-code"}
		if byID {
			extra["flowId"] = flowID
		}
		out := b.node("exchange", cookies, extra)
		if out.Error != nil || out.Session == nil || out.Session.UserID != testUser {
			t.Fatalf("byID %v: JS exchange %+v", byID, out)
		}
		after := out.apply(cookies)
		var rest []string
		for _, c := range after {
			if c.Name != b.cookie {
				rest = append(rest, c.Name)
			}
		}
		want := 0
		if !byID {
			want = 2 // without a flow id auth-js removes only the legacy slot
		}
		if len(rest) != want {
			t.Fatalf("byID %v: cookies left after JS exchange: %v", byID, rest)
		}
		if a := b.resolve(after); a.Kind != authctx.KindUser {
			t.Fatalf("tablegate reads the JS session: %+v", a)
		}
	}
}

// TestInteropSessionAndSignOut: a session written by tablegate (default
// and tokens-only) is read by createServerClient; a session written by
// the JS client (both encodings) is read by tablegate; tablegate's
// sign-out is observed by the JS client (no session in the cookies, and
// the old refresh token refused).
func TestInteropSessionAndSignOut(t *testing.T) {
	t.Parallel()
	for _, enc := range []string{"", "tokens-only"} {
		b := setup(t, func(c *authflow.Config) { c.TokensOnly = enc != "" })
		extra := map[string]any{}
		if enc != "" {
			extra["encode"] = enc
		}
		// Go writes, JS reads.
		cookies := b.signedIn()
		out := b.node("get-session", cookies, extra)
		if out.Error != nil || out.Session == nil || out.Session.UserID != testUser {
			t.Fatalf("%q: JS reads tablegate's session: %+v", enc, out)
		}
		raw, _ := ssrcookie.Read(cookies, b.cookie)
		if (enc != "") == strings.Contains(string(raw), `"user"`) {
			t.Fatalf("%q: cookie %s", enc, raw)
		}
		// JS writes, Go reads (the resolver, and sign-out finds the token).
		js := b.node("sign-in", nil, map[string]any{"email": "a@example.com", "password": testPassword, "encode": enc})
		if js.Error != nil {
			t.Fatalf("%q: JS sign-in %+v", enc, js)
		}
		jsCookies := js.apply(nil)
		jsRaw, _ := ssrcookie.Read(jsCookies, b.cookie)
		if (enc != "") == strings.Contains(string(jsRaw), `"user"`) {
			t.Fatalf("%q: JS cookie %s", enc, jsRaw)
		}
		if a := b.resolve(jsCookies); a.Kind != authctx.KindUser || a.User.ID != testUser {
			t.Fatalf("%q: tablegate reads the JS session: %+v", enc, a)
		}
		// tablegate signs the JS session out; JS sees no session.
		w := httptest.NewRecorder()
		if err := b.flows.SignOut(w, b.req("POST", "/auth/sign-out", jsCookies), &authflow.SignOutOpts{Scope: "global"}); err != nil {
			t.Fatal(err)
		}
		after := jar(jsCookies, w)
		if out := b.node("get-session", after, extra); out.Session != nil {
			t.Fatalf("%q: JS still sees a session after tablegate's sign-out: %+v", enc, out)
		}
		if a := b.resolve(after); a.Reason != authctx.ReasonSignedOut {
			t.Fatalf("%q: tablegate after its sign-out: %+v", enc, a)
		}
		// A JS client that kept the old cookie with an expired token
		// cannot refresh: the server revoked the session.
		b.gt.SetTokenTTL(time.Second)
		stale := b.node("sign-in", nil, map[string]any{"email": "a@example.com", "password": testPassword, "encode": enc}).apply(nil)
		b.gt.SetTokenTTL(0)
		if err := b.flows.SignOut(httptest.NewRecorder(), b.req("POST", "/", stale), &authflow.SignOutOpts{Scope: "global"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second) // sleep: the token must expire in real time for node's auth-js; auth-js keeps an unexpired token when a refresh fails
		if out := b.node("get-session", stale, extra); out.Session != nil {
			t.Fatalf("%q: JS refreshed a signed-out session: %+v", enc, out)
		}
	}
}

// TestInteropJSSignOutClearsGoVerifiers: a JS sign-out removes the
// session tablegate wrote and the verifier slots tablegate started.
func TestInteropJSSignOutClearsGoVerifiers(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	cookies := b.signedIn()
	w := httptest.NewRecorder()
	if _, err := b.flows.StartOAuth(w, b.req("GET", "/", cookies), &authflow.OAuthRequest{Provider: "github"}); err != nil {
		t.Fatal(err)
	}
	cookies = jar(cookies, w)
	out := b.node("sign-out", cookies, map[string]any{"scope": "local"})
	if out.Error != nil {
		t.Fatalf("JS sign-out %+v", out)
	}
	if left := out.apply(cookies); len(left) != 0 {
		t.Fatalf("left after JS sign-out: %v", sitejar.Names(left))
	}
}

// TestInteropJSMagicLinkGoCallback: the JS browser client sends a magic
// link (PKCE: verifier in its cookies, challenge to the auth server); the
// link lands on tablegate's callback with a code, which tablegate
// exchanges with the JS client's verifier.
func TestInteropJSMagicLinkGoCallback(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	out := b.node("otp-start", nil, map[string]any{"email": "a@example.com", "redirectTo": b.flows.CallbackURL() + "?next=%2Finbox"})
	if out.Error != nil {
		t.Fatalf("node: %+v", out)
	}
	got := b.lastCall()
	var otp struct {
		Challenge string `json:"code_challenge"`
	}
	if err := json.Unmarshal([]byte(got.Body), &otp); err != nil || got.Path != "/otp" ||
		!strings.Contains(got.Body, `"code_challenge_method":"s256"`) || otp.Challenge == "" {
		t.Fatalf("JS otp call %s %s", got.Path, got.Body)
	}
	redirect, err := url.ParseQuery(got.Query)
	if err != nil {
		t.Fatal(err)
	}
	cookies := out.apply(nil)
	b.gt.AddAuthCode("link-code", otp.Challenge)
	w := httptest.NewRecorder()
	b.flows.ServeCallback(w, b.req("GET", strings.TrimPrefix(redirect.Get("redirect_to"), b.site)+"&code=link-code", cookies))
	if w.Code != 303 || w.Header().Get("Location") != "https://app.example.com/inbox" {
		t.Fatalf("callback %d %s %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	if a := b.resolve(jar(cookies, w)); a.Kind != authctx.KindUser {
		t.Fatalf("resolved %+v", a)
	}
}
