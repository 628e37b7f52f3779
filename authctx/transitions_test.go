package authctx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/problem"
)

// claimsNeedTenant requires a uuid tenant_id so a token can fail the schema.
const claimsNeedTenant = `{"type":"object","required":["tenant_id"],
 "properties":{"tenant_id":{"type":"string","format":"uuid"}}}`

// TestCallerStateTransitions walks every way a request can present (or
// fail to present) a credential, refresh aside, and checks the caller
// state and reason each one resolves to.
func TestCallerStateTransitions(t *testing.T) {
	t.Parallel()
	schema, err := ClaimsJSONSchema([]byte(claimsNeedTenant))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name string
		// build returns the request and may adjust the bundle.
		build      func(b *bundle) *http.Request
		cfg        func(*Config)
		wantKind   Kind
		wantReason Reason
		wantSource Source
		// wantStatus/wantCode: what the default guard answers.
		wantStatus int
		wantCode   problem.Code
		check      func(t *testing.T, b *bundle, res Result)
	}
	var laterCalls atomic.Int64
	later := ResolverFunc("later", func(*http.Request) (Auth, bool) { laterCalls.Add(1); return Service("later"), true })

	rows := []row{
		{
			name: "custom resolver answers; later resolvers, Bearer and cookie not consulted",
			cfg: func(c *Config) {
				c.Resolvers = []CustomResolver{
					ResolverFunc("skip", func(*http.Request) (Auth, bool) { return Auth{}, false }),
					ResolverFunc("api-key", func(r *http.Request) (Auth, bool) {
						if r.Header.Get("X-Api-Key") == "k1" {
							return Service("partner"), true
						}
						return Auth{}, false
					}),
					later,
				}
			},
			build: func(b *bundle) *http.Request {
				r := bearerReq("not-a-token") // would be invalid if consulted
				r.Header.Set("X-Api-Key", "k1")
				r.AddCookie(&http.Cookie{Name: b.rv.CookieName(), Value: "garbage"})
				return r
			},
			wantKind: KindService, wantSource: SourceResolver, wantStatus: 403, wantCode: problem.CodeCallerNotAllowed,
			check: func(t *testing.T, b *bundle, res Result) {
				if res.Auth.KeyName != "partner" || res.ResolverName != "api-key" {
					t.Errorf("got key %q from %q", res.Auth.KeyName, res.ResolverName)
				}
				if laterCalls.Load() != 0 {
					t.Errorf("a later resolver was consulted")
				}
			},
		},
		{
			name: "custom resolver user still goes through the claims schema",
			cfg: func(c *Config) {
				c.Claims = schema
				c.Resolvers = []CustomResolver{ResolverFunc("session-store", func(*http.Request) (Auth, bool) {
					return NewUser(Claims{"sub": testUserID, "tenant_id": 42}, "", nil), true
				})}
			},
			build:    func(b *bundle) *http.Request { return httptest.NewRequest("GET", "/", nil) },
			wantKind: KindInvalid, wantReason: ReasonClaims, wantSource: SourceResolver,
			wantStatus: 401, wantCode: problem.CodeClaimsInvalid,
		},
		{
			name: "custom resolver invalid without reason counts as token",
			cfg: func(c *Config) {
				c.Resolvers = []CustomResolver{ResolverFunc("strict", func(*http.Request) (Auth, bool) {
					return Auth{Kind: KindInvalid}, true
				})}
			},
			build:    func(b *bundle) *http.Request { return httptest.NewRequest("GET", "/", nil) },
			wantKind: KindInvalid, wantReason: ReasonToken, wantSource: SourceResolver,
			wantStatus: 401, wantCode: problem.CodeTokenInvalid,
		},
		{
			name:     "Bearer verification fails (signed by an unknown key): invalid/token, never anon",
			build:    func(b *bundle) *http.Request { return bearerReq(signES(t, ecKey2, kidEC, userClaims(nil))) },
			wantKind: KindInvalid, wantReason: ReasonToken, wantSource: SourceBearer,
			wantStatus: 401, wantCode: problem.CodeTokenSignatureInvalid,
		},
		{
			name: "Bearer expired: invalid/token, not anon/expired",
			build: func(b *bundle) *http.Request {
				return bearerReq(b.token(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()}))
			},
			wantKind: KindInvalid, wantReason: ReasonToken, wantSource: SourceBearer,
			wantStatus: 401, wantCode: problem.CodeTokenExpired,
		},
		{
			name: "verified token fails the claims schema: invalid/claims naming paths, not values",
			cfg:  func(c *Config) { c.Claims = schema },
			build: func(b *bundle) *http.Request {
				return bearerReq(b.token(map[string]any{"tenant_id": "secret-value-xyz"}))
			},
			wantKind: KindInvalid, wantReason: ReasonClaims, wantSource: SourceBearer,
			wantStatus: 401, wantCode: problem.CodeClaimsInvalid,
			check: func(t *testing.T, b *bundle, res Result) {
				p := Admit(res.Auth)
				body, _ := json.Marshal(p)
				if !strings.Contains(string(body), `"/tenant_id"`) {
					t.Errorf("problem does not name /tenant_id: %s", body)
				}
				if strings.Contains(string(body), "secret-value-xyz") || strings.Contains(res.Auth.Err.Error(), "secret-value-xyz") {
					t.Errorf("problem leaks the claim value: %s", body)
				}
			},
		},
		{
			name: "claims failure also on a memo hit (same token twice)",
			cfg:  func(c *Config) { c.Claims = schema },
			build: func(b *bundle) *http.Request {
				tok := b.token(nil) // no tenant_id
				first := b.rv.Resolve(bearerReq(tok))
				if first.Auth.Reason != ReasonClaims {
					t.Fatalf("first resolution: %+v", first.Auth)
				}
				if b.rv.memo.len() != 1 {
					t.Fatalf("memo holds %d entries, want 1", b.rv.memo.len())
				}
				return bearerReq(tok)
			},
			wantKind: KindInvalid, wantReason: ReasonClaims, wantSource: SourceBearer,
			wantStatus: 401, wantCode: problem.CodeClaimsInvalid,
		},
		{
			name: "claims failure on the cookie path: no refresh attempted",
			cfg:  func(c *Config) { c.Claims = schema },
			build: func(b *bundle) *http.Request {
				b.rv.refresh = func(*http.Request, *Result, ssrsession.Cookie, Auth) Auth {
					t.Errorf("refresh attempted for a claims failure")
					return Anon(ReasonRefreshFailed)
				}
				exp := time.Now().Add(20 * time.Second) // inside the refresh leeway
				tok := b.token(map[string]any{"exp": exp.Unix()})
				return cookieReq(b.rv.CookieName(), sessionCookieValue(tok, exp.Unix()))
			},
			wantKind: KindInvalid, wantReason: ReasonClaims, wantSource: SourceCookie,
			wantStatus: 401, wantCode: problem.CodeClaimsInvalid,
		},
		{
			name: "malformed act chain: invalid/actor",
			build: func(b *bundle) *http.Request {
				return bearerReq(b.token(map[string]any{"act": map[string]any{"sub": "svc", "act": "not-an-object"}}))
			},
			wantKind: KindInvalid, wantReason: ReasonActor, wantSource: SourceBearer,
			wantStatus: 401, wantCode: problem.CodeActorInvalid,
		},
		{
			name: "valid token: user, no network call, no cookie written",
			build: func(b *bundle) *http.Request {
				return bearerReq(b.token(map[string]any{"act": map[string]any{"sub": "agent-1"}}))
			},
			wantKind: KindUser, wantSource: SourceBearer, wantStatus: 200,
			check: func(t *testing.T, b *bundle, res Result) {
				if res.Auth.User.ID != testUserID {
					t.Errorf("user id %q", res.Auth.User.ID)
				}
				if n := b.jwks.hits.Load(); n != 1 {
					t.Errorf("JWKS fetched %d times, want exactly 1 (at construction)", n)
				}
				w := httptest.NewRecorder()
				res.Apply(w)
				if len(w.Header()) != 0 {
					t.Errorf("Apply wrote headers: %v", w.Header())
				}
			},
		},
		{
			name: "cookie session, refresh off, token expired: anon/expired",
			build: func(b *bundle) *http.Request {
				exp := time.Now().Add(-time.Hour)
				tok := b.token(map[string]any{"exp": exp.Unix(), "iat": exp.Add(-time.Hour).Unix()})
				return cookieReq(b.rv.CookieName(), sessionCookieValue(tok, exp.Unix()))
			},
			wantKind: KindAnon, wantReason: ReasonExpired, wantSource: SourceCookie,
			wantStatus: 401, wantCode: problem.CodeAuthRequired,
		},
		{
			name: "cookie session, refresh off, unexpired token: user until exp",
			build: func(b *bundle) *http.Request {
				exp := time.Now().Add(10 * time.Second)
				tok := b.token(map[string]any{"exp": exp.Unix()})
				return cookieReq(b.rv.CookieName(), sessionCookieValue(tok, exp.Unix()))
			},
			wantKind: KindUser, wantSource: SourceCookie, wantStatus: 200,
		},
		{
			name:     "no credential at all: anon/none",
			build:    func(b *bundle) *http.Request { return httptest.NewRequest("GET", "/", nil) },
			wantKind: KindAnon, wantReason: ReasonNone, wantSource: SourceNone,
			wantStatus: 401, wantCode: problem.CodeAuthRequired,
		},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, tc.cfg)
			r := tc.build(b)
			res := b.rv.Resolve(r)
			if res.Auth.Kind != tc.wantKind || res.Auth.Reason != tc.wantReason || res.Source != tc.wantSource {
				t.Fatalf("got %s/%s from %s (err %v), want %s/%s from %s",
					res.Auth.Kind, res.Auth.Reason, res.Source, res.Auth.Err, tc.wantKind, tc.wantReason, tc.wantSource)
			}
			// The same request through Middleware + default Guard.
			h := b.rv.Middleware(Guard()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(200)
			})))
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tc.wantStatus {
				t.Fatalf("guard answered %d, want %d: %s", w.Code, tc.wantStatus, w.Body)
			}
			if tc.wantCode != "" {
				var p problem.Problem
				if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code != tc.wantCode {
					t.Fatalf("guard body %s, want code %s", w.Body, tc.wantCode)
				}
				if ct := w.Header().Get("Content-Type"); ct != problem.MediaType {
					t.Errorf("content type %q", ct)
				}
				if w.Code == 401 && !strings.HasPrefix(w.Header().Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("401 without WWW-Authenticate: Bearer")
				}
			}
			if tc.check != nil {
				tc.check(t, b, res)
			}
		})
	}
}

