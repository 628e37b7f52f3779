package authctx

// # Session refresh on the cookie path
//
// (User-facing version with a configuration example: docs/refresh.md.)
//
// With Config.Refresh on, a cookie session whose access token expires
// within Config.Leeway (default 60 s) is refreshed before the request is
// resolved: tablegate sends the refresh-token grant to
// {ProjectURL}/auth/v1/token?grant_type=refresh_token exactly as auth-js
// does (apikey header, Authorization: Bearer <key>, JSON body
// {"refresh_token": …}), verifies the new access token like any other
// token, and writes the new session in the @supabase/ssr cookie format
// (package ssrcookie): same cookie name, "base64-" value, chunks of 3180
// characters, Config.CookieOptions (default: the client's default
// options), stale chunks expired, and the no-store cache headers;
// Result.Apply renders the lines byte for byte as @supabase/ssr does. Result.RequestCookies then carries the new
// cookies so the rest of the request sees the new token. Turn it on only
// where the response can still set cookies (not in a streaming handler that
// has already written its header).
//
// Outcomes:
//
//   - success: the caller is the user of the new token (or invalid/claims
//     when the new claims fail the schema; the new session is still
//     written, because the old refresh token is spent);
//   - rejection (the auth server answers 4xx other than 408/429, e.g.
//     refresh_token_not_found, refresh_token_already_used,
//     session_not_found): anon/signed_out, and every session cookie chunk
//     of the request is deleted;
//   - failure (network error, timeout after Config.RefreshTimeout, 5xx,
//     408, 429, a 2xx that is not a session, or a new token that does not
//     verify): nothing is written, so the next request retries; the caller
//     is still the user while the old token is unexpired, else
//     anon/refresh_failed.
//
// A verified token whose claims fail the schema is invalid/claims and is
// never refreshed. A token outside the leeway costs no network call and
// writes no cookie.
//
// # Concurrency and the 10-second result cache
//
// Within one process, concurrent requests carrying the same refresh token
// share one call to the auth server, and a finished success
// or rejection is reused for 10 seconds (bounded cache keyed by a hash of
// the refresh token), so a burst of requests from one browser — which all
// carry the old cookie until the first response arrives — costs one call
// and all get the same new session. Failures are not cached.
//
// # Several instances
//
// The cache is per process. When requests of one browser reach different
// instances at the same moment, each instance may send the same refresh
// token. The auth server absorbs this with its refresh-token reuse
// interval (GOTRUE_SECURITY_REFRESH_TOKEN_REUSE_INTERVAL, 10 s on the
// hosted platform and in the Supabase CLI config): a token reused within
// the interval returns the current session instead of revoking the
// family. That setting must stay enabled (non-zero) when refresh-token
// rotation is on; with 0, the second instance's call is answered
// refresh_token_already_used, GoTrue revokes the session, and the user is
// signed out.
//
// # Claim staleness
//
// The claims a request sees are those of the access token, which is
// verified locally and never re-checked with the auth server. A change
// made on the server — a role or app_metadata update, a ban, a sign-out
// elsewhere, a deleted user — reaches tablegate only with the next token,
// i.e. at the latest when the current one expires (one hour with the
// default JWT expiry, plus Leeway). Shorten the project's JWT expiry if
// that window is too long, or check the user with the auth server in the
// few handlers that need it.

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/gotrue"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/telemetry"
)

// Defaults of session refresh (Config.Leeway, Config.RefreshTimeout).
const (
	// DefaultLeeway: refresh when the token expires within this time.
	DefaultLeeway = 60 * time.Second
	// DefaultRefreshTimeout: a slower refresh counts as a network failure.
	DefaultRefreshTimeout = 5 * time.Second
	// DefaultRefreshWait is how long a request whose access token is still
	// valid waits for its session's refresh before going on with the old
	// token (the refresh then finishes in the background).
	DefaultRefreshWait = 250 * time.Millisecond
	// RefreshResultTTL is how long a finished success or rejection is
	// reused for the same refresh token.
	RefreshResultTTL = 10 * time.Second
	// RefreshHandoffTTL is how long a success or rejection that finished
	// after every waiting request had gone on (a background refresh) is
	// kept for the session's next request, which writes it.
	RefreshHandoffTTL = 2 * time.Minute
	// RefreshBackoffMin and RefreshBackoffMax bound the time a failed
	// refresh is remembered: after the n-th failure in a row no call is
	// made for RefreshBackoffMin·2^(n-1), at most RefreshBackoffMax, or
	// for the server's Retry-After on 429/503 when longer (at most
	// maxRetryAfter). One session thus costs at most 6 auth calls in its
	// first minute of failures and 2 a minute after that.
	RefreshBackoffMin = 2 * time.Second
	RefreshBackoffMax = 30 * time.Second
	// maxRetryAfter caps the Retry-After honoured.
	maxRetryAfter = 5 * time.Minute
	// refreshCacheMax bounds the result cache and the failure memory; the
	// oldest entries go first.
	refreshCacheMax = 10000
)

