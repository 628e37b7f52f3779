package authctx

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// lockedBuffer is a bytes.Buffer safe for the access log's writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.b.String()
	l.b.Reset()
	return s
}

// TestTokenRefusalCauses sends one token per cause of refusal through the
// production stack (telemetry access log, resolver middleware, guard) and
// checks the problem's code and detail, the auth state (reason stays
// token; Cause gives the code), and that neither the body nor the access
// log line holds the token, a piece of it, or a claim value.
func TestTokenRefusalCauses(t *testing.T) {
	t.Parallel()
	now := time.Now().Truncate(time.Second)
	var log lockedBuffer
	tel, err := telemetry.New(&telemetry.Config{AccessLog: slog.New(slog.NewJSONHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, func(c *Config) {
		c.Now = func() time.Time { return now }
		c.Telemetry = tel
	})
	jwksURL := b.jwks.URL + "/auth/v1/.well-known/jwks.json"
	var seen Auth
	h := tel.Handler(b.rv.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = AuthFrom(r.Context())
		if p := Admit(seen); p != nil {
			problem.Write(w, p)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})))

	// Claim values no answer or log line may repeat.
	const secretName, secretEmail = "Ada Secretname", "ada.secret@example.org"
	claims := func(over map[string]any) jwt.MapClaims {
		c := userClaims(map[string]any{"email": secretEmail, "user_metadata": map[string]any{"full_name": secretName},
			"iat": now.Add(-time.Hour).Unix(), "exp": now.Add(time.Hour).Unix()})
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	hs256 := func() string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims(nil)).SignedString([]byte("super-secret-jwt-token-with-at-least-32-characters"))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	cases := []struct {
		name   string
		token  string
		code   problem.Code
		detail []string // substrings of the detail
	}{
		{"expired", signES(t, ecKey, kidEC, claims(map[string]any{"exp": now.Add(-3*time.Minute - 12*time.Second).Unix()})),
			problem.CodeTokenExpired, []string{"expired 3m12s ago", "clock leeway is 30s", "Refresh the session"}},
		{"not yet valid", signES(t, ecKey, kidEC, claims(map[string]any{"nbf": now.Add(2 * time.Minute).Unix()})),
			problem.CodeTokenNotYetValid, []string{"not valid for another 2m0s (nbf)", "clock leeway is 30s", "clocks"}},
		{"issued in the future", signES(t, ecKey, kidEC, claims(map[string]any{"iat": now.Add(5 * time.Minute).Unix()})),
			problem.CodeTokenNotYetValid, []string{"issued 5m0s in the future (iat)", "clock leeway is 30s"}},
		{"issuer mismatch", signES(t, ecKey, kidEC, claims(map[string]any{"iss": "https://other-project.supabase.co/auth/v1"})),
			problem.CodeTokenIssuerMismatch, []string{`issued by "https://other-project.supabase.co/auth/v1"`,
				`expects tokens issued by "` + testIssuer + `"`, "SUPABASE_JWT_ISSUER"}},
		{"issuer missing", signES(t, ecKey, kidEC, claims(map[string]any{"iss": nil})),
			problem.CodeTokenIssuerMismatch, []string{"has no issuer (iss)", `"` + testIssuer + `"`}},
		{"audience mismatch", signES(t, ecKey, kidEC, claims(map[string]any{"aud": []any{"service", "admin"}})),
			problem.CodeTokenAudienceMismatch, []string{`audiences "service", "admin"`, `expects the audience "authenticated"`, "SUPABASE_JWT_AUDIENCE"}},
		{"unknown key id", signES(t, ecKey2, "kid-of-another-project", claims(nil)),
			problem.CodeTokenUnknownKey, []string{`key id (kid) "kid-of-another-project"`, "the JWKS at " + jwksURL, "(2 keys, fetched ",
				"re-fetches it at most once every 1m0s"}},
		{"no key id, signed by another key", signES(t, ecKey2, "", claims(nil)),
			problem.CodeTokenSignatureInvalid, []string{"does not verify with any ES256 key", jwksURL}},
		{"bad signature", signES(t, ecKey2, kidEC, claims(nil)),
			problem.CodeTokenSignatureInvalid, []string{`key id "` + kidEC + `"`, "altered after signing"}},
		{"alg does not fit the key", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims(nil))
			tok.Header["kid"] = kidEC // an EC key
			s, err := tok.SignedString(rsaKey)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}(), problem.CodeTokenSignatureInvalid, []string{"alg RS256 does not fit the key", `"` + kidEC + `"`}},
		{"legacy HS256 secret", hs256(),
			problem.CodeTokenAlgorithmNotAccepted, []string{"signed with \"HS256\", a legacy shared JWT secret", "ES256, RS256 or EdDSA", SigningKeysDocs}},
		{"alg none", unsigned(`{"alg":"none","typ":"JWT"}`, `{"sub":"`+testUserID+`","exp":4102444800}`),
			problem.CodeTokenAlgorithmNotAccepted, []string{"unsigned (alg none"}},
		{"malformed", "not-a-jwt-at-all",
			problem.CodeTokenMalformed, []string{"not a compact JWT (not three segments)", "Authorization: Bearer <token>"}},
		{"malformed payload", unsigned(`{"alg":"ES256","kid":"`+kidEC+`"}`, `"`+secretEmail+`"`),
			problem.CodeTokenMalformed, []string{"not a compact JWT (header or payload is not a JSON object)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, "/todos", nil)
			req.Header.Set("Authorization", "Bearer "+tc.token)
			rec := httptest.NewRecorder()
			log.take()
			h.ServeHTTP(rec, req)
			body, _ := io.ReadAll(rec.Body)
			var p problem.Problem
			if err := json.Unmarshal(body, &p); err != nil || rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d body %s", rec.Code, body)
			}
			if p.Code != tc.code {
				t.Errorf("code %q, want %q (detail %q)", p.Code, tc.code, p.Detail)
			}
			for _, want := range tc.detail {
				if !strings.Contains(p.Detail, want) {
					t.Errorf("detail %q lacks %q", p.Detail, want)
				}
			}
			if seen.Kind != KindInvalid || seen.Reason != ReasonToken || seen.Cause() != tc.code || seen.CauseDetail() != p.Detail {
				t.Errorf("auth %s/%s cause %q, want invalid/token cause %q", seen.Kind, seen.Reason, seen.Cause(), tc.code)
			}
			line := strings.TrimSpace(log.take())
			var entry map[string]any
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("access log %q: %v", line, err)
			}
			if entry["caller_kind"] != "invalid" || entry["caller_reason"] != "token" || entry["caller_cause"] != string(tc.code) {
				t.Errorf("access log %s: want caller_kind invalid, caller_reason token, caller_cause %s", line, tc.code)
			}
			for _, where := range []struct{ name, text string }{{"body", string(body)}, {"log", line}} {
				forbidden := []string{tc.token, testUserID, secretEmail, secretName, "22222222-2222-4222-8222-222222222222", "super-secret"}
				forbidden = append(forbidden, strings.Split(tc.token, ".")...)
				for _, f := range forbidden {
					if len(f) >= 8 && strings.Contains(where.text, f) {
						t.Errorf("%s holds %q: %s", where.name, f, where.text)
					}
				}
			}
		})
	}
}

