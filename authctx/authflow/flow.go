package authflow

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/internal/gotrue"
	"github.com/tablegate/tablegate/authctx/internal/ssrsession"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/problem"
)

// Defaults of [Config].
const (
	// DefaultTimeout bounds every call to the auth server.
	DefaultTimeout = 10 * time.Second
	// DefaultBasePath is where [Flows.Handler] serves its routes.
	DefaultBasePath = "/auth"
)

// Config configures [New]. ProjectURL, PublishableKey and SiteURL are
// required.
type Config struct {
	// ProjectURL is the Supabase project URL (SUPABASE_URL); the auth
	// server is {ProjectURL}/auth/v1.
	ProjectURL string
	// PublishableKey is the publishable (or legacy anon) key, sent as the
	// apikey header like auth-js.
	PublishableKey string
	// CookieName is the session cookie name (default from ProjectURL,
	// sb-<first host label>-auth-token, as authctx derives it). The PKCE
	// verifier cookies are named after it.
	CookieName string
	// CookieOptions are the session cookie attributes, as in
	// authctx.Config (zero value: the @supabase/ssr defaults).
	CookieOptions ssrcookie.Options
	// TokensOnly writes sessions with @supabase/ssr's cookies.encode
	// "tokens-only" (no user object in the cookie). Reading accepts both.
	TokensOnly bool
	// SiteURL is the origin (and optional base path) of this application,
	// e.g. https://app.example.com. OAuth and magic-link redirects come
	// back to SiteURL + BasePath + "/callback", and absolute next URLs
	// under it are allowed.
	SiteURL string
	// BasePath is where [Flows.Handler] routes live (default "/auth").
	BasePath string
	// RedirectURLs are further absolute URLs (or URL prefixes) a next or
	// redirect_to parameter may point to.
	RedirectURLs []string
	// TrustedOrigins may send cross-site posts (like authctx.Config).
	TrustedOrigins []string
	// Timeout bounds each auth server call (default DefaultTimeout).
	Timeout time.Duration
	// HTTPClient sends auth server calls (default http.DefaultClient; the
	// Timeout applies through the request context either way).
	HTTPClient *http.Client
	// Sessions, when set, is the resolver that refreshes the same cookie
	// sessions: a sign-out then makes it forget the session's recent
	// refreshes ([authctx.Resolver.ForgetSession]), so that a request
	// still carrying the session's previous cookies is not signed back in.
	Sessions *authctx.Resolver
	// AttemptsPerAccount bounds the sign-in attempts (password sign-ins,
	// codes and links sent, codes verified) for one email address or
	// phone number in each AttemptWindow, whether an account has it or
	// not; past it, every attempt for that address — the right password
	// too — answers 429 AUTH_RATE_LIMITED with Retry-After until the
	// window ends. A sign-in that succeeds does not count. Zero means
	// DefaultAttemptsPerAccount; -1 means no limit.
	AttemptsPerAccount int
	// AttemptsPerAddress bounds the attempts from one client address
	// (IPv6: one /64) the same way. Zero means DefaultAttemptsPerAddress;
	// -1 means no limit.
	AttemptsPerAddress int
	// AttemptWindow is the window of both limits, opened by a key's first
	// attempt (default DefaultAttemptWindow).
	AttemptWindow time.Duration
	// TrustedProxyHeader names the header that a proxy in front of this
	// server sets to the client's address (X-Forwarded-For, X-Real-IP,
	// Fly-Client-IP, …): the limit per address then keys on its last
	// address. Unset (the default), the connection's address is used and
	// no header is read — set it only when every request passes through
	// that proxy, or a client could name any address it likes.
	TrustedProxyHeader string
	// Now replaces time.Now (tests).
	Now func() time.Time
}