// errBackingOff is the Err of a refresh skipped because the previous one
// for the same refresh token failed moments ago.
var errBackingOff = errors.New("authctx: refresh failed recently; backing off")

// refresher sends refresh calls, one per refresh token at a time, keeps
// finished successes and rejections for RefreshResultTTL (or
// RefreshHandoffTTL when nobody was waiting any more), and remembers
// failures with backoff. Safe for concurrent use.
type refresher struct {
	client  *gotrue.Client
	timeout time.Duration
	now     func() time.Time
	ttl     time.Duration
	max     int
	// accept, when set, checks a successful answer inside the shared call
	// (the new access token must verify); a refused answer counts as
	// Failed and is not cached.
	accept func(ctx context.Context, accessToken string) bool
	// tel counts shared waits and outcomes (nil: none).
	tel *telemetry.Telemetry

	mu       sync.Mutex
	cache    map[[sha256.Size]byte]refreshEntry
	order    []refreshKeyAt // insertion order, for expiry and bounding
	failures map[[sha256.Size]byte]failEntry
	// calls holds the call in flight per refresh token; it leaves the map
	// in the same critical section that records its outcome.
	calls map[[sha256.Size]byte]*refreshCall
}

// refreshCall is one call to the auth server, shared by every request
// carrying its refresh token while it runs.
type refreshCall struct {
	done chan struct{} // closed once res is set
	res  gotrue.Result
	// slow is set (under refresher.mu) when a waiting request went on
	// without the result: until the call ends, later requests with a
	// valid token do not wait for it, and its result is kept for
	// RefreshHandoffTTL. It belongs to the call, so it cannot outlive it.
	slow bool
}

type refreshEntry struct {
	res gotrue.Result
	at  time.Time
	ttl time.Duration
}

type refreshKeyAt struct {
	key [sha256.Size]byte
	at  time.Time
}

// failEntry remembers the failures in a row of one refresh token.
type failEntry struct {
	n     int
	until time.Time // no call before this
}

func newRefresher(client *gotrue.Client, timeout time.Duration, now func() time.Time) *refresher {
	if timeout <= 0 {
		timeout = DefaultRefreshTimeout
	}
	if now == nil {
		now = time.Now
	}
	return &refresher{
		client: client, timeout: timeout, now: now, ttl: RefreshResultTTL, max: refreshCacheMax,
		cache:    make(map[[sha256.Size]byte]refreshEntry),
		failures: make(map[[sha256.Size]byte]failEntry),
		calls:    make(map[[sha256.Size]byte]*refreshCall),
	}
}

