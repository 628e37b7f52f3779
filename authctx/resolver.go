package authctx

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/telemetry"
)

// Resolver resolves the caller of every request: custom resolvers, the
// secret apikey, a Bearer JWT, then the session cookie (refreshed when
// Config.Refresh is on). Build
// it with [New]. A Resolver is safe for concurrent use; Close stops its
// background JWKS refresh.
type Resolver struct {
	verifier    *Verifier
	memo        *memo
	resolvers   []CustomResolver
	secret      bool
	secretKeys  []secretKey
	hmacKey     []byte
	publishable map[string]struct{}
	claims      *ClaimsSchema
	profile     *ClaimsSchema
	cookieName  string
	skew        time.Duration
	now         func() time.Time
	cop         *http.CrossOriginProtection

	// refresh is the refresh flow (refresh_resolver.go), set when
	// Config.Refresh is on: the cookie path hands it sessions whose token
	// expires within leeway.
	refresh func(r *http.Request, res *Result, sess ssrsession.Cookie, current Auth) Auth
	forget  func(refreshToken string) // drops cached refreshes (ForgetSession); nil without refresh
	leeway  time.Duration
	tel     *telemetry.Telemetry
	// stopMemoGauge takes the memo off tel's memo size gauge (Close).
	stopMemoGauge func()
}

type secretKey struct {
	name string
	mac  []byte
}

// New builds a Resolver: it validates cfg, then fetches the JWKS once
// (see [NewVerifier]; ctx bounds that first fetch, not the resolver's
// life). It fails with an error naming the problem for a bad
// configuration, e.g. [ErrLegacySecret] when only an HS256 secret is
// configured; nothing runs in the background when it fails.
func New(ctx context.Context, cfg *Config) (*Resolver, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	cop := http.NewCrossOriginProtection()
	if err := cfg.validate(cop); err != nil {
		return nil, err
	}
	vc := cfg.VerifierConfig
	if vc.JWKSURL == "" && len(vc.JWKS) == 0 && cfg.ProjectURL != "" {
		vc.JWKSURL = strings.TrimRight(cfg.ProjectURL, "/") + "/auth/v1/.well-known/jwks.json"
	}
	vc.Issuer, vc.Audience = cfg.CheckedIssuer(), cfg.CheckedAudience()
	vc.HTTPClient = observedClient(cfg.Telemetry, vc.HTTPClient, "jwks", 10*time.Second)
	if err := vc.validate(); err != nil {
		return nil, err
	}
	rv := &Resolver{
		memo:      newMemo(cfg.MemoSize, cfg.MemoBytes),
		resolvers: cfg.Resolvers,
		secret:    cfg.Secret,
		claims:    cfg.Claims,
		profile:   cfg.UserMetadata,
		cop:       cop,
		leeway:    cfg.Leeway,
		tel:       cfg.Telemetry,
	}
	rv.cookieName = cfg.CookieName
	if rv.cookieName == "" && cfg.ProjectURL != "" {
		rv.cookieName, _ = CookieNameFor(cfg.ProjectURL) // validated
	}
	if cfg.Secret {
		rv.hmacKey = make([]byte, 32)
		_, _ = rand.Read(rv.hmacKey)
		names := make([]string, 0, len(cfg.SecretKeys))
		for n := range cfg.SecretKeys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			rv.secretKeys = append(rv.secretKeys, secretKey{name: n, mac: rv.mac(cfg.SecretKeys[n])})
		}
	}
	if len(cfg.PublishableKeys) > 0 {
		rv.publishable = make(map[string]struct{}, len(cfg.PublishableKeys))
		for _, k := range cfg.PublishableKeys {
			if k != "" {
				rv.publishable[k] = struct{}{}
			}
		}
	}
	if rv.leeway == 0 {
		rv.leeway = DefaultLeeway
	}
	// The verifier is the only part with background work: built last.
	v, err := NewVerifier(ctx, &vc)
	if err != nil {
		return nil, err
	}
	rv.verifier, rv.skew, rv.now = v, v.skew, v.now
	if cfg.Refresh {
		rv.setupRefresh(cfg)
	}
	if rv.memo != nil { // once New can no longer fail: Close takes it off
		rv.stopMemoGauge = rv.tel.ObserveMemoSize(func() int64 { return int64(rv.memo.len()) })
	}
	return rv, nil
}

