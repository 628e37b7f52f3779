package authctx

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestTokenTimeClaims: exp, nbf and iat as numbers, floats, strings,
// huge values and missing, through the resolver (Bearer path).
func TestTokenTimeClaims(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MemoSize = -1 })
	now := time.Now()
	hour := now.Add(time.Hour).Unix()
	cases := []struct {
		name string
		over map[string]any
		ok   bool
	}{
		{"valid", nil, true},
		{"exp float", map[string]any{"exp": float64(hour) + 0.5}, true},
		{"exp missing", map[string]any{"exp": nil}, false},
		{"exp string", map[string]any{"exp": strconv.FormatInt(hour, 10)}, false},
		{"exp past", map[string]any{"exp": now.Add(-time.Hour).Unix()}, false},
		{"exp within skew", map[string]any{"exp": now.Add(-10 * time.Second).Unix()}, true},
		{"exp year 10000", map[string]any{"exp": 253402300800}, false},
		{"exp 1e300", map[string]any{"exp": 1e300}, false},
		{"exp -1e300", map[string]any{"exp": -1e300}, false},
		{"exp negative", map[string]any{"exp": -1}, false},
		{"exp bool", map[string]any{"exp": true}, false},
		{"exp object", map[string]any{"exp": map[string]any{"n": hour}}, false},
		{"exp null", map[string]any{"exp": json.RawMessage("null")}, false},
		{"iat missing", map[string]any{"iat": nil}, true},
		{"iat float", map[string]any{"iat": float64(now.Unix()) - 0.25}, true},
		{"iat string", map[string]any{"iat": strconv.FormatInt(now.Unix(), 10)}, false},
		{"iat 10 years ahead", map[string]any{"iat": now.AddDate(10, 0, 0).Unix()}, false},
		{"iat a minute ahead", map[string]any{"iat": now.Add(time.Minute).Unix()}, false},
		{"iat within skew", map[string]any{"iat": now.Add(10 * time.Second).Unix()}, true},
		{"iat 1e300", map[string]any{"iat": 1e300}, false},
		{"iat -1e300", map[string]any{"iat": -1e300}, false},
		{"nbf past", map[string]any{"nbf": now.Add(-time.Minute).Unix()}, true},
		{"nbf future", map[string]any{"nbf": now.Add(time.Hour).Unix()}, false},
		{"nbf string", map[string]any{"nbf": "0"}, false},
		{"nbf 1e300", map[string]any{"nbf": 1e300}, false},
		{"nbf -1e300", map[string]any{"nbf": -1e300}, false},
	}
	for _, c := range cases {
		tok := b.token(c.over)
		a := b.rv.Resolve(bearerReq(tok)).Auth
		if c.ok && a.Kind != KindUser {
			t.Errorf("%s: %s/%s %v, want user", c.name, a.Kind, a.Reason, a.Err)
		}
		if !c.ok && (a.Kind != KindInvalid || a.Reason != ReasonToken) {
			t.Errorf("%s: %s/%s, want invalid/token", c.name, a.Kind, a.Reason)
		}
	}
}