func (c *Config) validate() error {
	if c.ProjectURL == "" {
		return errors.New("authflow: Config.ProjectURL is required (the Supabase project URL)")
	}
	if u, err := url.Parse(c.ProjectURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("authflow: Config.ProjectURL is not an http(s) URL")
	}
	if c.PublishableKey == "" {
		return errors.New("authflow: Config.PublishableKey is required: the auth server's gateway needs it as the apikey header")
	}
	if c.SiteURL == "" {
		return errors.New("authflow: Config.SiteURL is required (this application's origin, where the callback lives)")
	}
	if u, err := url.Parse(c.SiteURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || hasDotSegment(u.Path) {
		return errors.New("authflow: Config.SiteURL is not an http(s) origin with an optional path")
	}
	for _, r := range c.RedirectURLs {
		// SafeRedirect follows http(s) targets only: another scheme here
		// would allow nothing while looking as if it did.
		if u, err := url.Parse(r); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
			u.User != nil || hasDotSegment(u.Path) {
			return fmt.Errorf("authflow: Config.RedirectURLs: %q is not an absolute http(s) URL", r)
		}
	}
	if c.BasePath != "" && !isBasePath(c.BasePath) {
		return fmt.Errorf("authflow: Config.BasePath %q must be a clean path such as /auth: starting with '/', not ending with one, of letters, digits and -._~ between the slashes", c.BasePath)
	}
	if c.Timeout < 0 {
		return errors.New("authflow: Config.Timeout is negative")
	}
	if c.AttemptsPerAccount < -1 || c.AttemptsPerAddress < -1 {
		return errors.New("authflow: Config.AttemptsPerAccount and AttemptsPerAddress must be 0 (default), -1 (no limit) or a positive count")
	}
	if c.AttemptWindow < 0 {
		return errors.New("authflow: Config.AttemptWindow is negative")
	}
	if c.TrustedProxyHeader != "" && !validHeaderName(c.TrustedProxyHeader) {
		return fmt.Errorf("authflow: Config.TrustedProxyHeader %q is not a header name (e.g. X-Forwarded-For)", c.TrustedProxyHeader)
	}
	return nil
}

// Flows runs the sign-in and sign-out flows of one project. Build it with
// [New]. Safe for concurrent use.
type Flows struct {
	client     *gotrue.Client
	cookieName string
	opts       ssrcookie.Options
	tokensOnly bool
	site       *url.URL
	basePath   string
	allowed    []*url.URL
	cop        *http.CrossOriginProtection
	timeout    time.Duration
	now        func() time.Time
	authorize  string
	sessions   *authctx.Resolver // ForgetSession on sign-out; nil: none
	limits     limits
}

// New validates cfg and returns the flows. It makes no network call.
func New(cfg *Config) (*Flows, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	f := &Flows{
		client: &gotrue.Client{ProjectURL: cfg.ProjectURL, APIKey: cfg.PublishableKey, HTTPClient: cfg.HTTPClient,
			ClientInfo: "tablegate-go authflow"},
		cookieName: cfg.CookieName,
		opts:       cfg.CookieOptions,
		tokensOnly: cfg.TokensOnly,
		basePath:   cfg.BasePath,
		cop:        http.NewCrossOriginProtection(),
		timeout:    cfg.Timeout,
		now:        cfg.Now,
		sessions:   cfg.Sessions,
		authorize:  strings.TrimRight(strings.TrimSpace(cfg.ProjectURL), "/") + "/auth/v1/authorize",
		limits:     newLimits(cfg),
	}
	if f.cookieName == "" {
		name, err := authctx.CookieNameFor(cfg.ProjectURL)
		if err != nil {
			return nil, fmt.Errorf("authflow: Config.ProjectURL: %w", err)
		}
		f.cookieName = name
	}
	if f.basePath == "" {
		f.basePath = DefaultBasePath
	}
	if f.timeout == 0 {
		f.timeout = DefaultTimeout
	}
	if f.now == nil {
		f.now = time.Now
	}
	f.site, _ = url.Parse(strings.TrimRight(cfg.SiteURL, "/"))
	f.allowed = append(f.allowed, f.site)
	for _, r := range cfg.RedirectURLs {
		u, _ := url.Parse(r)
		f.allowed = append(f.allowed, u)
	}
	for _, o := range cfg.TrustedOrigins {
		if err := f.cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("authflow: Config.TrustedOrigins: %w", err)
		}
	}
	return f, nil
}

