package authctx

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"

	"github.com/tablegate/tablegate/problem"
)

// Defaults of the verifier.
const (
	// DefaultClockSkew is the leeway granted on exp, nbf and iat.
	DefaultClockSkew = 30 * time.Second
	// DefaultMaxTokenBytes caps the size of an access token. Supabase
	// tokens carry user_metadata, so they can reach several KiB.
	DefaultMaxTokenBytes = 16 << 10
	// DefaultUnknownKIDRefreshEvery bounds how often a token with an
	// unknown kid may trigger a JWKS re-fetch.
	DefaultUnknownKIDRefreshEvery = time.Minute
	// DefaultJWKSRefreshInterval is how often the JWKS is re-fetched in the
	// background (Supabase serves it with max-age=600).
	DefaultJWKSRefreshInterval = 10 * time.Minute
	// MaxActorDepth bounds the nesting of RFC 8693 act claims.
	MaxActorDepth = 8
	// MaxClockSkew is the largest ClockSkew a verifier accepts.
	MaxClockSkew = 5 * time.Minute
	// MaxTokenBytesLimit is the largest MaxTokenBytes a verifier accepts.
	MaxTokenBytesLimit = 1 << 20
)

// LegacySecretHelp says why a legacy HS256 JWT secret (SUPABASE_JWT_SECRET)
// is not enough and how to move on. [ErrLegacySecret], [LoadEnv] and the
// tablegate CLI use it.
const LegacySecretHelp = "legacy HS256 JWT secrets are not accepted: tablegate verifies tokens locally " +
	"against the project's public signing keys (ES256, RS256 or EdDSA), and a shared secret publishes none. " +
	"Move the project to JWT signing keys (Supabase dashboard: Project Settings > JWT Keys; locally: " +
	"`supabase gen signing-key` and [auth] signing_keys_path in supabase/config.toml; see " + SigningKeysDocs + ")"

// Verification errors. A [*Verifier] wraps one of them in every error it
// returns, so callers can branch with [errors.Is].
var (
	// ErrTokenMalformed: the token is not a compact JWS this verifier
	// accepts (size, segments, base64, header JSON, alg).
	ErrTokenMalformed = errors.New("authctx: malformed token")
	// ErrTokenUnverifiable: no trusted key verifies the signature.
	ErrTokenUnverifiable = errors.New("authctx: token signature did not verify")
	// ErrTokenExpired: the signature verified but exp has passed (beyond
	// the clock skew). The cookie path turns this into anon/expired.
	ErrTokenExpired = errors.New("authctx: token expired")
	// ErrTokenClaims: the signature verified but a registered claim is
	// missing or wrong (exp absent or not a number, nbf in the future,
	// iss or aud mismatch, sub not a string).
	ErrTokenClaims = errors.New("authctx: token claims rejected")
	// ErrActorInvalid: the act (RFC 8693 actor) chain is malformed or too deep.
	ErrActorInvalid = errors.New("authctx: malformed act chain")
	// ErrLegacySecret is returned by [New] and [NewVerifier] when the only
	// key material is a legacy HS256 shared secret.
	ErrLegacySecret = errors.New("authctx: only a legacy HS256 JWT secret is configured: " + LegacySecretHelp +
		"; then set SUPABASE_URL (JWKS at /auth/v1/.well-known/jwks.json) or SUPABASE_JWKS")
	// ErrNoKeys is returned by [NewVerifier] when neither a JWKS URL nor an
	// inline JWKS is configured.
	ErrNoKeys = errors.New("authctx: no JWKS configured: set ProjectURL, JWKSURL or JWKS (SUPABASE_URL or SUPABASE_JWKS)")
)