// TestTokenIssuerAudienceDefaults: iss {ProjectURL}/auth/v1 and aud
// "authenticated" are required unless configured otherwise or opted out.
func TestTokenIssuerAudienceDefaults(t *testing.T) {
	t.Parallel()
	testKeys(t)
	jwks := jwksJSON(ecJWK(ecKey, kidEC))
	const project = "https://abcdefghijklmnopqrst.supabase.co"
	own := project + "/auth/v1"
	tok := func(over map[string]any) string {
		return signES(t, ecKey, kidEC, userClaims(over))
	}
	cases := []struct {
		name string
		cfg  Config
		over map[string]any
		ok   bool
	}{
		{"own issuer", Config{ProjectURL: project}, map[string]any{"iss": own}, true},
		{"project URL with a trailing slash", Config{ProjectURL: project + "/"}, map[string]any{"iss": own}, true},
		{"foreign issuer", Config{ProjectURL: project}, map[string]any{"iss": "https://evil.example/auth/v1"}, false},
		{"no issuer", Config{ProjectURL: project}, map[string]any{"iss": nil}, false},
		{"aud evil", Config{ProjectURL: project}, map[string]any{"iss": own, "aud": "evil"}, false},
		{"aud missing", Config{ProjectURL: project}, map[string]any{"iss": own, "aud": nil}, false},
		{"aud list holding authenticated", Config{ProjectURL: project}, map[string]any{"iss": own, "aud": []string{"x", "authenticated"}}, true},
		{"explicit issuer", Config{ProjectURL: project, VerifierConfig: VerifierConfig{Issuer: "https://auth.example"}}, map[string]any{"iss": "https://auth.example"}, true},
		{"explicit issuer, project's iss", Config{ProjectURL: project, VerifierConfig: VerifierConfig{Issuer: "https://auth.example"}}, map[string]any{"iss": own}, false},
		{"any issuer", Config{ProjectURL: project, AnyIssuer: true}, map[string]any{"iss": "https://evil.example"}, true},
		{"explicit audience", Config{ProjectURL: project, VerifierConfig: VerifierConfig{Audience: "api"}}, map[string]any{"iss": own, "aud": "api"}, true},
		{"explicit audience, default aud", Config{ProjectURL: project, VerifierConfig: VerifierConfig{Audience: "api"}}, map[string]any{"iss": own}, false},
		{"any audience", Config{ProjectURL: project, AnyAudience: true}, map[string]any{"iss": own, "aud": "evil"}, true},
		{"no project URL: iss unknown", Config{}, map[string]any{"iss": "whatever"}, true},
		{"no project URL: aud still checked", Config{}, map[string]any{"aud": "evil"}, false},
	}
	for _, c := range cases {
		cfg := c.cfg
		cfg.JWKS = jwks
		rv, err := New(context.Background(), &cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a := rv.Resolve(bearerReq(tok(c.over))).Auth
		rv.Close()
		if c.ok != (a.Kind == KindUser) {
			t.Errorf("%s: %s/%s %v, want ok=%v", c.name, a.Kind, a.Reason, a.Err, c.ok)
		}
	}
}

// TestMaxTokenLifetime: with MaxTokenLifetime, exp - iat and exp - now are
// bounded.
func TestMaxTokenLifetime(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.MaxTokenLifetime = 2 * time.Hour; c.MemoSize = -1 })
	now := time.Now()
	for _, c := range []struct {
		name string
		over map[string]any
		ok   bool
	}{
		{"an hour", nil, true},
		{"two hours exactly", map[string]any{"exp": now.Add(2 * time.Hour).Unix()}, true},
		{"a day", map[string]any{"exp": now.Add(24 * time.Hour).Unix()}, false},
		{"a day without iat", map[string]any{"exp": now.Add(24 * time.Hour).Unix(), "iat": nil}, false},
		{"issued long ago, exp soon, lifetime too long", map[string]any{"iat": now.Add(-24 * time.Hour).Unix()}, false},
	} {
		a := b.rv.Resolve(bearerReq(b.token(c.over))).Auth
		if c.ok != (a.Kind == KindUser) {
			t.Errorf("%s: %s %v, want ok=%v", c.name, a.Kind, a.Err, c.ok)
		}
	}
	if _, err := NewVerifier(context.Background(), &VerifierConfig{JWKS: jwksJSON(ecJWK(ecKey, kidEC)), MaxTokenLifetime: -time.Second}); err == nil {
		t.Error("negative MaxTokenLifetime accepted")
	}
}