// refresh returns the outcome for refreshToken: a cached one, Failed with
// errBackingOff while a recent failure is remembered, the result of a
// call already in flight for the same token, or a new call. It returns
// within the refresh timeout, and earlier (Failed) when ctx ends first;
// the shared call itself is not cancelled by one caller leaving, and its
// result is then kept for the session's next request. With patient false
// (the caller's token is still valid) it does not wait at all for a call
// already known to be slow.
func (f *refresher) refresh(ctx context.Context, refreshToken string, patient bool) gotrue.Result {
	key := sha256.Sum256([]byte(refreshToken))
	f.mu.Lock()
	if res, ok := f.cachedLocked(key); ok {
		f.mu.Unlock()
		f.observe(ctx, res, true)
		return res
	}
	if f.backingOffLocked(key) {
		f.mu.Unlock()
		return gotrue.Result{Err: errBackingOff}
	}
	c, shared := f.calls[key], true
	if c == nil {
		c, shared = &refreshCall{done: make(chan struct{})}, false
		f.calls[key] = c
		go f.call(ctx, key, c, refreshToken)
	} else if !patient && c.slow {
		f.mu.Unlock()
		return gotrue.Result{Err: context.DeadlineExceeded}
	}
	f.mu.Unlock()
	select {
	case <-c.done:
		f.observe(ctx, c.res, shared)
		return c.res
	case <-ctx.Done():
	}
	f.mu.Lock()
	ended := f.calls[key] != c
	if !ended {
		c.slow = true
	}
	f.mu.Unlock()
	if ended {
		// The call ended as this request gave up: use its result. (A slow
		// mark set now would outlive the call and keep later requests
		// with a valid token from ever sending another.)
		<-c.done
		f.observe(ctx, c.res, shared)
		return c.res
	}
	res := gotrue.Result{Err: ctx.Err()}
	f.observe(ctx, res, shared)
	return res
}

// call sends the refresh call c for key, records its outcome and ends it.
// It is not cancelled by the requests waiting for it leaving; it is
// bounded by the refresh timeout.
func (f *refresher) call(ctx context.Context, key [sha256.Size]byte, c *refreshCall, refreshToken string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.timeout)
	defer cancel()
	res := f.client.Refresh(cctx, refreshToken, f.now())
	if res.Outcome == gotrue.Success && f.accept != nil && !f.accept(cctx, res.Parsed.AccessToken) {
		res = gotrue.Result{Status: res.Status, Err: errors.New("authctx: the refreshed access token does not verify")}
	}
	f.mu.Lock()
	if res.Outcome == gotrue.Failed {
		f.failLocked(key, res.RetryAfter)
	} else {
		f.storeLocked(key, res, c.slow)
	}
	delete(f.calls, key)
	c.res = res
	f.mu.Unlock()
	close(c.done)
}

// observe reports a refresh outcome, and whether this request waited on
// another's call (or a recent result) instead of sending its own.
func (f *refresher) observe(ctx context.Context, res gotrue.Result, shared bool) {
	if f.tel == nil {
		return
	}
	if shared {
		f.tel.RefreshShared(ctx)
	}
	f.tel.RefreshOutcome(ctx, res.Outcome.String())
}

func (f *refresher) cachedLocked(key [sha256.Size]byte) (gotrue.Result, bool) {
	e, ok := f.cache[key]
	if !ok || f.now().Sub(e.at) >= e.ttl {
		return gotrue.Result{}, false
	}
	return e.res, true
}

func (f *refresher) backingOffLocked(key [sha256.Size]byte) bool {
	e, ok := f.failures[key]
	return ok && f.now().Before(e.until)
}

// failLocked remembers a failed call: no further call for this refresh
// token until the backoff (or the server's Retry-After) has passed.
func (f *refresher) failLocked(key [sha256.Size]byte, retryAfter time.Duration) {
	now := f.now()
	n := 1
	if e, ok := f.failures[key]; ok && now.Sub(e.until) < RefreshBackoffMax {
		n = e.n + 1 // failures in a row
	}
	wait := RefreshBackoffMax
	if n <= 5 {
		wait = min(RefreshBackoffMin<<(n-1), RefreshBackoffMax)
	}
	if retryAfter > wait {
		wait = min(retryAfter, maxRetryAfter)
	}
	if len(f.failures) >= f.max {
		for k, e := range f.failures {
			if now.Sub(e.until) >= RefreshBackoffMax {
				delete(f.failures, k)
			}
		}
		for k := range f.failures { // still full: drop one, not all
			if len(f.failures) < f.max {
				break
			}
			delete(f.failures, k)
		}
	}
	f.failures[key] = failEntry{n: n, until: now.Add(wait)}
}