// VerifierConfig configures a [Verifier].
type VerifierConfig struct {
	// JWKSURL is fetched once at construction, re-fetched in the background
	// every RefreshInterval and on an unknown kid (rate-bounded).
	JWKSURL string
	// JWKS is an inline JWK Set ({"keys":[…]} or a bare array). When both
	// are set, the inline keys are tried first.
	JWKS json.RawMessage
	// Issuer, when set, must equal the iss claim.
	Issuer string
	// Audience, when set, must be one of the aud claim's values.
	Audience string
	// ClockSkew is the leeway on exp/nbf/iat; zero means DefaultClockSkew,
	// negative means none. A token whose iat lies further in the future
	// than the skew is refused.
	ClockSkew time.Duration
	// MaxTokenLifetime, when positive, refuses tokens that live longer:
	// exp - iat beyond it, or (whether or not iat is present) exp further
	// than MaxTokenLifetime + ClockSkew from now. Zero means no limit.
	// Supabase issues tokens for at most a week (JWT expiry limit).
	MaxTokenLifetime time.Duration
	// MaxTokenBytes caps the token size; zero means DefaultMaxTokenBytes.
	MaxTokenBytes int
	// HTTPClient fetches the JWKS; nil means a client with a 10 s timeout.
	HTTPClient *http.Client
	// RefreshInterval is the background JWKS refresh period; zero means
	// DefaultJWKSRefreshInterval, negative disables background refresh.
	RefreshInterval time.Duration
	// UnknownKIDRefreshEvery bounds re-fetches caused by unknown kids; zero
	// means DefaultUnknownKIDRefreshEvery. A request never waits for the
	// limiter: when no refresh is allowed, the token simply fails.
	UnknownKIDRefreshEvery time.Duration
	// JWKSRetryMin and JWKSRetryMax bound the background retries after a
	// failed JWKS fetch (at start, on an unknown kid, or on the periodic
	// refresh): the first retry waits JWKSRetryMin, each further failure
	// doubles the wait up to JWKSRetryMax, until a fetch succeeds. So keys
	// load within about JWKSRetryMax after the JWKS answers again, and no
	// request waits for it. Zero means [DefaultJWKSRetryMin] and
	// [DefaultJWKSRetryMax].
	JWKSRetryMin, JWKSRetryMax time.Duration
	// LegacyJWTSecret is only looked at to explain a misconfiguration: set
	// alone, construction fails with [ErrLegacySecret].
	LegacyJWTSecret string
	// Logger receives JWKS refresh failures; nil means slog.Default().
	Logger *slog.Logger
	// Now replaces time.Now (tests).
	Now func() time.Time
}

// Verified is the result of a successful verification.
type Verified struct {
	// Claims are the token's decoded claims.
	Claims Claims
	// Payload is the token's decoded payload JSON (the JSON of Claims).
	Payload json.RawMessage
	// ExpiresAt is the exp claim.
	ExpiresAt time.Time
}

// Verifier verifies Supabase-style access tokens locally against a JWKS.
// Only ES256 (P-256), RS256 (RSA ≥ 2048 bits) and EdDSA (Ed25519) are
// accepted; none, HS*
// and any mismatch between the header alg and the key are refused; exp is
// required. A Verifier is safe for concurrent use; call Close to stop the
// background JWKS refresh.
type Verifier struct {
	kf       keyfunc.Keyfunc
	fetcher  *jwksFetcher // nil without a JWKS URL
	inline   bool         // inline keys are configured (they verify before any fetch)
	parser   *jwt.Parser
	maxBytes int
	skew     time.Duration
	maxLife  time.Duration
	issuer   string // expected iss ("" = any), for refusal details
	audience string // expected aud ("" = any), for refusal details
	now      func() time.Time
	cancel   context.CancelFunc
	closeOne sync.Once
}

// validate checks the configuration before anything is fetched.
func (cfg *VerifierConfig) validate() error {
	if cfg.JWKSURL == "" && len(cfg.JWKS) == 0 {
		if cfg.LegacyJWTSecret != "" {
			return ErrLegacySecret
		}
		return ErrNoKeys
	}
	if cfg.ClockSkew > MaxClockSkew {
		return fmt.Errorf("authctx: ClockSkew %v is larger than %v", cfg.ClockSkew, MaxClockSkew)
	}
	if cfg.MaxTokenBytes > MaxTokenBytesLimit {
		return fmt.Errorf("authctx: MaxTokenBytes %d is larger than %d", cfg.MaxTokenBytes, MaxTokenBytesLimit)
	}
	if cfg.MaxTokenLifetime < 0 {
		return fmt.Errorf("authctx: MaxTokenLifetime %v is negative", cfg.MaxTokenLifetime)
	}
	return nil
}

