package authctx

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/problem"
)

// TestBadInput feeds malformed credentials through Middleware + Guard:
// each yields the caller state its row expects and a Problem Details answer, never
// a panic or a 500.
func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	name := b.rv.CookieName()
	valid := b.token(nil)
	deep := `{"sub":"u","exp":4102444800,"act":` + strings.Repeat(`{"sub":"a","act":`, 2000) + `{"sub":"z"}` + strings.Repeat("}", 2000) + "}"

	type tc struct {
		name   string
		req    func() *http.Request
		kind   Kind
		reason Reason
		status int
		code   problem.Code
	}
	hdr := func(vals ...string) func() *http.Request {
		return func() *http.Request {
			r := httptest.NewRequest("GET", "/", nil)
			for _, v := range vals {
				r.Header.Add("Authorization", v)
			}
			return r
		}
	}
	cookie := func(pairs ...string) func() *http.Request {
		return func() *http.Request {
			r := httptest.NewRequest("GET", "/", nil)
			for i := 0; i+1 < len(pairs); i += 2 {
				r.AddCookie(&http.Cookie{Name: pairs[i], Value: pairs[i+1]})
			}
			return r
		}
	}
	invalid := func(name string, req func() *http.Request) tc {
		return tc{name: name, req: req, kind: KindInvalid, reason: ReasonToken, status: 401, code: problem.CodeTokenInvalid}
	}
	malformed := func(name string, req func() *http.Request) tc {
		c := invalid(name, req)
		c.code = problem.CodeTokenMalformed
		return c
	}
	absent := func(name string, req func() *http.Request) tc {
		return tc{name: name, req: req, kind: KindAnon, reason: ReasonNone, status: 401, code: problem.CodeAuthRequired}
	}
	cases := []tc{
		invalid("duplicate Authorization headers", hdr("Bearer "+valid, "Bearer "+valid)),
		invalid("unknown scheme", hdr("Basic dXNlcjpwYXNz")),
		invalid("scheme only", hdr("Bearer")),
		invalid("Bearer with spaces only", hdr("Bearer    ")),
		invalid("garbage header", hdr("\x01\x02garbage")),
		malformed("two segments", hdr("Bearer a.b")),
		malformed("broken base64 header", hdr("Bearer !!!.e30.c2ln")),
		malformed("non-object header JSON", hdr("Bearer "+unsigned(`[1]`, `{}`))),
		malformed("non-object payload", hdr("Bearer "+unsigned(`{"alg":"ES256","kid":"`+kidEC+`"}`, `[1,2,3]`))),
		malformed("oversized token", hdr("Bearer "+strings.Repeat("a", 1<<20)+".b.c")),
		{name: "alg none", req: hdr("Bearer " + unsigned(`{"alg":"none"}`, `{"sub":"u","exp":4102444800}`)),
			kind: KindInvalid, reason: ReasonToken, status: 401, code: problem.CodeTokenAlgorithmNotAccepted},
		invalid("exp as a string", hdr("Bearer "+b.token(map[string]any{"exp": "4102444800"}))),
		invalid("wrong claim type: sub number", hdr("Bearer "+b.token(map[string]any{"sub": 1}))),
		{name: "huge act nesting", req: hdr("Bearer " + unsigned(`{"alg":"ES256","kid":"`+kidEC+`"}`, deep)),
			kind: KindInvalid, reason: ReasonToken, status: 401, code: problem.CodeTokenMalformed},
		{name: "act nesting past the bound (signed)", req: hdr("Bearer " + b.token(map[string]any{"act": deepAct(50)})),
			kind: KindInvalid, reason: ReasonActor, status: 401, code: problem.CodeActorInvalid},
		absent("empty Authorization header", hdr("")),
		absent("publishable key as Bearer", hdr("Bearer sb_publishable_ACJWlzQHlZjBrEguHvfOxg_3BJgxAaH")),
		absent("sb_ key as Bearer repeating the apikey header", withAPIKey(hdr("Bearer sb_temp_x"), "sb_temp_x")),
		// An sb_ Bearer that is no publishable key and no apikey did not verify.
		invalid("secret key as Bearer without apikey", hdr("Bearer sb_secret_N7UND0UgjKTVK-Uodkm0Hg_xSvEMPvz")),
		invalid("unknown sb_ key as Bearer", hdr("Bearer sb_garbage")),
		invalid("sb_ Bearer differing from the apikey header", withAPIKey(hdr("Bearer sb_secret_a"), "sb_secret_b")),
		absent("cookie: broken base64", cookie(name, "base64-!!!not*base64")),
		absent("cookie: non-object JSON", cookie(name, "base64-"+b64([]byte(`["a","b",null,null]`)))),
		absent("cookie: object without access_token", cookie(name, "base64-"+b64([]byte(`{"refresh_token":"x"}`)))),
		absent("cookie: access_token not a string", cookie(name, "base64-"+b64([]byte(`{"access_token":42}`)))),
		absent("cookie: plain garbage", cookie(name, "hello")),
		absent("cookie: chunk .1 without .0", cookie(name+".1", "base64-e30")),
		absent("cookie: oversized chunks", cookie(name+".0", "base64-"+strings.Repeat("A", 3180), name+".1", strings.Repeat("A", 3180),
			name+".2", strings.Repeat("A", 3180))),
		absent("cookie: session without refresh_token (auth-js _isValidSession)",
			cookie(name, "base64-"+b64([]byte(`{"access_token":"`+valid+`","expires_at":4102444800}`)))),
		absent("cookie: session without expires_at", cookie(name, "base64-"+b64([]byte(`{"access_token":"`+valid+`","refresh_token":"r"}`)))),
		absent("cookie: quoted base64 value (cookie@1.1.1 keeps the quotes)", func() *http.Request {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Cookie", name+`="`+sessionCookieValue(valid, 4102444800)+`"`)
			return r
		}),
		malformed("cookie: session whose access_token is not a string",
			cookie(name, "base64-"+b64([]byte(`{"access_token":42,"refresh_token":"r","expires_at":4102444800}`)))),
		malformed("cookie: session with a garbage token", cookie(name, "base64-"+b64([]byte(`{"access_token":"x.y.z","refresh_token":"r","expires_at":4102444800}`)))),
		{name: "cookie: session with a forged token", req: cookie(name, sessionCookieValue(tamper(valid), 4102444800)),
			kind: KindInvalid, reason: ReasonToken, status: 401, code: problem.CodeTokenSignatureInvalid},
		{name: "cookie: legacy plain JSON", req: func() *http.Request {
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Cookie", "other=1; "+name+`={"access_token":"`+valid+`","refresh_token":"r","expires_at":4102444800}`)
			return r
		},
			kind: KindUser, status: 200},
		// encodeURIComponent, as cookie@1.1.1 serializes a raw-mode value
		// (no spaces in this JSON, so QueryEscape gives the same text).
		{name: "cookie: raw mode URI-encoded JSON", req: cookie(name, url.QueryEscape(
			`{"access_token":"`+valid+`","refresh_token":"r","expires_at":4102444800}`)),
			kind: KindUser, status: 200},
		{name: "cookie: padded base64 tolerated", req: cookie(name, sessionCookieValue(valid, time.Now().Add(time.Hour).Unix())+"=="),
			kind: KindUser, status: 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.req()
			res := b.rv.Resolve(r)
			if res.Auth.Kind != c.kind || res.Auth.Reason != c.reason {
				t.Fatalf("state %s/%s (%v), want %s/%s", res.Auth.Kind, res.Auth.Reason, res.Auth.Err, c.kind, c.reason)
			}
			w := httptest.NewRecorder()
			b.rv.Middleware(Guard()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }))).ServeHTTP(w, r)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d", w.Code, c.status)
			}
			if c.code != "" {
				var p problem.Problem
				if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code != c.code {
					t.Fatalf("body %s, want code %s", w.Body, c.code)
				}
				if strings.Contains(w.Body.String(), valid) {
					t.Fatalf("problem body echoes a token")
				}
			}
		})
	}
}