// CookieName returns the session cookie name the flows write.
func (f *Flows) CookieName() string { return f.cookieName }

// CallbackURL returns the absolute URL of the callback route, where OAuth
// and magic-link redirects land: SiteURL + BasePath + "/callback".
func (f *Flows) CallbackURL() string { return f.site.String() + f.basePath + "/callback" }

// crossSite refuses a cross-site unsafe request (403 CROSS_SITE_REQUEST).
func (f *Flows) crossSite(r *http.Request) error {
	if err := f.cop.Check(r); err != nil {
		return problem.WithCode(problem.CodeCrossSiteRequest,
			"A cross-site request may not start or end a session.")
	}
	return nil
}

// call sends c bounded by the flow timeout.
func (f *Flows) call(ctx context.Context, c gotrue.Call) gotrue.Reply {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	return f.client.Do(ctx, c)
}

// session turns a reply into a session, or a Problem.
func (f *Flows) session(rep gotrue.Reply) (*ssrcookie.Session, []byte, error) {
	if rep.Err != nil || rep.Status < 200 || rep.Status >= 300 {
		return nil, nil, f.Problem(rep)
	}
	res := gotrue.SessionOf(rep.Body, rep.Status, f.now())
	if res.Outcome != gotrue.Success {
		return nil, nil, newProblem(codeUnavailable, "The auth server's answer is not a session.").
			WithCause(res.Err)
	}
	return res.Parsed, res.Session, nil
}

// sessionCookies returns the Set-Cookie lines that store session (JSON as
// auth-js stores it) over the request's session cookies and delete the
// sign-out marker.
func (f *Flows) sessionCookies(r *http.Request, session []byte) ([]*http.Cookie, error) {
	stored := session
	if f.tokensOnly {
		var err error
		if stored, err = ssrcookie.TokensOnly(session); err != nil {
			return nil, newProblem(codeUnavailable, "The auth server's answer is not a session.").WithCause(err)
		}
	}
	set, _ := ssrcookie.Write(f.cookieName, stored, f.cookies(r, f.cookieName), f.opts)
	if m := ssrsession.ClearSignedOutMarker(f.cookieName, f.cookies(r, authctx.SignedOutCookieName(f.cookieName)), f.opts); m != nil {
		set = append(set, m)
	}
	return set, nil
}

// cookies returns the request cookies named name (and its chunks), split
// as @supabase/ssr splits the Cookie header.
func (f *Flows) cookies(r *http.Request, names ...string) []*http.Cookie {
	var out []*http.Cookie
	for _, n := range names {
		out = append(out, ssrcookie.HeaderCookies(r.Header["Cookie"], n)...)
	}
	return out
}

// commit writes Set-Cookie lines and, when there are any, the no-store
// cache headers.
func commit(w http.ResponseWriter, set []*http.Cookie) {
	ssrcookie.AddHeaders(w.Header(), set)
}

// PasswordCredentials sign a user in with a password. Exactly one of
// Email and Phone is set.
type PasswordCredentials struct {
	Email        string
	Phone        string
	Password     string
	CaptchaToken string
}

type metaSecurity struct {
	CaptchaToken string `json:"captcha_token,omitempty"`
}