// TestTokenRefusalShownValues: a received issuer or kid is quoted and
// shortened in the detail, so a hostile token cannot write lines or
// markup into a log or a page, nor a megabyte into a problem.
func TestTokenRefusalShownValues(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	long := strings.Repeat("x", 5000)
	for name, tok := range map[string]string{
		"issuer": signES(t, ecKey, kidEC, userClaims(map[string]any{"iss": "evil\n{\"level\":\"ERROR\"}<script>" + long})),
		"kid":    signES(t, ecKey2, "kid\r\nInjected: yes"+long, userClaims(nil)),
		"audience": signES(t, ecKey, kidEC, userClaims(map[string]any{"aud": func() []any {
			a := make([]any, 2000)
			for i := range a {
				a[i] = "aud\n" + long[:100]
			}
			return a
		}()})),
	} {
		a := b.rv.Resolve(bearerReq(tok)).Auth
		d := a.CauseDetail()
		if d == "" || strings.ContainsAny(d, "\r\n") || len(d) > 1200 || strings.Contains(d, long) {
			t.Errorf("%s: detail %q", name, d)
		}
	}
}

// TestVerifyHotPathUnchanged: a valid token still verifies, and a memo hit
// costs no allocation (the cause of a refusal is computed only on the
// refusal path).
func TestVerifyHotPathUnchanged(t *testing.T) {
	b := setup(t, nil)
	tok := b.token(nil)
	if a := b.rv.ResolveToken(context.Background(), tok); a.Kind != KindUser || a.Cause() != "" {
		t.Fatalf("valid token: %+v cause %q", a.Kind, a.Cause())
	}
	if n := testing.AllocsPerRun(100, func() { b.rv.ResolveToken(context.Background(), tok) }); n != 0 {
		t.Errorf("memo hit allocates %v times", n)
	}
}
