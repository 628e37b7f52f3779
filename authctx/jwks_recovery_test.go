package authctx

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"
)

// A JWKS that is down at start: construction succeeds, Ready fails, valid
// tokens fail (ErrKeysNotLoaded, never memoized), the background retries
// stay few, and once the JWKS answers valid tokens are accepted within
// seconds (not after the one-minute unknown-kid limit), while unknown kids
// still cannot make it fetch more than the limiter allows.
func TestJWKSDownAtStartRecoversWithinSeconds(t *testing.T) {
	t.Parallel()
	testKeys(t)
	srv := newJWKSServer(t, nil) // answers 503
	outage := time.Now()
	rv, err := New(context.Background(), &Config{ProjectURL: srv.URL, VerifierConfig: VerifierConfig{Issuer: testIssuer, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatalf("a JWKS outage at start must not fail construction: %v", err)
	}
	defer rv.Close()
	if err := rv.Ready(); !errors.Is(err, ErrKeysNotLoaded) {
		t.Fatalf("Ready while the JWKS is down: %v, want ErrKeysNotLoaded", err)
	}
	tok := signES(t, ecKey, kidEC, userClaims(nil))
	unknown := make([]string, 200)
	for i := range unknown {
		unknown[i] = signES(t, ecKey, "unknown-"+string(rune('a'+i%26)), userClaims(nil))
	}
	// A burst of valid tokens and unknown kids during the outage (signed
	// beforehand: the bound below is about resolving, not signing).
	start := time.Now()
	for i := 0; i < 200; i++ {
		a := rv.Resolve(bearerReq(tok)).Auth
		if a.Kind != KindInvalid || !errors.Is(a.Err, ErrKeysNotLoaded) {
			t.Fatalf("valid token while keys are missing: %s/%s %v, want invalid wrapping ErrKeysNotLoaded", a.Kind, a.Reason, a.Err)
		}
		if i == 0 {
			if p := Admit(a, AllowUser); p == nil || p.Status != 503 || p.Header.Get("Retry-After") == "" {
				t.Fatalf("guard while keys are missing: %+v, want 503 with Retry-After (not a 401 sign-out)", p)
			}
		}
		_ = rv.Resolve(bearerReq(unknown[i]))
	}
	// A request that waited for the background retries would cost at
	// least DefaultJWKSRetryMin (250 ms): 400 of them 100 s. The bound is a
	// fifth of that, far above what a loaded machine needs (4.6 s seen at
	// load 16 under -race).
	if d := time.Since(start); d > 400*DefaultJWKSRetryMin/5 {
		t.Fatalf("400 requests during the outage took %v: requests must not wait for the JWKS", d)
	}
	time.Sleep(time.Second) // sleep: background retries happen in real time: the count within the elapsed time is the subject
	// Start (1), one unknown-kid fetch (1), and the background retries that
	// fit in the time elapsed (250ms, 500ms, 1s, 2s, 2s...): a handful, not
	// one per request.
	want := 2 + retriesWithin(time.Since(outage))
	if n := srv.hits.Load(); n > int64(want) {
		t.Fatalf("JWKS requests during the outage: %d in %v, want at most %d", n, time.Since(outage).Round(time.Millisecond), want)
	}
	srv.set(jwksJSON(ecJWK(ecKey, kidEC), rsaJWK(rsaKey, kidRSA)))
	up := time.Now()
	for {
		if a := rv.Resolve(bearerReq(tok)).Auth; a.Kind == KindUser {
			break
		}
		// Background retries back off to at most DefaultJWKSRetryMax
		// (2 s); the bound leaves a loaded machine room beyond that.
		if time.Since(up) > 10*time.Second {
			t.Fatalf("valid token still refused %v after the JWKS came back", time.Since(up))
		}
		time.Sleep(20 * time.Millisecond) // sleep: poll step of the bounded wait around it
	}
	t.Logf("valid tokens accepted %v after the JWKS came back", time.Since(up).Round(time.Millisecond))
	if err := rv.Ready(); err != nil {
		t.Fatalf("Ready after the keys loaded: %v", err)
	}
	// Unknown kids after recovery: at most one fetch for the limiter's token.
	before := srv.hits.Load()
	for i := 0; i < 100; i++ {
		_ = rv.Resolve(bearerReq(signES(t, ecKey, "later-"+string(rune('a'+i%26)), userClaims(nil))))
	}
	if n := srv.hits.Load() - before; n > 1 {
		t.Fatalf("100 unknown kids caused %d JWKS fetches, want at most 1", n)
	}
}

// Inline keys verify before any fetch: with the JWKS URL down, a resolver
// that also has inline keys is ready and accepts their tokens.
func TestInlineKeysReadyWhileJWKSURLDown(t *testing.T) {
	t.Parallel()
	testKeys(t)
	srv := newJWKSServer(t, nil) // answers 503
	rv, err := New(context.Background(), &Config{ProjectURL: srv.URL, VerifierConfig: VerifierConfig{
		JWKS: jwksJSON(ecJWK(ecKey, kidEC)), Issuer: testIssuer, Logger: slog.New(slog.DiscardHandler)}})
	if err != nil {
		t.Fatal(err)
	}
	defer rv.Close()
	if err := rv.Ready(); err != nil {
		t.Fatalf("Ready with inline keys: %v", err)
	}
	if a := rv.Resolve(bearerReq(signES(t, ecKey, kidEC, userClaims(nil)))).Auth; a.Kind != KindUser {
		t.Fatalf("inline key token: %s %v", a.Kind, a.Err)
	}
	a := rv.Resolve(bearerReq(signES(t, ecKey, "not-inline", userClaims(nil)))).Auth
	if a.Kind != KindInvalid || errors.Is(a.Err, ErrKeysNotLoaded) {
		t.Fatalf("unknown kid with inline keys: %s %v, want a plain invalid token", a.Kind, a.Err)
	}
}

// retriesWithin returns how many background JWKS retries (after a failed
// first fetch) fit in d at most: DefaultJWKSRetryMin doubling up to
// DefaultJWKSRetryMax.
func retriesWithin(d time.Duration) int {
	n, sum, wait := 0, time.Duration(0), DefaultJWKSRetryMin
	for sum+wait <= d {
		sum += wait
		n++
		wait = min(2*wait, DefaultJWKSRetryMax)
	}
	return n
}
