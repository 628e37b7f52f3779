package authctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"golang.org/x/time/rate"
)

// Defaults of the JWKS retry (see [VerifierConfig]).
const (
	// DefaultJWKSRetryMin is the first wait before fetching again after a
	// failed JWKS fetch; each further failure doubles it.
	DefaultJWKSRetryMin = 250 * time.Millisecond
	// DefaultJWKSRetryMax caps the wait between fetches while the JWKS
	// fails, so keys load within this long after it answers again.
	DefaultJWKSRetryMax = 2 * time.Second
	// maxJWKSBytes bounds a JWKS response.
	maxJWKSBytes = 1 << 20
)

// ErrKeysNotLoaded is returned by [Verifier.Ready] (and wrapped in
// verification errors of tokens whose key is unknown) while no key has
// been loaded from the JWKS URL yet: the JWKS did not answer since start.
var ErrKeysNotLoaded = errors.New("authctx: the JWKS has not been loaded yet")

// errEmptyJWKS: the JWKS answered with no usable key (a legacy project).
var errEmptyJWKS = errors.New("jwks lists no usable key")

// jwksFetcher keeps the keys of one JWKS URL in store: one fetch at start,
// one every interval, one on an unknown kid (at most one per limiter
// token), and, after any failed fetch, retries in the background with
// backoff (retryMin doubling up to retryMax) until one succeeds. Requests
// never wait for the background retries, and unknown kids can never cause
// more than the limiter allows.
type jwksFetcher struct {
	url      string
	shown    string // url for logs: a password in it redacted (see redactURL)
	client   *http.Client
	timeout  time.Duration
	store    jwkset.Storage
	log      *slog.Logger
	unknown  *rate.Limiter
	interval time.Duration
	retryMin time.Duration
	retryMax time.Duration

	every time.Duration // the unknown-kid limiter's period (for refusal details)

	loaded    atomic.Bool   // a fetch has succeeded once
	fetchedAt atomic.Int64  // unix nanoseconds of the last successful fetch
	kick      chan struct{} // a fetch failed: retry in the background
	mu        sync.Mutex    // one fetch at a time
}

// fetch loads the JWKS and replaces the stored keys. A response without
// an asymmetric key fails and keeps the keys held so far.
func (f *jwksFetcher) fetch(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return err
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return fmt.Errorf("jwks request: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("jwks answered %d", resp.StatusCode)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxJWKSBytes+1))
	if err != nil {
		return fmt.Errorf("jwks read: %w", err)
	}
	if len(raw) > maxJWKSBytes {
		return fmt.Errorf("jwks larger than %d bytes", maxJWKSBytes)
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(raw, &set); err != nil {
		return fmt.Errorf("jwks is not a JWK Set: %w", err)
	}
	keys := make([]jwkset.JWK, 0, len(set.Keys))
	for _, m := range set.Keys {
		k, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
		if err != nil {
			continue // unsupported or malformed keys are skipped, like jwkset does
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return errEmptyJWKS
	}
	if err := f.store.KeyReplaceAll(ctx, keys); err != nil {
		return err
	}
	f.fetchedAt.Store(time.Now().UnixNano())
	f.loaded.Store(true)
	return nil
}

// failed logs a failed fetch and asks the loop to retry soon.
func (f *jwksFetcher) failed(ctx context.Context, err error) {
	f.log.WarnContext(ctx, "authctx: JWKS fetch failed; retrying in the background", "url", f.shown, "error", err)
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// unknownKID fetches once for a token whose kid is unknown, when the
// limiter allows; it reports whether the keys were re-fetched.
func (f *jwksFetcher) unknownKID(ctx context.Context) bool {
	if !f.unknown.Allow() {
		return false
	}
	if err := f.fetch(ctx); err != nil {
		f.failed(ctx, err)
		return false
	}
	return true
}

// run refreshes every interval and retries failed fetches with backoff
// until ctx ends.
func (f *jwksFetcher) run(ctx context.Context, failing bool) {
	var backoff time.Duration
	if failing {
		backoff = f.retryMin
	}
	for {
		wait := f.interval
		if backoff > 0 {
			wait = backoff
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-f.kick:
			t.Stop()
			if backoff == 0 {
				backoff = f.retryMin
			}
			continue
		case <-t.C:
		}
		if err := f.fetch(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			f.log.WarnContext(ctx, "authctx: JWKS fetch failed; retrying in the background", "url", f.shown, "error", err, "retry_in", backoff)
			if backoff == 0 {
				backoff = f.retryMin
			} else {
				backoff = min(2*backoff, f.retryMax)
			}
			continue
		}
		backoff = 0
	}
}

// redactURL is u for logs and messages: a password in it reads "xxxxx", as
// net/url's Redacted writes it (and as Go's own errors already show it).
func redactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	return p.Redacted()
}