// SignInWithPassword signs a user in (POST /token?grant_type=password,
// the body auth-js sends) and writes the session cookies. Errors are
// Problems: 401 INVALID_CREDENTIALS, 403 AUTH_NOT_CONFIRMED, 429
// AUTH_RATE_LIMITED with Retry-After, 503 AUTH_UNAVAILABLE, … (see
// [Flows.Problem]).
func (f *Flows) SignInWithPassword(w http.ResponseWriter, r *http.Request, c *PasswordCredentials) (*ssrcookie.Session, error) {
	if err := f.crossSite(r); err != nil {
		return nil, err
	}
	if c == nil || c.Password == "" || (c.Email == "") == (c.Phone == "") {
		return nil, newProblem(codeInvalidInput, "Give an email or a phone number, and a password.")
	}
	var body any
	if c.Email != "" {
		body = struct {
			Email    string       `json:"email"`
			Password string       `json:"password"`
			Meta     metaSecurity `json:"gotrue_meta_security"`
		}{c.Email, c.Password, metaSecurity{c.CaptchaToken}}
	} else {
		body = struct {
			Phone    string       `json:"phone"`
			Password string       `json:"password"`
			Meta     metaSecurity `json:"gotrue_meta_security"`
		}{c.Phone, c.Password, metaSecurity{c.CaptchaToken}}
	}
	a, err := f.take(r, accountKey(c.Email, c.Phone))
	if err != nil {
		return nil, err
	}
	rep := f.call(r.Context(), gotrue.Call{Path: "/token", Query: url.Values{"grant_type": {"password"}}, Body: body})
	s, err := f.finish(w, r, rep, nil)
	f.settle(a, err)
	return s, err
}

// finish stores the session of a sign-in reply, together with extra
// cookie writes (verifier cleanup) that go out whatever the outcome.
func (f *Flows) finish(w http.ResponseWriter, r *http.Request, rep gotrue.Reply, extra []*http.Cookie) (*ssrcookie.Session, error) {
	s, raw, err := f.session(rep)
	if err != nil {
		commit(w, extra)
		return nil, err
	}
	set, err := f.sessionCookies(r, raw)
	if err != nil {
		commit(w, extra)
		return nil, err
	}
	commit(w, append(extra, set...))
	return s, nil
}

// OTPRequest sends a one-time password or magic link. Exactly one of
// Email and Phone is set.
type OTPRequest struct {
	Email string
	Phone string
	// Next is where the callback sends the browser after the magic link
	// signs the user in (checked like every redirect target; default "/").
	Next string
	// CreateUser signs up unknown users (default true, as in auth-js).
	CreateUser *bool
	// Data is the user_metadata of a new user.
	Data map[string]any
	// Channel is "sms" (default) or "whatsapp" for phones.
	Channel      string
	CaptchaToken string
}

// SendOTP asks the auth server to send a code or magic link (POST /otp).
// For an email it starts a PKCE flow like auth-js does (the verifier goes
// to the cookie slots, the challenge to the auth server) and sets the
// link's redirect to the callback route with sb_flow_id and next, so that
// the link lands on [Flows.ServeCallback] and is exchanged there.
func (f *Flows) SendOTP(w http.ResponseWriter, r *http.Request, o *OTPRequest) error {
	if err := f.crossSite(r); err != nil {
		return err
	}
	if o == nil || (o.Email == "") == (o.Phone == "") {
		return newProblem(codeInvalidInput, "Give an email or a phone number.")
	}
	// Every send counts (a sent code is a chance to guess it), unless the
	// auth server did not answer.
	a, err := f.take(r, accountKey(o.Email, o.Phone))
	if err != nil {
		return err
	}
	err = f.sendOTP(w, r, o)
	if p, ok := problem.As(err); ok && p.Code == CodeUnavailable {
		f.settle(a, nil)
	}
	return err
}