// validate checks everything [New] can check before any network call or
// background work. Trusted origins are added to cop.
func (cfg *Config) validate(cop *http.CrossOriginProtection) error {
	for i, r := range cfg.Resolvers {
		if r == nil {
			return fmt.Errorf("authctx: Config.Resolvers[%d] is nil", i)
		}
	}
	cookieName := cfg.CookieName
	if cookieName == "" && cfg.ProjectURL != "" {
		name, err := CookieNameFor(cfg.ProjectURL)
		if err != nil {
			return fmt.Errorf("authctx: Config.ProjectURL: %w", err)
		}
		cookieName = name
	}
	if cfg.Secret {
		if len(cfg.SecretKeys) == 0 {
			return errors.New("authctx: Config.Secret is on but Config.SecretKeys is empty (set SUPABASE_SECRET_KEYS)")
		}
		names := make([]string, 0, len(cfg.SecretKeys))
		for n := range cfg.SecretKeys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if cfg.SecretKeys[n] == "" {
				return fmt.Errorf("authctx: secret key %q is empty", n)
			}
		}
	}
	if err := checkCookieOptions(cfg.CookieOptions); err != nil {
		return fmt.Errorf("authctx: Config.CookieOptions: %w", err)
	}
	for _, o := range cfg.TrustedOrigins {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return fmt.Errorf("authctx: Config.TrustedOrigins: %w", err)
		}
	}
	if cfg.Refresh {
		if cfg.ProjectURL == "" {
			return errors.New("authctx: Config.Refresh needs Config.ProjectURL (the auth server's base URL)")
		}
		if cookieName == "" {
			return errors.New("authctx: Config.Refresh needs a session cookie name")
		}
		if refreshAPIKey(cfg) == "" {
			return errors.New("authctx: Config.Refresh needs a publishable key in Config.PublishableKeys (SUPABASE_PUBLISHABLE_KEY or SUPABASE_ANON_KEY): the auth server's gateway requires it as the apikey header")
		}
	}
	return nil
}

// checkCookieOptions refuses cookie options that would make the written
// Set-Cookie lines malformed or ignored by browsers.
func checkCookieOptions(o ssrcookie.Options) error {
	if o.Path != "" && o.Path[0] != '/' {
		return fmt.Errorf("cookie path %q must start with '/'", o.Path)
	}
	if o.SameSite < 0 || o.SameSite > http.SameSiteNoneMode {
		return fmt.Errorf("unknown SameSite value %d", o.SameSite)
	}
	if o.SameSite == http.SameSiteNoneMode && !o.Secure {
		return errors.New("SameSite None requires Secure (browsers drop the cookie otherwise)")
	}
	c := &http.Cookie{Name: "x", Domain: o.Domain, Path: o.Path}
	if err := c.Valid(); err != nil {
		return fmt.Errorf("domain %q or path %q: %w", o.Domain, o.Path, err)
	}
	return nil
}

// Close stops the background JWKS refresh and takes the resolver's memo
// off the telemetry's memo size gauge.
func (rv *Resolver) Close() {
	rv.verifier.Close()
	if rv.stopMemoGauge != nil {
		rv.stopMemoGauge()
	}
}

// Ready reports whether the resolver can verify tokens: nil once its
// signing keys are loaded, else [ErrKeysNotLoaded] (the JWKS has not
// answered since start; it is retried in the background). Use it in
// readiness probes. Safe for concurrent use.
func (rv *Resolver) Ready() error { return rv.verifier.Ready() }

// Verifier returns the token verifier the resolver uses.
func (rv *Resolver) Verifier() *Verifier { return rv.verifier }

// CookieName returns the session cookie name, "" when the cookie path is off.
func (rv *Resolver) CookieName() string { return rv.cookieName }

func (rv *Resolver) mac(s string) []byte {
	h := hmac.New(sha256.New, rv.hmacKey)
	h.Write([]byte(s))
	return h.Sum(nil)
}