// storeLocked caches a success or rejection; slow: a request went on
// without it.
func (f *refresher) storeLocked(key [sha256.Size]byte, res gotrue.Result, slow bool) {
	now := f.now()
	delete(f.failures, key)
	ttl := f.ttl
	if slow {
		// Nobody waits for this result any more: keep it for the
		// session's next request.
		ttl = max(ttl, RefreshHandoffTTL)
	}
	// Drop expired entries from the front, then the oldest beyond max.
	i := 0
	for ; i < len(f.order); i++ {
		o := f.order[i]
		e, ok := f.cache[o.key]
		live := ok && e.at.Equal(o.at) && now.Sub(e.at) < e.ttl
		if live && len(f.order)-i < f.max {
			break
		}
		if ok && e.at.Equal(o.at) {
			delete(f.cache, o.key)
		}
	}
	f.order = append(f.order[i:], refreshKeyAt{key, now})
	f.cache[key] = refreshEntry{res: res, at: now, ttl: ttl}
}

// forget drops the cached refreshes of refreshToken and those that led to
// it (their new session carries it).
func (f *refresher) forget(refreshToken string) {
	if refreshToken == "" {
		return
	}
	key := sha256.Sum256([]byte(refreshToken))
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.cache, key)
	for k, e := range f.cache {
		if e.res.Parsed != nil && e.res.Parsed.RefreshToken == refreshToken {
			delete(f.cache, k)
		}
	}
}

// cacheLen returns the number of cached results (tests).
func (f *refresher) cacheLen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.cache)
}

// refreshDecision is what the cookie path does after a refresh attempt.
type refreshDecision struct {
	// Auth is the caller's state.
	Auth Auth
	// SetCookies are the Set-Cookie cookies (empty when nothing is written).
	SetCookies []*http.Cookie
	// Header holds the cache headers to send with SetCookies.
	Header http.Header
	// RequestCookies are the cookies the rest of the request sees; nil
	// when they do not change.
	RequestCookies []*http.Cookie
}

// refreshFlow is the refresh step of the cookie path, independent of how
// tokens are verified.
type refreshFlow struct {
	r          *refresher
	cookieName string
	opts       ssrcookie.Options
	// wait bounds how long a request whose token is still valid waits for
	// the refresh (Config.RefreshWait).
	wait time.Duration
}

// run refreshes the session of a request. cookies are the request
// cookies, refreshToken the session's, current the state of the old
// token (a user when it still verifies), expired whether it has expired.
// verify verifies a new access token exactly like any other token and
// returns its state.
func (fl *refreshFlow) run(ctx context.Context, cookies []*http.Cookie, refreshToken string, current Auth, expired bool, verify func(context.Context, string) Auth) refreshDecision {
	if !expired && current.Kind == KindUser {
		// The old token still serves this request: wait at most fl.wait
		// for the refresh, which otherwise completes in the background
		// and reaches the session's next request.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, fl.wait)
		defer cancel()
	}
	keep := func() refreshDecision {
		if !expired && current.Kind == KindUser {
			return refreshDecision{Auth: current}
		}
		return refreshDecision{Auth: Anon(ReasonRefreshFailed)}
	}
	if refreshToken == "" {
		return keep()
	}
	res := fl.r.refresh(ctx, refreshToken, expired || current.Kind != KindUser)
	switch res.Outcome {
	case gotrue.Success:
		a := verify(ctx, res.Parsed.AccessToken)
		if !usableRefreshed(a) {
			// The server sent a token we cannot verify: keep the old session.
			return keep()
		}
		set, after := ssrcookie.Write(fl.cookieName, res.Session, cookies, fl.opts)
		d := refreshDecision{Auth: a, SetCookies: set, RequestCookies: after}
		if len(set) > 0 {
			d.Header = ssrcookie.CacheHeaders()
		}
		return d
	case gotrue.Rejected:
		set, after := ssrcookie.Clear(fl.cookieName, cookies, fl.opts)
		d := refreshDecision{Auth: Anon(ReasonSignedOut), SetCookies: set, RequestCookies: after}
		if len(set) > 0 {
			d.Header = ssrcookie.CacheHeaders()
		}
		return d
	}
	return keep()
}

// usableRefreshed reports whether the state of a refreshed access token
// lets the new session be stored: a user, or a verified token whose claims
// fail the schema (the session is genuine; the caller is invalid/claims).
func usableRefreshed(a Auth) bool {
	return a.Kind == KindUser || (a.Kind == KindInvalid && a.Reason == ReasonClaims)
}