// sendOTP is SendOTP past its checks.
func (f *Flows) sendOTP(w http.ResponseWriter, r *http.Request, o *OTPRequest) error {
	create := true
	if o.CreateUser != nil {
		create = *o.CreateUser
	}
	data := o.Data
	if data == nil {
		data = map[string]any{}
	}
	if o.Phone != "" {
		ch := o.Channel
		if ch == "" {
			ch = "sms"
		}
		rep := f.call(r.Context(), gotrue.Call{Path: "/otp", Body: struct {
			Phone      string         `json:"phone"`
			Data       map[string]any `json:"data"`
			CreateUser bool           `json:"create_user"`
			Meta       metaSecurity   `json:"gotrue_meta_security"`
			Channel    string         `json:"channel"`
		}{o.Phone, data, create, metaSecurity{o.CaptchaToken}, ch}})
		if rep.Err != nil || rep.Status >= 300 {
			return f.Problem(rep)
		}
		return nil
	}
	p, set, err := f.startPKCE(r, "")
	if err != nil {
		return err
	}
	redirect := f.callbackWith(o.Next, p.flowID)
	rep := f.call(r.Context(), gotrue.Call{Path: "/otp", Query: url.Values{"redirect_to": {redirect}}, Body: struct {
		Email               string         `json:"email"`
		Data                map[string]any `json:"data"`
		CreateUser          bool           `json:"create_user"`
		Meta                metaSecurity   `json:"gotrue_meta_security"`
		CodeChallenge       string         `json:"code_challenge"`
		CodeChallengeMethod string         `json:"code_challenge_method"`
	}{o.Email, data, create, metaSecurity{o.CaptchaToken}, p.challenge, "s256"}})
	if rep.Err != nil || rep.Status >= 300 {
		// auth-js removes the verifier of a failed send.
		commit(w, f.dropNewFlow(r, p, set))
		return f.Problem(rep)
	}
	commit(w, set)
	return nil
}

// VerifyRequest verifies a one-time password: TokenHash and Type (the
// link of an email template: ?token_hash=…&type=email), or Email/Phone,
// Token and Type (a code the user typed).
type VerifyRequest struct {
	TokenHash string
	// Type is email, signup, invite, magiclink, recovery or email_change
	// for emails and token hashes; sms or phone_change for phones.
	Type  string
	Email string
	Phone string
	Token string
}

var emailTypes = map[string]bool{"email": true, "signup": true, "invite": true, "magiclink": true, "recovery": true, "email_change": true}
var phoneTypes = map[string]bool{"sms": true, "phone_change": true}

// VerifyOTP verifies a token hash or code (POST /verify, the body auth-js
// sends) and writes the session cookies. An invalid or expired code is
// 401 AUTH_OTP_INVALID.
func (f *Flows) VerifyOTP(w http.ResponseWriter, r *http.Request, v *VerifyRequest) (*ssrcookie.Session, error) {
	if err := f.crossSite(r); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, newProblem(codeInvalidInput, "Nothing to verify.")
	}
	var body any
	switch {
	case v.TokenHash != "" && v.Email == "" && v.Phone == "" && v.Token == "":
		if !emailTypes[v.Type] {
			return nil, newProblem(codeInvalidInput, "The type of a token hash must be email, signup, invite, magiclink, recovery or email_change.")
		}
		body = struct {
			TokenHash string       `json:"token_hash"`
			Type      string       `json:"type"`
			Meta      metaSecurity `json:"gotrue_meta_security"`
		}{v.TokenHash, v.Type, metaSecurity{}}
	case v.TokenHash == "" && v.Email != "" && v.Phone == "" && v.Token != "":
		if !emailTypes[v.Type] {
			return nil, newProblem(codeInvalidInput, "The type of an email code must be email, signup, invite, magiclink, recovery or email_change.")
		}
		body = struct {
			Email string       `json:"email"`
			Token string       `json:"token"`
			Type  string       `json:"type"`
			Meta  metaSecurity `json:"gotrue_meta_security"`
		}{v.Email, v.Token, v.Type, metaSecurity{}}
	case v.TokenHash == "" && v.Phone != "" && v.Email == "" && v.Token != "":
		if !phoneTypes[v.Type] {
			return nil, newProblem(codeInvalidInput, "The type of a phone code must be sms or phone_change.")
		}
		body = struct {
			Phone string       `json:"phone"`
			Token string       `json:"token"`
			Type  string       `json:"type"`
			Meta  metaSecurity `json:"gotrue_meta_security"`
		}{v.Phone, v.Token, v.Type, metaSecurity{}}
	default:
		return nil, newProblem(codeInvalidInput, "Give a token hash and type, or an email or phone with its code and type.")
	}
	a, err := f.take(r, accountKey(v.Email, v.Phone))
	if err != nil {
		return nil, err
	}
	rep := f.call(r.Context(), gotrue.Call{Path: "/verify", Body: body})
	s, err := f.finish(w, r, rep, nil)
	f.settle(a, err)
	return s, err
}