func TestServiceCallers(t *testing.T) {
	t.Parallel()
	keys := map[string]string{"default": "sb_secret_default_0123456789", "cron": "sb_secret_cron_0123456789"}
	b := setup(t, func(c *Config) { c.Secret = true; c.SecretKeys = keys })
	for name, key := range keys {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("apikey", key)
		r.Header.Set("Authorization", "Bearer "+key) // supabase-js sends both
		res := b.rv.Resolve(r)
		if res.Auth.Kind != KindService || res.Auth.KeyName != name || res.Source != SourceAPIKey {
			t.Errorf("key %s: %s %q from %s", name, res.Auth.Kind, res.Auth.KeyName, res.Source)
		}
		if Admit(res.Auth) == nil || Admit(res.Auth, AllowService) != nil {
			t.Errorf("service admitted without AllowService, or refused with it")
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("apikey", "sb_secret_wrong")
	if a := b.rv.Resolve(r).Auth; a.Kind != KindInvalid {
		t.Errorf("wrong secret key: %s", a.Kind)
	}
	// A secret key that is a legacy service_role JWT, sent by supabase-js as
	// apikey and Bearer both: still the key's service caller, whether or
	// not the JWKS could verify it.
	legacy := "eyJhbGciOiJIUzI1NiJ9.eyJyb2xlIjoic2VydmljZV9yb2xlIn0.c2lnbmF0dXJl"
	bl := setup(t, func(c *Config) { c.Secret = true; c.SecretKeys = map[string]string{"legacy": legacy} })
	lr := httptest.NewRequest("GET", "/", nil)
	lr.Header.Set("apikey", legacy)
	lr.Header.Set("Authorization", "Bearer "+legacy)
	if res := bl.rv.Resolve(lr); res.Auth.Kind != KindService || res.Auth.KeyName != "legacy" {
		t.Errorf("legacy service_role key as apikey and Bearer: %s %q", res.Auth.Kind, res.Auth.KeyName)
	}
	// A secret apikey beside a user's token: the token decides, as at
	// Supabase's gateway; a bad token is invalid, never the key's service.
	user := bearerReq(b.token(nil))
	user.Header.Set("apikey", keys["cron"])
	if res := b.rv.Resolve(user); res.Auth.Kind != KindUser || res.Source != SourceBearer {
		t.Errorf("secret apikey + user Bearer: %s from %s", res.Auth.Kind, res.Source)
	}
	for _, authz := range []string{"Bearer not.a.jwt", "Basic dXNlcjpwdw==", "Bearer "} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("apikey", keys["cron"])
		r.Header.Set("Authorization", authz)
		if a := b.rv.Resolve(r).Auth; a.Kind == KindService || a.Kind == KindUser {
			t.Errorf("secret apikey + %q: %s", authz, a.Kind)
		}
	}
	// A publishable apikey is not a service credential: the Bearer decides.
	r = bearerReq(b.token(nil))
	r.Header.Set("apikey", "sb_publishable_x")
	if a := b.rv.Resolve(r).Auth; a.Kind != KindUser {
		t.Errorf("publishable apikey + user Bearer: %s", a.Kind)
	}
	// Without Secret the apikey header is ignored.
	b2 := setup(t, nil)
	r = httptest.NewRequest("GET", "/", nil)
	r.Header.Set("apikey", keys["default"])
	if a := b2.rv.Resolve(r).Auth; a.Kind != KindAnon {
		t.Errorf("secret off: %s", a.Kind)
	}
	if _, err := New(context.Background(), &Config{ProjectURL: b.jwks.URL, Secret: true}); err == nil || !strings.Contains(err.Error(), "SUPABASE_SECRET_KEYS") {
		t.Errorf("Secret without keys: %v", err)
	}
	// Supabase API-key JWTs (no sub, iss "supabase", no aud): refused by
	// the default iss/aud checks; with both opted out, service_role is
	// service with Secret on, anon is anon.
	svc := signES(t, ecKey, kidEC, map[string]any{"iss": "supabase", "role": "service_role", "exp": 4102444800})
	anon := signES(t, ecKey, kidEC, map[string]any{"iss": "supabase", "role": "anon", "exp": 4102444800})
	if a := b.rv.Resolve(bearerReq(svc)).Auth; a.Kind != KindInvalid {
		t.Errorf("service_role JWT of another issuer, default checks: %s", a.Kind)
	}
	if a := b2.rv.Resolve(bearerReq(anon)).Auth; a.Kind != KindInvalid {
		t.Errorf("anon JWT of another issuer, default checks: %s", a.Kind)
	}
	any := func(c *Config) { c.AnyIssuer, c.AnyAudience = true, true }
	b3 := setup(t, func(c *Config) { any(c); c.Secret, c.SecretKeys = true, keys })
	b4 := setup(t, any)
	if a := b3.rv.Resolve(bearerReq(svc)).Auth; a.Kind != KindService {
		t.Errorf("service_role JWT with Secret on: %s", a.Kind)
	}
	if a := b4.rv.Resolve(bearerReq(svc)).Auth; a.Kind != KindInvalid {
		t.Errorf("service_role JWT with Secret off: %s", a.Kind)
	}
	if a := b4.rv.Resolve(bearerReq(anon)).Auth; a.Kind != KindAnon || a.Reason != ReasonNone {
		t.Errorf("anon JWT: %s/%s", a.Kind, a.Reason)
	}
}

func TestCrossSite(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.TrustedOrigins = []string{"https://partner.example"} })
	sess := sessionCookieValue(b.token(nil), time.Now().Add(time.Hour).Unix())
	h := b.rv.Middleware(b.rv.CrossSite(Guard()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(204)
	}))))
	type tc struct {
		name   string
		method string
		cookie bool
		bearer bool
		apikey bool
		hdrs   map[string]string
		want   int
	}
	cases := []tc{
		{"cookie cross-site form post", "POST", true, false, false, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"cookie cross-origin post by Origin", "POST", true, false, false, map[string]string{"Origin": "https://evil.example"}, 403},
		{"cookie same-origin post", "POST", true, false, false, map[string]string{"Sec-Fetch-Site": "same-origin"}, 204},
		{"cookie cross-site GET", "GET", true, false, false, map[string]string{"Sec-Fetch-Site": "cross-site"}, 204},
		{"cookie post from a trusted origin", "POST", true, false, false, map[string]string{"Origin": "https://partner.example", "Sec-Fetch-Site": "cross-site"}, 204},
		{"Bearer cross-site post", "POST", false, true, false, map[string]string{"Sec-Fetch-Site": "cross-site"}, 204},
		{"Bearer wins over cookie cross-site", "POST", true, true, false, map[string]string{"Sec-Fetch-Site": "cross-site"}, 204},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, "http://app.example/todos", strings.NewReader("title=x"))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if c.cookie {
				r.AddCookie(&http.Cookie{Name: b.rv.CookieName(), Value: sess})
			}
			if c.bearer {
				r.Header.Set("Authorization", "Bearer "+b.token(nil))
			}
			for k, v := range c.hdrs {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d: %s", w.Code, c.want, w.Body)
			}
			if c.want == 403 && !strings.Contains(w.Body.String(), string(problem.CodeCrossSiteRequest)) {
				t.Fatalf("body %s", w.Body)
			}
		})
	}
}