// NewVerifier builds a verifier. With a JWKSURL it fetches the key set once
// before returning, within ctx (a cancelled ctx fails construction); a
// fetch failure is logged, not returned, and the keys are fetched again in
// the background with backoff until they load (see
// VerifierConfig.JWKSRetryMax and [Verifier.Ready]). ctx does not bound
// the background work, which runs until Close. It fails with
// [ErrLegacySecret] when the only key material is an HS256 secret (or the
// key set has no ES256/RS256/EdDSA key), and with [ErrNoKeys] when nothing
// is configured (a nil cfg).
func NewVerifier(ctx context.Context, cfg *VerifierConfig) (*Verifier, error) {
	if cfg == nil {
		cfg = &VerifierConfig{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	v := &Verifier{maxBytes: cfg.MaxTokenBytes, skew: cfg.ClockSkew, maxLife: cfg.MaxTokenLifetime, now: cfg.Now}
	if v.maxBytes <= 0 {
		v.maxBytes = DefaultMaxTokenBytes
	}
	if v.skew == 0 {
		v.skew = DefaultClockSkew
	} else if v.skew < 0 {
		v.skew = 0
	}
	if v.now == nil {
		v.now = time.Now
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}

	var given jwkset.Storage
	if len(cfg.JWKS) > 0 {
		st, err := inlineStorage(cfg.JWKS)
		if err != nil {
			return nil, err
		}
		given = st
	}

	// life bounds the background work (until Close); ctx bounds only the
	// first fetch.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	v.cancel = cancel
	if cfg.JWKSURL == "" {
		kf, err := keyfunc.New(keyfunc.Options{Ctx: life, Storage: given})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("authctx: jwks: %w", err)
		}
		v.kf = kf
	} else {
		client := cfg.HTTPClient
		if client == nil {
			client = &http.Client{Timeout: 10 * time.Second}
		}
		every := cfg.UnknownKIDRefreshEvery
		if every <= 0 {
			every = DefaultUnknownKIDRefreshEvery
		}
		interval := cfg.RefreshInterval
		if interval == 0 {
			interval = DefaultJWKSRefreshInterval
		} else if interval < 0 {
			interval = 100 * 365 * 24 * time.Hour
		}
		f := &jwksFetcher{
			url: cfg.JWKSURL, shown: redactURL(cfg.JWKSURL), client: client, timeout: 5 * time.Second,
			store: jwkset.NewMemoryStorage(), log: logger,
			unknown:  rate.NewLimiter(rate.Every(every), 1),
			interval: interval, every: every, retryMin: cfg.JWKSRetryMin, retryMax: cfg.JWKSRetryMax,
			kick: make(chan struct{}, 1),
		}
		if f.retryMin <= 0 {
			f.retryMin = DefaultJWKSRetryMin
		}
		if f.retryMax <= 0 {
			f.retryMax = DefaultJWKSRetryMax
		}
		f.retryMax = max(f.retryMax, f.retryMin)
		// The first unknown kid after start may fetch at once.
		firstErr := f.fetch(ctx)
		if ctx.Err() != nil {
			cancel()
			return nil, fmt.Errorf("authctx: jwks %s: %w", cfg.JWKSURL, context.Cause(ctx))
		}
		if errors.Is(firstErr, errEmptyJWKS) && len(cfg.JWKS) == 0 {
			cancel()
			return nil, fmt.Errorf("%w (the JWKS at %s lists no ES256/RS256/EdDSA key)", ErrLegacySecret, cfg.JWKSURL)
		}
		if firstErr != nil {
			logger.WarnContext(ctx, "authctx: JWKS fetch failed; retrying in the background", "url", f.shown, "error", firstErr)
		} else if keys, err := f.store.KeyReadAll(ctx); err == nil && !hasAsymmetric(keys) && len(cfg.JWKS) == 0 {
			cancel()
			return nil, fmt.Errorf("%w (the JWKS at %s lists no ES256/RS256/EdDSA key)", ErrLegacySecret, cfg.JWKSURL)
		}
		if given == nil {
			given = jwkset.NewMemoryStorage()
		}
		st, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{Given: given,
			HTTPURLs: map[string]jwkset.Storage{cfg.JWKSURL: f.store}})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("authctx: jwks %s: %w", cfg.JWKSURL, err)
		}
		kf, err := keyfunc.New(keyfunc.Options{Ctx: life, Storage: st})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("authctx: jwks %s: %w", cfg.JWKSURL, err)
		}
		v.kf, v.fetcher, v.inline = kf, f, len(cfg.JWKS) > 0
		go f.run(life, firstErr != nil)
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods([]string{"ES256", "RS256", "EdDSA"}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(v.skew),
		jwt.WithTimeFunc(v.now),
	}
	v.issuer, v.audience = cfg.Issuer, cfg.Audience
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	if cfg.Audience != "" {
		opts = append(opts, jwt.WithAudience(cfg.Audience))
	}
	v.parser = jwt.NewParser(opts...)
	return v, nil
}