// TestGuardMatrix walks every cell of the admission matrix: each allow
// list against a full user, an anonymous sign-in and no session.
func TestGuardMatrix(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	full := b.token(nil)
	anonymous := b.token(map[string]any{"is_anonymous": true})

	callers := map[string]func() *http.Request{
		"full user":        func() *http.Request { return bearerReq(full) },
		"anonymous signin": func() *http.Request { return bearerReq(anonymous) },
		"no session":       func() *http.Request { return httptest.NewRequest("GET", "/", nil) },
	}
	type cell struct {
		status int
		code   problem.Code
	}
	ok := cell{status: 200}
	matrix := []struct {
		allow []Allow
		cells map[string]cell
	}{
		{[]Allow{AllowUser}, map[string]cell{"full user": ok, "anonymous signin": {403, problem.CodeAnonymousUser}, "no session": {401, problem.CodeAuthRequired}}},
		{[]Allow{AllowUser, AllowAnon}, map[string]cell{"full user": ok, "anonymous signin": {403, problem.CodeAnonymousUser}, "no session": ok}},
		{[]Allow{AllowUser, AllowAnonymous}, map[string]cell{"full user": ok, "anonymous signin": ok, "no session": {401, problem.CodeAuthRequired}}},
		{[]Allow{AllowAnonymous}, map[string]cell{"full user": {403, problem.CodeCallerNotAllowed}, "anonymous signin": ok, "no session": {401, problem.CodeAuthRequired}}},
		// default allow list = ['user']
		{nil, map[string]cell{"full user": ok, "anonymous signin": {403, problem.CodeAnonymousUser}, "no session": {401, problem.CodeAuthRequired}}},
		// 'anon' alone never admits an anonymous sign-in
		{[]Allow{AllowAnon}, map[string]cell{"full user": {403, problem.CodeCallerNotAllowed}, "anonymous signin": {403, problem.CodeAnonymousUser}, "no session": ok}},
	}
	for _, m := range matrix {
		for caller, want := range m.cells {
			name := "allow=" + joinAllow(m.allow) + "/" + caller
			t.Run(name, func(t *testing.T) {
				h := b.rv.Middleware(Guard(m.allow...)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(200)
				})))
				w := httptest.NewRecorder()
				h.ServeHTTP(w, callers[caller]())
				if w.Code != want.status {
					t.Fatalf("status %d, want %d: %s", w.Code, want.status, w.Body)
				}
				if want.code != "" {
					var p problem.Problem
					if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || p.Code != want.code || p.Status != want.status {
						t.Fatalf("body %s, want code %s", w.Body, want.code)
					}
				}
				if want.status == 401 && w.Header().Get("WWW-Authenticate") != "Bearer" {
					t.Errorf("WWW-Authenticate %q", w.Header().Get("WWW-Authenticate"))
				}
			})
		}
	}
}

func joinAllow(a []Allow) string {
	if a == nil {
		return "default"
	}
	s := make([]string, len(a))
	for i, x := range a {
		s[i] = string(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}
