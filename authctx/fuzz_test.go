package authctx

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// FuzzPreParse: the token pre-parse never panics, only accepts what it
// promises (three base64url segments, an ES256/RS256 header), and fails
// only with ErrTokenMalformed.
func FuzzPreParse(f *testing.F) {
	for _, s := range []string{
		"", ".", "..", "a.b.c",
		unsigned(`{"alg":"ES256","kid":"k","typ":"JWT"}`, `{"sub":"u","exp":1}`),
		unsigned(`{"alg":"RS256"}`, `{}`),
		unsigned(`{"alg":"none"}`, `{}`),
		unsigned(`{"alg":"HS256","kid":"x"}`, `{}`),
		unsigned(`[]`, `{}`),
		unsigned(`{"alg":"ES256","crit":["exp"]}`, `{}`),
		"eyJhbGciOiJFUzI1NiJ9.e30.c2ln",
		"eyJhbGciOiJFUzI1NiJ9==.e30.c2ln",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		h, err := preParse(tok, DefaultMaxTokenBytes)
		if err != nil {
			if !errors.Is(err, ErrTokenMalformed) {
				t.Fatalf("error %v does not wrap ErrTokenMalformed", err)
			}
			if len(tok) > 24 && strings.Contains(err.Error(), tok) {
				t.Fatalf("error echoes the token")
			}
			return
		}
		if strings.Count(tok, ".") != 2 || (h.Alg != "ES256" && h.Alg != "RS256") {
			t.Fatalf("accepted %q with header %+v", tok, h)
		}
	})
}

var (
	fuzzOnce sync.Once
	fuzzRV   *Resolver
)

// fuzzResolver is a resolver with an inline JWKS (no network) shared by
// the fuzz targets.
func fuzzResolver(t testing.TB) *Resolver {
	fuzzOnce.Do(func() {
		testKeys(t)
		rv, err := New(context.Background(), &Config{
			ProjectURL:     "https://abcdefghijklmnopqrst.supabase.co",
			VerifierConfig: VerifierConfig{JWKS: jwksJSON(ecJWK(ecKey, kidEC), rsaJWK(rsaKey, kidRSA))},
		})
		if err != nil {
			panic(err)
		}
		fuzzRV = rv
	})
	return fuzzRV
}

// checkAnswer resolves r through Middleware + Guard: any input yields a
// well-formed state and never a 500.
func checkAnswer(t *testing.T, rv *Resolver, r *http.Request) {
	res := rv.Resolve(r)
	switch res.Auth.Kind {
	case KindUser:
		if res.Auth.User == nil || res.Auth.User.ID == "" {
			t.Fatalf("user without id")
		}
	case KindAnon, KindInvalid:
		if res.Auth.Reason == "" {
			t.Fatalf("%s without reason", res.Auth.Kind)
		}
	case KindService:
	default:
		t.Fatalf("unknown kind %q", res.Auth.Kind)
	}
	w := httptest.NewRecorder()
	rv.Middleware(rv.CrossSite(Guard(AllowUser, AllowAnon)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(204)
	})))).ServeHTTP(w, r)
	if w.Code >= 500 {
		t.Fatalf("status %d", w.Code)
	}
}

// FuzzCookieRead: any Cookie header, through the cookie path as wired in
// Resolve (ssrcookie.HeaderCookies, Read and LoadSession: header
// splitting, chunk joining, base64url, JSON; then token verification),
// yields a state and a non-5xx guard answer.
func FuzzCookieRead(f *testing.F) {
	const n = "sb-abcdefghijklmnopqrst-auth-token"
	for _, s := range []string{
		"", n + "=", n + "=base64-", n + "=base64-e30", n + "=base64-!!", n + "={}",
		n + `={"access_token":"a.b.c"}`, n + "=%7B%22access_token%22%3A1%7D",
		n + ".0=base64-eyJhY2Nlc3NfdG9rZW4iOiJ4In0; " + n + ".1=",
		n + ".0=base64-eyJhY2Nlc3Nf; " + n + ".1=dG9rZW4iOiJ4In0",
		n + "=" + sessionCookieValue(unsigned(`{"alg":"ES256","kid":"`+kidEC+`"}`, `{"sub":"u","exp":4102444800}`), 4102444800),
		n + `=["a","b",null,null]`, "a=b; c=d; " + n + "=base64-WzFd",
		n + `={"access_token":"a.b.c","refresh_token":"r","expires_at":1}`,
		n + `="base64-eyJhY2Nlc3NfdG9rZW4iOm51bGwsInJlZnJlc2hfdG9rZW4iOm51bGwsImV4cGlyZXNfYXQiOm51bGx9"`,
		" " + n + " = base64-eyJhY2Nlc3NfdG9rZW4iOm51bGwsInJlZnJlc2hfdG9rZW4iOm51bGwsImV4cGlyZXNfYXQiOm51bGx9 ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cookie string) {
		rv := fuzzResolver(t)
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Cookie", cookie)
		r.Header.Set("Sec-Fetch-Site", "cross-site")
		checkAnswer(t, rv, r)
	})
}

// FuzzAuthorization: any Authorization header value yields a state and a
// non-5xx answer; a non-empty header with a token is never anon unless it
// carries a publishable key.
func FuzzAuthorization(f *testing.F) {
	for _, s := range []string{
		"", "Bearer", "Bearer ", "bearer a.b.c", "Basic x", "Bearer sb_publishable_x",
		"Bearer " + unsigned(`{"alg":"ES256","kid":"`+kidEC+`"}`, `{"sub":"u","exp":"4102444800"}`),
		"Bearer " + unsigned(`{"alg":"RS256","kid":"`+kidRSA+`"}`, `{"sub":"u","exp":4102444800,"act":{"act":{}}}`),
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		rv := fuzzResolver(t)
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{h}
		checkAnswer(t, rv, r)
	})
}