// FuzzTimeClaims signs tokens whose exp, nbf and iat are arbitrary JSON
// values and checks that the verifier never panics and accepts only
// tokens whose time claims are plain in-range numbers that hold now.
func FuzzTimeClaims(f *testing.F) {
	testKeys(f)
	now := time.Now()
	for _, s := range [][3]string{
		{strconv.FormatInt(now.Add(time.Hour).Unix(), 10), "", strconv.FormatInt(now.Unix(), 10)},
		{`"` + strconv.FormatInt(now.Add(time.Hour).Unix(), 10) + `"`, "", ""},
		{"1e300", "-1e300", "1e300"},
		{"253402300800", "0", "0"},
		{"null", "null", "null"},
		{"1.5e9", "1.5e9", "1.5e9"},
		{"-0", "", "99999999999999999999999999"},
		{"true", "[]", "{}"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	v, err := NewVerifier(context.Background(), &VerifierConfig{JWKS: jwksJSON(ecJWK(ecKey, kidEC))})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(v.Close)
	f.Fuzz(func(t *testing.T, exp, nbf, iat string) {
		payload := `{"sub":"` + testUserID + `","role":"authenticated"`
		for _, kv := range [][2]string{{"exp", exp}, {"nbf", nbf}, {"iat", iat}} {
			if kv[1] != "" {
				if !json.Valid([]byte(kv[1])) {
					return
				}
				payload += fmt.Sprintf(`,%q:%s`, kv[0], kv[1])
			}
		}
		payload += "}"
		head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"ES256","typ":"JWT","kid":"` + kidEC + `"}`))
		body := base64.RawURLEncoding.EncodeToString([]byte(payload))
		sig, err := jwt.SigningMethodES256.Sign(head+"."+body, ecKey)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Verify(context.Background(), head+"."+body+"."+base64.RawURLEncoding.EncodeToString(sig))
		if err != nil {
			if !errors.Is(err, ErrTokenClaims) && !errors.Is(err, ErrTokenExpired) && !errors.Is(err, ErrTokenMalformed) {
				t.Fatalf("unexpected error class: %v", err)
			}
			return
		}
		at := time.Now()
		skew := DefaultClockSkew.Seconds() + 1
		for _, name := range []string{"exp", "nbf", "iat"} {
			raw, ok := got.Claims[name]
			if !ok {
				if name == "exp" {
					t.Fatal("accepted without exp")
				}
				continue
			}
			x, isNum := raw.(float64)
			if !isNum || math.IsNaN(x) || x < 0 || x > maxNumericDate {
				t.Fatalf("accepted %s = %v", name, raw)
			}
			sec := float64(at.Unix())
			switch name {
			case "exp":
				if x < sec-skew {
					t.Fatalf("accepted expired exp %v", x)
				}
			default:
				if x > sec+skew {
					t.Fatalf("accepted future %s %v", name, x)
				}
			}
		}
	})
}

// TestEnvIssuerAudience: LoadEnv derives the issuer from SUPABASE_URL and
// the audience "authenticated"; SUPABASE_JWT_ISSUER/AUDIENCE override them
// and "*" opts out.
func TestEnvIssuerAudience(t *testing.T) {
	t.Parallel()
	base := map[string]string{"SUPABASE_URL": "https://abcdefghijklmnopqrst.supabase.co/", "SUPABASE_PUBLISHABLE_KEY": "sb_publishable_x"}
	load := func(extra map[string]string) *Config {
		t.Helper()
		e, err := LoadEnvFrom(func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e.Config()
	}
	if c := load(nil); c.Issuer != "https://abcdefghijklmnopqrst.supabase.co/auth/v1" || c.Audience != "authenticated" || c.AnyIssuer || c.AnyAudience {
		t.Errorf("defaults: %q %q %v %v", c.Issuer, c.Audience, c.AnyIssuer, c.AnyAudience)
	}
	if c := load(map[string]string{"SUPABASE_JWT_ISSUER": "https://auth.example", "SUPABASE_JWT_AUDIENCE": "api"}); c.Issuer != "https://auth.example" || c.Audience != "api" {
		t.Errorf("overrides: %q %q", c.Issuer, c.Audience)
	}
	if c := load(map[string]string{"SUPABASE_JWT_ISSUER": "*", "SUPABASE_JWT_AUDIENCE": "*"}); c.CheckedIssuer() != "" || c.CheckedAudience() != "" || !c.AnyIssuer || !c.AnyAudience {
		t.Errorf("opt-out: %+v", c)
	}
}