// inlineStorage parses an inline JWKS ({"keys":[…]} or a bare array) into
// a memory storage holding only its asymmetric keys.
func inlineStorage(raw json.RawMessage) (jwkset.Storage, error) {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	if len(raw) > 0 && raw[0] == '[' {
		raw = json.RawMessage(`{"keys":` + string(raw) + `}`)
	}
	var set jwkset.JWKSMarshal
	if err := json.Unmarshal(raw, &set); err != nil {
		return nil, fmt.Errorf("authctx: inline JWKS is not a JWK Set: %w", err)
	}
	st := jwkset.NewMemoryStorage()
	n := 0
	for i, m := range set.Keys {
		if m.KTY != jwkset.KtyEC && m.KTY != jwkset.KtyRSA && (m.KTY != jwkset.KtyOKP || m.CRV != jwkset.CrvEd25519) {
			continue // oct (HS256), X25519 and others are never trusted
		}
		jwk, err := jwkset.NewJWKFromMarshal(m, jwkset.JWKMarshalOptions{Private: true}, jwkset.JWKValidateOptions{})
		if err != nil {
			return nil, fmt.Errorf("authctx: inline JWKS key %d: %w", i, err)
		}
		if err := st.KeyWrite(context.Background(), jwk); err != nil {
			return nil, fmt.Errorf("authctx: inline JWKS key %d: %w", i, err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w (the inline JWKS lists no ES256/RS256/EdDSA key)", ErrLegacySecret)
	}
	return st, nil
}

func hasAsymmetric(keys []jwkset.JWK) bool {
	for _, k := range keys {
		switch k.Key().(type) {
		case *ecdsa.PublicKey, *ecdsa.PrivateKey, *rsa.PublicKey, *rsa.PrivateKey, ed25519.PublicKey, ed25519.PrivateKey:
			return true
		}
	}
	return false
}

// Close stops the background JWKS refresh. It is safe to call twice.
func (v *Verifier) Close() {
	v.closeOne.Do(v.cancel)
}

// Ready reports whether the verifier holds keys to verify with: nil for
// inline keys, or once a fetch of the JWKS URL has succeeded; else
// [ErrKeysNotLoaded]. Readiness probes should include it: until the keys
// load, every token fails verification. Safe for concurrent use.
func (v *Verifier) Ready() error {
	if !v.keysLoaded() {
		return ErrKeysNotLoaded
	}
	return nil
}

// keysLoaded reports whether any key can verify: inline keys, or a
// successful fetch of the JWKS URL.
func (v *Verifier) keysLoaded() bool {
	return v.fetcher == nil || v.inline || v.fetcher.loaded.Load()
}

// MaxTokenBytes returns the token size cap in force.
func (v *Verifier) MaxTokenBytes() int { return v.maxBytes }

// Verify checks a compact JWS and returns its claims. It makes no network
// call for a token whose kid is known; an unknown kid may trigger one
// rate-bounded JWKS re-fetch. Errors wrap one of the ErrToken* sentinels
// or [ErrActorInvalid] and never contain the token.
func (v *Verifier) Verify(ctx context.Context, token string) (*Verified, error) {
	// The shape check is cheap; the header itself is decoded once, by
	// golang-jwt, and checked in the key function (same rules as preParse).
	// The cause of a refusal is worked out only on the refusal path.
	if err := preShape(token, v.maxBytes); err != nil {
		return nil, malformed(err)
	}
	var hdrErr, keyErr error
	var hdr jwsHeader
	keyCalled := false
	claims := jwt.MapClaims{}
	_, err := v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		keyCalled = true
		var err error
		if hdr, err = headerOf(t.Header); err != nil {
			hdrErr = err
			return nil, err
		}
		k, err := v.key(ctx, t, hdr)
		keyErr = err
		return k, err
	})
	if hdrErr != nil {
		if errors.Is(hdrErr, errAlgRefused) {
			return nil, algRefused(hdr.Alg)
		}
		return nil, malformed(hdrErr)
	}
	if err != nil {
		switch {
		case !keyCalled && errors.Is(err, jwt.ErrTokenSignatureInvalid):
			// golang-jwt refused the alg before any key work (none, HS*, …).
			return nil, algRefused(algOf(token))
		case errors.Is(err, jwt.ErrTokenMalformed):
			return nil, malformed(fmt.Errorf("%w: %s", ErrTokenMalformed, "header or payload is not a JSON object"))
		case keyErr != nil:
			return nil, v.keyRefusal(ctx, keyErr, hdr)
		case errors.Is(err, jwt.ErrTokenSignatureInvalid):
			return nil, v.signatureRefusal(ctx, hdr)
		case errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenInvalidClaims),
			errors.Is(err, jwt.ErrTokenRequiredClaimMissing),
			errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenInvalidIssuer),
			errors.Is(err, jwt.ErrTokenInvalidAudience), errors.Is(err, jwt.ErrTokenUsedBeforeIssued),
			errors.Is(err, jwt.ErrInvalidType):
			return nil, v.claimRefusal(err, claims)
		}
		return nil, tokenError(problem.CodeTokenInvalid, ErrTokenUnverifiable, "",
			"The token did not verify against "+v.keySource(ctx)+".")
	}
	if err := v.checkTimes(claims); err != nil {
		return nil, err
	}
	if s, ok := claims["sub"]; ok {
		if _, isStr := s.(string); !isStr {
			return nil, claimsInvalid("sub is not a string")
		}
	}
	if r, ok := claims["role"]; ok {
		if _, isStr := r.(string); !isStr {
			return nil, claimsInvalid("role is not a string")
		}
	}
	if a, ok := claims["is_anonymous"]; ok {
		if _, isBool := a.(bool); !isBool {
			return nil, claimsInvalid("is_anonymous is not a boolean")
		}
	}
	if act, ok := claims["act"]; ok {
		if err := checkActor(act); err != nil {
			return nil, err
		}
	}
	exp, _ := claims.GetExpirationTime()
	payload := token[strings.IndexByte(token, '.')+1 : strings.LastIndexByte(token, '.')]
	raw, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil { // cannot happen: the parser decoded it already
		return nil, ErrTokenMalformed
	}
	return &Verified{Claims: Claims(claims), Payload: raw, ExpiresAt: exp.Time}, nil
}