// OAuthRequest starts an OAuth sign-in.
type OAuthRequest struct {
	// Provider is the auth server's provider name (github, google, …).
	Provider string
	// Next is where the callback sends the browser afterwards (default "/").
	Next string
	// Scopes are extra provider scopes, space-separated.
	Scopes string
	// QueryParams are extra provider parameters (e.g. access_type=offline).
	QueryParams url.Values
}

// StartOAuth stores a new PKCE verifier in the auth-js cookie slots and
// returns the auth server's authorize URL to send the browser to:
// {ProjectURL}/auth/v1/authorize?provider=…&redirect_to=<callback with
// next and sb_flow_id>&code_challenge=…&code_challenge_method=s256, built
// like auth-js builds it.
func (f *Flows) StartOAuth(w http.ResponseWriter, r *http.Request, o *OAuthRequest) (string, error) {
	if err := f.crossSite(r); err != nil {
		return "", err
	}
	if o == nil || !validProvider(o.Provider) {
		return "", newProblem(codeInvalidInput, "The provider name is missing or malformed.")
	}
	p, set, err := f.startPKCE(r, "")
	if err != nil {
		return "", err
	}
	params := []string{
		"provider=" + encodeURIComponent(o.Provider),
		"redirect_to=" + encodeURIComponent(f.callbackWith(o.Next, p.flowID)),
	}
	if o.Scopes != "" {
		params = append(params, "scopes="+encodeURIComponent(o.Scopes))
	}
	params = append(params, url.Values{"code_challenge": {p.challenge}, "code_challenge_method": {"s256"}}.Encode())
	if len(o.QueryParams) > 0 {
		params = append(params, o.QueryParams.Encode())
	}
	commit(w, set)
	return f.authorize + "?" + strings.Join(params, "&"), nil
}

func validProvider(p string) bool {
	if p == "" || len(p) > 64 {
		return false
	}
	for _, c := range p {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == ':' || c == '.') {
			return false
		}
	}
	return true
}

// ExchangeCode finishes a PKCE flow (OAuth or magic link): it reads the
// verifier of flowID (the sb_flow_id of the callback URL; "" reads the
// legacy slot), exchanges code for a session (POST
// /token?grant_type=pkce with auth_code and code_verifier), clears the
// verifier cookies it used whatever the outcome, and writes the session.
// A missing verifier is 400 AUTH_FLOW_INVALID with no call made.
func (f *Flows) ExchangeCode(w http.ResponseWriter, r *http.Request, code, flowID string) (*ssrcookie.Session, error) {
	if err := f.crossSite(r); err != nil {
		return nil, err
	}
	if code == "" || len(code) > 1024 {
		return nil, newProblem(codeInvalidInput, "The callback carries no usable code.")
	}
	cookies := f.pkceCookies(r)
	if validFlowID(flowID) && !hasName(cookies, flowVerifierCookieName(f.cookieName, flowID)) {
		// A slot the index does not list (two tabs raced on the index).
		cookies = append(cookies, f.cookies(r, flowVerifierCookieName(f.cookieName, flowID))...)
	}
	verifier, used := readVerifier(cookies, f.cookieName, flowID)
	cleanup := f.removeVerifier(cookies, used, verifier)
	v, _, _ := strings.Cut(verifier, "/")
	if v == "" {
		commit(w, cleanup)
		return nil, newProblem(codeFlowInvalid,
			"No PKCE code verifier for this sign-in in the cookies: start the sign-in again in this browser.")
	}
	rep := f.call(r.Context(), gotrue.Call{Path: "/token", Query: url.Values{"grant_type": {"pkce"}}, Body: struct {
		AuthCode     string `json:"auth_code"`
		CodeVerifier string `json:"code_verifier"`
	}{code, v}})
	return f.finish(w, r, rep, cleanup)
}