func TestEnvLoader(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	_, err := LoadEnvFrom(env(nil), nil)
	if ee, ok := err.(*EnvError); !ok || ee.Variable != "SUPABASE_URL" {
		t.Fatalf("missing URL: %v", err)
	}
	// The publishable key is optional (only refresh needs it, and New says
	// so); SUPABASE_URL is optional when the keys are inline.
	if _, err = LoadEnvFrom(env(map[string]string{"SUPABASE_URL": "http://127.0.0.1:54321"}), nil); err != nil {
		t.Fatalf("URL alone: %v", err)
	}
	inline, err := LoadEnvFrom(env(map[string]string{"SUPABASE_JWKS": string(jwksJSON(ecJWK(ecKeyForEnv(t), kidEC)))}), nil)
	if err != nil {
		t.Fatalf("inline JWKS alone: %v", err)
	}
	if rv, err := New(context.Background(), inline.Config()); err != nil {
		t.Fatalf("New from inline JWKS alone: %v", err)
	} else {
		rv.Close()
	}
	refresh := inline.Config()
	refresh.ProjectURL, refresh.Refresh = "http://127.0.0.1:54321", true
	if _, err := New(context.Background(), refresh); err == nil || !strings.Contains(err.Error(), "SUPABASE_PUBLISHABLE_KEY") {
		t.Fatalf("refresh without a publishable key: %v", err)
	}
	_, err = LoadEnvFrom(env(map[string]string{"SUPABASE_URL": "http://x", "SUPABASE_ANON_KEY": "a", "SUPABASE_SECRET_KEYS": `["sb_secret_leaked"]`}), nil)
	if ee, ok := err.(*EnvError); !ok || ee.Variable != "SUPABASE_SECRET_KEYS" || strings.Contains(err.Error(), "leaked") {
		t.Fatalf("bad secret keys: %v", err)
	}
	_, err = LoadEnvFrom(env(map[string]string{"SUPABASE_URL": "http://x", "SUPABASE_ANON_KEY": "a", "SUPABASE_JWKS": `nope`}), nil)
	if ee, ok := err.(*EnvError); !ok || ee.Variable != "SUPABASE_JWKS" {
		t.Fatalf("bad JWKS: %v", err)
	}
	e, err := LoadEnvFrom(env(map[string]string{
		"SUPABASE_URL": "https://abcdefghijklmnopqrst.supabase.co", "SUPABASE_PUBLISHABLE_KEY": "sb_publishable_p",
		"SUPABASE_ANON_KEY": "legacy", "SUPABASE_SECRET_KEYS": `{"default":"sb_secret_a","cron":"sb_secret_b"}`,
		"SUPABASE_JWKS": string(jwksJSON(ecJWK(ecKeyForEnv(t), kidEC))),
	}), &Env{URL: "http://127.0.0.1:54321"})
	if err != nil {
		t.Fatal(err)
	}
	if e.URL != "http://127.0.0.1:54321" || e.PublishableKey != "sb_publishable_p" || e.SecretKeys["cron"] != "sb_secret_b" {
		t.Fatalf("env %+v", e)
	}
	cfg := e.Config()
	if !cfg.Secret || len(cfg.PublishableKeys) != 1 || len(cfg.JWKS) == 0 {
		t.Fatalf("config %+v", cfg)
	}
	rv, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if rv.CookieName() != "sb-127-auth-token" {
		t.Errorf("cookie name %q", rv.CookieName())
	}
	e, err = LoadEnvFrom(env(map[string]string{"SUPABASE_URL": "http://x", "SUPABASE_ANON_KEY": "a", "SUPABASE_SECRET_KEY": "sb_secret_one"}), nil)
	if err != nil || e.SecretKeys["default"] != "sb_secret_one" {
		t.Fatalf("single secret key: %+v %v", e, err)
	}
}

func ecKeyForEnv(t *testing.T) *ecdsa.PrivateKey { testKeys(t); return ecKey }

func TestCookieNames(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"https://abcdefghijklmnopqrst.supabase.co": "sb-abcdefghijklmnopqrst-auth-token",
		"http://127.0.0.1:54321":                   "sb-127-auth-token",
		"http://localhost:54321":                   "sb-localhost-auth-token",
		"https://api.example.com":                  "sb-api-auth-token",
	} {
		if got, err := CookieNameFor(url); err != nil || got != want {
			t.Errorf("CookieNameFor(%s) = %q %v, want %q", url, got, err, want)
		}
	}
	if _, err := CookieNameFor("not a url"); err == nil {
		t.Errorf("no error for a URL without host")
	}
}

// withAPIKey adds an apikey header to the requests req builds.
func withAPIKey(req func() *http.Request, key string) func() *http.Request {
	return func() *http.Request {
		r := req()
		r.Header.Set("apikey", key)
		return r
	}
}