// maxNumericDate is the largest exp, nbf or iat accepted: the last second
// of the year 9999. Larger values (1e300, …) overflow time arithmetic and
// would read as dates in the distant past.
const maxNumericDate = 253402300799

// checkTimes refuses time claims that are not plain numbers in range
// (the parser converts 1e300 into a date in the past) and, with
// MaxTokenLifetime, tokens that live too long. Runs after the parser's
// own exp/nbf/iat checks.
func (v *Verifier) checkTimes(claims jwt.MapClaims) error {
	var at [3]float64
	var has [3]bool
	for i, name := range [...]string{"exp", "nbf", "iat"} {
		raw, ok := claims[name]
		if !ok {
			continue
		}
		var f float64
		switch x := raw.(type) {
		case float64:
			f = x
		case json.Number:
			var err error
			if f, err = x.Float64(); err != nil {
				return claimsInvalid(name + " is not a number")
			}
		default:
			return claimsInvalid(name + " is not a number")
		}
		if f != f || f < 0 || f > maxNumericDate { // NaN, negative, beyond year 9999
			return claimsInvalid(name + " is out of range")
		}
		at[i], has[i] = f, true
	}
	if v.maxLife <= 0 {
		return nil
	}
	exp := at[0]
	life := v.maxLife.Seconds()
	now := float64(v.now().UnixNano()) / 1e9
	if exp-now > life+v.skew.Seconds() {
		return claimsInvalid("exp is further away than the maximum token lifetime (" + v.maxLife.String() + ")")
	}
	if has[2] && exp-at[2] > life {
		return claimsInvalid("the token lives longer than the maximum token lifetime (" + v.maxLife.String() + ")")
	}
	return nil
}