// SignOutOpts choose what a sign-out revokes.
type SignOutOpts struct {
	// Scope is "global" (default, as in auth-js: every session of the
	// user), "local" (this session) or "others" (every other session;
	// this one stays signed in).
	Scope string
}

// SignOut ends the session of the request: POST /logout?scope=… with the
// session's access token (refreshed first when it has expired, so the
// server can revoke it). For scope local and global the session and all
// PKCE verifier cookies are deleted and the sign-out marker is set, so
// the next requests resolve as anon/signed_out; "others" keeps this
// session. A session the auth server no longer knows (401, 403, 404,
// session_not_found) counts as signed out. When the auth server cannot be
// reached, "local" still clears the cookies (auth-js removes a local
// session before calling), while "global" and "others" return 503
// AUTH_UNAVAILABLE and keep them. A session whose refresh the server
// rejects is cleared whatever the scope; "others" stores the refreshed
// session it used. A request without a session just gets the cookies
// cleared.
func (f *Flows) SignOut(w http.ResponseWriter, r *http.Request, o *SignOutOpts) error {
	if err := f.crossSite(r); err != nil {
		return err
	}
	scope := "global"
	if o != nil && o.Scope != "" {
		scope = o.Scope
	}
	if scope != "global" && scope != "local" && scope != "others" {
		return newProblem(codeInvalidInput, "The sign-out scope must be global, local or others.")
	}
	sess, hasSession := ssrsession.Read(f.cookies(r, f.cookieName), f.cookieName)
	var callErr error
	var kept []*http.Cookie // a refreshed session that "others" keeps
	if hasSession && sess.AccessToken != "" {
		token := sess.AccessToken
		if sess.ExpiresAt*1000-f.now().UnixMilli() < 90_000 && sess.RefreshToken != "" {
			// auth-js refreshes an expiring session before using it.
			ctx, cancel := context.WithTimeout(r.Context(), f.timeout)
			res := f.client.Refresh(ctx, sess.RefreshToken, f.now())
			cancel()
			switch res.Outcome {
			case gotrue.Success:
				token = res.Parsed.AccessToken
				if scope == "others" {
					// The old refresh token is spent: store the new session.
					var err error
					if kept, err = f.sessionCookies(r, res.Session); err != nil {
						return err
					}
				}
			case gotrue.Rejected:
				// The server already ended this session: clear it whatever
				// the scope.
				token, scope = "", "local"
			default:
				callErr = newProblem(codeUnavailable, "The auth server could not be reached to sign out.").
					WithHeader("Retry-After", "5").WithCause(res.Err)
				token = ""
			}
		}
		if token != "" {
			rep := f.call(r.Context(), gotrue.Call{Path: "/logout", Query: url.Values{"scope": {scope}}, Bearer: token})
			switch {
			case rep.Err == nil && rep.Status < 300:
			case rep.Err == nil && (rep.Status == 401 || rep.Status == 403 || rep.Status == 404 || rep.Code == "session_not_found"):
				// Already signed out on the server (auth-js treats these alike).
			default:
				callErr = f.Problem(rep)
			}
		}
	}
	if callErr != nil && scope != "local" {
		commit(w, kept)
		return callErr
	}
	if scope == "others" {
		commit(w, kept)
		return nil
	}
	if hasSession {
		f.sessions.ForgetSession(sess.RefreshToken)
	}
	cookies := f.cookies(r, f.cookieName)
	set, _ := ssrcookie.Clear(f.cookieName, cookies, f.opts)
	set = append(set, f.removeAllVerifiers(f.pkceCookies(r))...)
	set = append(set, ssrsession.SignedOutMarker(f.cookieName, f.opts))
	commit(w, set)
	return nil
}

// isBasePath reports whether p is a path the handler's routes can live
// under: /seg(/seg)*, each segment unreserved characters and no dot
// segment, so that p is its own path.Clean and no ServeMux wildcard,
// space or percent-escape changes what the routes match.
func isBasePath(p string) bool {
	if len(p) < 2 || p[0] != '/' || path.Clean(p) != p {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, r := range seg {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-._~", r)) {
				return false
			}
		}
	}
	return true
}
