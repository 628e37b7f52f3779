package authctx

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNewVerifierFirstFetchAndRefreshRace: the JWKS error handler runs on
// the first fetch (in NewVerifier) and on every background refresh
// (keyfunc's goroutine), and both touch the state that tells a failed
// first fetch apart. With a 1 ms refresh interval the two overlap at once;
// run with -race. Against a JWKS server that fails every other time, the
// keys load (even when the first fetch failed) and, once a token has
// verified, it keeps verifying while the key set is re-fetched.
func TestNewVerifierFirstFetchAndRefreshRace(t *testing.T) {
	t.Parallel()
	testKeys(t)
	good := jwksJSON(ecJWK(ecKey, kidEC))
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(good)
	}))
	t.Cleanup(srv.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	token := signES(t, ecKey, kidEC, userClaims(nil))
	quiet := slog.New(slog.DiscardHandler)

	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := srv.URL
			if i%2 == 1 {
				url = down.URL // the first fetch fails: keys load later
			}
			v, err := NewVerifier(t.Context(), &VerifierConfig{JWKSURL: url, RefreshInterval: time.Millisecond,
				UnknownKIDRefreshEvery: time.Millisecond, Logger: quiet})
			if err != nil {
				t.Errorf("NewVerifier: %v", err)
				return
			}
			defer v.Close()
			// Verify for at least 150 ms while the refreshes run; against
			// the flapping server, until the keys have loaded too (a
			// loaded machine may need far longer than 150 ms for the
			// first good fetch; the bound only catches keys that never
			// load).
			start := time.Now()
			verified := false
			for time.Since(start) < 150*time.Millisecond || (i%2 == 0 && !verified) {
				_, err := v.Verify(context.Background(), token)
				switch {
				case i%2 == 1:
				case err == nil:
					verified = true
				case verified:
					t.Errorf("Verify after the keys loaded: %v", err)
					return
				case !errors.Is(err, ErrTokenUnverifiable):
					t.Errorf("Verify: %v", err)
					return
				}
				if time.Since(start) > 30*time.Second {
					t.Errorf("no token verified within 30 s of a JWKS that answers every other request")
					return
				}
				time.Sleep(time.Millisecond) // sleep: retry step of a loop bounded at 30 s
			}
		}()
	}
	wg.Wait()
}

// TestNewVerifierContext: the first fetch is bounded by the caller's
// context, and a cancelled context fails construction instead of leaving
// a verifier without keys; the context does not end the verifier's life.
func TestNewVerifierContext(t *testing.T) {
	t.Parallel()
	testKeys(t)
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(hang); slow.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	v, err := NewVerifier(ctx, &VerifierConfig{JWKSURL: slow.URL, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		v.Close()
		t.Fatal("NewVerifier with an expired context: no error")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err %v, want it to wrap context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("NewVerifier took %v with a 100 ms context", d)
	}

	jwks := newJWKSServer(t, jwksJSON(ecJWK(ecKey, kidEC)))
	ctx2, cancel2 := context.WithCancel(t.Context())
	v, err = NewVerifier(ctx2, &VerifierConfig{JWKSURL: jwks.URL + "/auth/v1/.well-known/jwks.json"})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	cancel2()
	if _, err := v.Verify(context.Background(), signES(t, ecKey, kidEC, userClaims(nil))); err != nil {
		t.Errorf("Verify after the construction context ended: %v", err)
	}
}