// claimsReason names the failing registered claim without values.
func claimsReason(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "exp is required"
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return "nbf is in the future"
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		return "iat is in the future"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "iss does not match"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "aud does not match"
	}
	return "a registered claim has the wrong type"
}

// key resolves the verification key for t and refuses any alg/key mismatch.
func (v *Verifier) key(ctx context.Context, t *jwt.Token, hdr jwsHeader) (any, error) {
	k, err := v.kf.KeyfuncCtx(ctx)(t)
	if err != nil && v.fetcher != nil && hdr.Kid != "" && errors.Is(err, jwkset.ErrKeyNotFound) {
		// An unknown kid: the keys may have rotated. Re-fetch when the
		// limiter allows (a failure starts the background retries).
		if v.fetcher.unknownKID(ctx) {
			k, err = v.kf.KeyfuncCtx(ctx)(t)
		}
	}
	if err != nil {
		if !v.keysLoaded() {
			return nil, ErrKeysNotLoaded
		}
		if errors.Is(err, jwkset.ErrKeyNotFound) {
			return nil, fmt.Errorf("%w: %w", errUnknownKID, err)
		}
		// The kid's JWK refuses the token's alg (its alg or use).
		return nil, fmt.Errorf("%w: %w", errAlgKeyMismatch, err)
	}
	if set, ok := k.(jwt.VerificationKeySet); ok { // no kid: keys matching the alg only
		var out jwt.VerificationKeySet
		for _, key := range set.Keys {
			if keyFits(hdr.Alg, key) {
				out.Keys = append(out.Keys, key)
			}
		}
		if len(out.Keys) == 0 {
			return nil, errNoKeyForAlg
		}
		return out, nil
	}
	if !keyFits(hdr.Alg, k) {
		return nil, errAlgKeyMismatch
	}
	return k, nil
}

// Errors of the key function, refined by [Verifier.keyRefusal].
var (
	errUnknownKID     = errors.New("unknown kid")
	errNoKeyForAlg    = errors.New("no key for alg")
	errAlgKeyMismatch = errors.New("alg does not match the key")
	// errAlgRefused: the header's alg is not one this verifier accepts.
	errAlgRefused = errors.New("alg is not accepted (ES256, RS256 or EdDSA only)")
)

func keyFits(alg string, key any) bool {
	switch alg {
	case "ES256":
		k, ok := key.(*ecdsa.PublicKey)
		return ok && k.Curve == elliptic.P256()
	case "RS256":
		k, ok := key.(*rsa.PublicKey)
		return ok && k.N.BitLen() >= 2048
	case "EdDSA":
		// Ed25519 only: jwkset gives X25519 (an OKP key agreement curve)
		// as *ecdh.PublicKey, and Ed448 is not supported at all.
		k, ok := key.(ed25519.PublicKey)
		return ok && len(k) == ed25519.PublicKeySize
	}
	return false
}

// jwsHeader is the part of a JWS header that [preParse] checks.
type jwsHeader struct {
	Alg string
	Kid string
	Typ string
}

// preParse checks the shape of a compact JWS cheaply, before any key
// lookup or signature work: size at most maxBytes, exactly three
// non-empty base64url segments without padding, a header that is a JSON
// object with alg ES256, RS256 or EdDSA, an optional string kid, typ JWT when
// present, and no crit (extensions this verifier does not understand,
// RFC 7515 §4.1.11). Errors wrap [ErrTokenMalformed] and never contain
// the token. It never panics, whatever the input (fuzzed).
func preParse(token string, maxBytes int) (jwsHeader, error) {
	var h jwsHeader
	if err := preShape(token, maxBytes); err != nil {
		return h, err
	}
	hb := token[:strings.IndexByte(token, '.')]
	if len(hb) > 1024 {
		return h, fmt.Errorf("%w: header too large", ErrTokenMalformed)
	}
	var buf [768]byte
	n, err := base64.RawURLEncoding.Decode(buf[:], []byte(hb))
	if err != nil {
		return h, fmt.Errorf("%w: header is not base64url", ErrTokenMalformed)
	}
	dec := buf[:n]
	if len(dec) == 0 || dec[0] != '{' {
		return h, fmt.Errorf("%w: header is not a JSON object", ErrTokenMalformed)
	}
	var m map[string]any
	if err := json.Unmarshal(dec, &m); err != nil {
		return h, fmt.Errorf("%w: header is not a JSON object", ErrTokenMalformed)
	}
	return headerOf(m)
}

// preShape checks size, charset and segments of a compact JWS.
func preShape(token string, maxBytes int) error {
	if len(token) == 0 {
		return fmt.Errorf("%w: empty", ErrTokenMalformed)
	}
	if maxBytes > 0 && len(token) > maxBytes {
		return fmt.Errorf("%w: larger than %d bytes", ErrTokenMalformed, maxBytes)
	}
	dots := 0
	first, second := -1, -1
	for i := 0; i < len(token); i++ {
		c := token[i]
		switch {
		case c == '.':
			dots++
			if dots == 1 {
				first = i
			} else if dots == 2 {
				second = i
			}
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("%w: not base64url", ErrTokenMalformed)
		}
	}
	if dots != 2 {
		return fmt.Errorf("%w: not three segments", ErrTokenMalformed)
	}
	if first == 0 || second == first+1 || second == len(token)-1 {
		return fmt.Errorf("%w: empty segment", ErrTokenMalformed)
	}
	return nil
}

// headerOf applies the header rules of [preParse] to a decoded header.
func headerOf(m map[string]any) (jwsHeader, error) {
	var h jwsHeader
	var ok bool
	if v, present := m["alg"]; present {
		if h.Alg, ok = v.(string); !ok {
			return h, fmt.Errorf("%w: alg is not a string", ErrTokenMalformed)
		}
	}
	if v, present := m["kid"]; present {
		if h.Kid, ok = v.(string); !ok {
			return h, fmt.Errorf("%w: kid is not a string", ErrTokenMalformed)
		}
	}
	if v, present := m["typ"]; present {
		if h.Typ, ok = v.(string); !ok {
			return h, fmt.Errorf("%w: typ is not a string", ErrTokenMalformed)
		}
	}
	switch h.Alg {
	case "ES256", "RS256", "EdDSA":
	case "":
		return h, fmt.Errorf("%w: header has no alg", ErrTokenMalformed)
	default:
		return h, fmt.Errorf("%w: alg %q %w", ErrTokenMalformed, truncate(h.Alg, 16), errAlgRefused)
	}
	if h.Typ != "" && !strings.EqualFold(h.Typ, "JWT") && !strings.EqualFold(h.Typ, "at+jwt") {
		return h, fmt.Errorf("%w: typ is not JWT", ErrTokenMalformed)
	}
	if c, present := m["crit"]; present && c != nil {
		return h, fmt.Errorf("%w: crit extensions are not supported", ErrTokenMalformed)
	}
	return h, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// checkActor validates an RFC 8693 act chain: each level is a JSON object
// with a non-empty string sub, nested at most MaxActorDepth deep.
func checkActor(act any) error {
	for depth := 1; ; depth++ {
		if depth > MaxActorDepth {
			return fmt.Errorf("%w: nested deeper than %d", ErrActorInvalid, MaxActorDepth)
		}
		m, ok := act.(map[string]any)
		if !ok {
			return fmt.Errorf("%w: act at depth %d is not an object", ErrActorInvalid, depth)
		}
		if sub, ok := m["sub"].(string); !ok || sub == "" {
			return fmt.Errorf("%w: act at depth %d has no string sub", ErrActorInvalid, depth)
		}
		next, ok := m["act"]
		if !ok {
			return nil
		}
		act = next
	}
}
