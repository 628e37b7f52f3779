package authstub

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/internal/ratelimit"
)

// The server also answers the sign-in and sign-out calls of auth-js and
// tablegate's authflow, so the whole session lifecycle runs offline:
//
//	POST /auth/v1/token?grant_type=password   {email|phone, password}
//	GET  /auth/v1/authorize?provider=…&redirect_to=…&code_challenge=…&code_challenge_method=s256
//	     → 302 redirect_to?code=<auth code> (the "provider" is the server itself:
//	       it signs the first account in without asking)
//	POST /auth/v1/token?grant_type=pkce       {auth_code, code_verifier}
//	POST /auth/v1/otp?redirect_to=…           {email, code_challenge, …} (the link is printed)
//	GET  /auth/v1/verify?token=…&type=…&redirect_to=… → 302 redirect_to?code=…
//	POST /auth/v1/verify                      {token_hash, type} | {email, token, type}
//	POST /auth/v1/logout?scope=global|local|others  (Bearer access token) → 204
//
// Errors use GoTrue's codes and statuses: invalid_credentials (400),
// flow_state_not_found (404), flow_state_expired (403), bad_code_verifier
// (400), otp_expired (403), session_not_found (403), no_authorization
// (401), validation_failed (400).

// flowStateTTL is how long an auth code waits for its exchange (GoTrue's
// flow state lifetime is 5 minutes).
const flowStateTTL = 5 * time.Minute

// Account is a user who may sign in: with a password, by a code or magic
// link sent to the email address or phone number, and through the
// server's own OAuth provider (/authorize signs the first account in).
type Account struct {
	// Token is what the user's access tokens carry (its Email is the
	// account's; its Issuer the server's).
	Token    keys.TokenSpec
	Email    string
	Phone    string
	Password string // "": no password sign-in
	// UserMetadata is the user_metadata of the sessions' user; nil: {}.
	UserMetadata map[string]any
}

// account is an Account the server holds.
type account struct {
	spec     keys.TokenSpec
	email    string
	phone    string
	password string
	metadata map[string]any
	otpSent  time.Time // when the last code was sent (under the server's mu)
}

// flowState is one PKCE authorization waiting for its code exchange.
type flowState struct {
	challenge string
	account   *account
	expires   time.Time
	addr      string // the client address that started it (s.flowsBy)
}

// otpState is one sent code / magic link.
type otpState struct {
	account   *account
	code      string
	challenge string
	redirect  string
	expires   time.Time
	wrong     int // codes typed for this account that did not match
	// burned: maxWrongCodes wrong codes disabled the code; the link (the
	// token hash, which cannot be guessed) still signs in, so that whoever
	// knows an address cannot lock its owner out by guessing badly.
	burned bool
}

// maxWrongCodes is how many wrong codes burn an account's pending code,
// and defaultOTPInterval how often an account may be sent a new one: at
// most 5 guesses a minute, so that six digits cannot be guessed (a 50 %
// chance takes about 70 days). GoTrue bounds guesses with the same send
// interval (SMTP max frequency) and rate limits.
const (
	maxWrongCodes      = 5
	defaultOTPInterval = 60 * time.Second
)

// AddAccount registers a user who may sign in.
func (s *Server) AddAccount(a Account) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.Token.Email = a.Email
	s.accounts = append(s.accounts, &account{spec: a.Token, email: a.Email, phone: a.Phone, password: a.Password, metadata: a.UserMetadata})
}

func (s *Server) accountBy(email, phone string) *account {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.accounts {
		if (email != "" && strings.EqualFold(a.email, email)) || (phone != "" && a.phone == phone) {
			return a
		}
	}
	return nil
}

// writeSession issues a session for a and writes GoTrue's token response
// (AccessTokenResponse member order, models.User fields).
func (s *Server) writeSession(w http.ResponseWriter, a *account) {
	spec := a.spec
	spec.SessionID = ""
	access, refresh, ttl, err := s.signIn(spec, a.metadata)
	if err != nil {
		gotrueError(w, http.StatusInternalServerError, "unexpected_failure", "could not sign the token")
		return
	}
	now := s.now()
	metadata := a.metadata
	if metadata == nil {
		metadata = map[string]any{}
	}
	type user struct {
		ID           string         `json:"id"`
		Aud          string         `json:"aud"`
		Role         string         `json:"role"`
		Email        string         `json:"email"`
		Phone        string         `json:"phone"`
		AppMetadata  map[string]any `json:"app_metadata"`
		UserMetadata map[string]any `json:"user_metadata"`
		Identities   []any          `json:"identities"`
		IsAnonymous  bool           `json:"is_anonymous"`
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int    `json:"expires_in"`
		ExpiresAt    int64  `json:"expires_at"`
		RefreshToken string `json:"refresh_token"`
		User         user   `json:"user"`
	}{access, "bearer", int(ttl.Seconds()), now.Add(ttl).Unix(), refresh, user{
		ID: spec.Sub, Aud: "authenticated", Role: "authenticated", Email: a.email, Phone: a.phone,
		AppMetadata:  map[string]any{"provider": "email", "providers": []string{"email"}},
		UserMetadata: metadata, Identities: []any{},
	}})
}

// readJSON decodes a bounded JSON body, answering validation_failed.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(v); err != nil {
		gotrueError(w, http.StatusBadRequest, "bad_json", "Could not parse request body as JSON")
		return false
	}
	return true
}

// passwordAttempts password grants may be tried per email address or
// phone number in each passwordWindow, as tablegate's own sign-in routes
// allow by default (authflow.DefaultAttemptsPerAccount); a grant that
// succeeds does not count. The server limits per account only: behind
// tablegate every grant comes from tablegate's own address, so a limit per
// address here would let one client lock everyone out.
const (
	passwordAttempts = 10
	passwordWindow   = time.Minute
)

// passwordGrant answers POST /token?grant_type=password. Past the limit
// of the email or phone (known to an account or not: the answers are the
// same), it answers 429 over_request_rate_limit with Retry-After, even to
// the right password, until the window ends.
func (s *Server) passwordGrant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Email, Phone, Password string
	}
	if !readJSON(w, r, &body) {
		return
	}
	key := "e:" + foldKey(strings.TrimSpace(body.Email))
	if body.Email == "" {
		key = "p:" + body.Phone
	}
	var t ratelimit.Ticket
	if s.passwordTries != nil {
		var ok bool
		var wait time.Duration
		if t, ok, wait = s.passwordTries.Take(key); !ok {
			w.Header().Set("Retry-After", strconv.Itoa(int((wait+time.Second-1)/time.Second)))
			gotrueError(w, http.StatusTooManyRequests, "over_request_rate_limit", "Request rate limit reached")
			return
		}
	}
	a := s.accountBy(body.Email, body.Phone)
	if a == nil || body.Password == "" || !equalKeys(body.Password, a.password) {
		gotrueError(w, http.StatusBadRequest, "invalid_credentials", "Invalid login credentials")
		return
	}
	if s.passwordTries != nil {
		s.passwordTries.Give(t)
	}
	s.writeSession(w, a)
}

// maxPending bounds the flow states and OTPs the server keeps: /authorize
// needs no key, so a burst must not grow memory without bound. One client
// address may hold maxPendingPerAddress of the flow states, so that a
// flood from one client cannot take the capacity everyone shares (a
// browser holds a handful: auth-js keeps at most 5 pending flows).
const (
	maxPending           = 10000
	maxPendingPerAddress = 100
)

// roomForFlow reports whether the client address addr may start one more
// flow: it drops addr's expired flows when it holds
// maxPendingPerAddress, and everyone's when there are maxPending. Each
// map has its own bound: a burst of /authorize calls (no key needed) must
// not stop codes from being sent. Called with s.mu held.
func (s *Server) roomForFlow(addr string) bool {
	now := s.now()
	if len(s.flowsBy[addr]) >= maxPendingPerAddress {
		// Oldest first: the expired ones lead.
		for codes := s.flowsBy[addr]; len(codes) > 0; codes = s.flowsBy[addr] {
			if f := s.flows[codes[0]]; f != nil && now.Before(f.expires) {
				break
			}
			s.dropFlow(codes[0])
		}
		if len(s.flowsBy[addr]) >= maxPendingPerAddress {
			return false
		}
	}
	if len(s.flows) >= maxPending {
		for k, f := range s.flows {
			if !now.Before(f.expires) {
				s.dropFlow(k)
			}
		}
	}
	return len(s.flows) < maxPending
}

// dropFlow forgets the flow state of code. Called with s.mu held.
func (s *Server) dropFlow(code string) {
	f := s.flows[code]
	if f == nil {
		return
	}
	delete(s.flows, code)
	codes := slices.DeleteFunc(s.flowsBy[f.addr], func(c string) bool { return c == code })
	if len(codes) == 0 {
		delete(s.flowsBy, f.addr)
	} else {
		s.flowsBy[f.addr] = codes
	}
}

func (s *Server) roomForOTP() bool {
	if len(s.otps) >= maxPending {
		now := s.now()
		for k, o := range s.otps {
			if now.After(o.expires) {
				delete(s.otps, k)
			}
		}
	}
	return len(s.otps) < maxPending
}

// newAuthCode stores a flow state started from the client address of r
// and returns its code, or "" when too many flows are pending, from that
// address or from all. A flow that follows a verified magic link
// (verified) is not refused: it spends a code, which only a known
// account's address gets, at most once a minute, so those flows are few,
// and a burst of anonymous /authorize calls must not lock links out.
func (s *Server) newAuthCode(r *http.Request, a *account, challenge string, verified bool) string {
	code := keys.NewUUID()
	addr := ratelimit.ClientAddr(r, "")
	s.mu.Lock()
	defer s.mu.Unlock()
	if !verified && !s.roomForFlow(addr) {
		return ""
	}
	s.flows[code] = &flowState{challenge: challenge, account: a, expires: s.now().Add(flowStateTTL), addr: addr}
	s.flowsBy[addr] = append(s.flowsBy[addr], code)
	return code
}

// tooMany redirects to to with GoTrue's rate-limit error.
func tooMany(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, withQuery(to, "error", "server_error", "error_code", "over_request_rate_limit",
		"error_description", "Too many pending sign-ins"), http.StatusSeeOther)
}

// pkceGrant answers POST /token?grant_type=pkce: one exchange per code,
// the S256 of the verifier must equal the stored challenge.
func (s *Server) pkceGrant(w http.ResponseWriter, r *http.Request) {
	var body struct {
		AuthCode     string `json:"auth_code"`
		CodeVerifier string `json:"code_verifier"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.AuthCode == "" || body.CodeVerifier == "" {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "invalid request: both auth code and code verifier should be non-empty")
		return
	}
	s.mu.Lock()
	fs := s.flows[body.AuthCode]
	s.dropFlow(body.AuthCode)
	s.mu.Unlock()
	sum := sha256.Sum256([]byte(body.CodeVerifier))
	switch {
	case fs == nil:
		gotrueError(w, http.StatusNotFound, "flow_state_not_found", "invalid flow state, no valid flow state found")
	case !s.now().Before(fs.expires):
		gotrueError(w, http.StatusForbidden, "flow_state_expired", "invalid flow state, flow state has expired")
	case base64.RawURLEncoding.EncodeToString(sum[:]) != fs.challenge:
		gotrueError(w, http.StatusBadRequest, "bad_code_verifier", "code challenge does not match previously saved code verifier")
	default:
		s.writeSession(w, fs.account)
	}
}

// safeRedirect returns redirect_to when it is under the site URL (GoTrue's
// allow list), else the site URL.
func (s *Server) safeRedirect(to string) string {
	s.mu.Lock()
	siteURL := s.siteURL
	s.mu.Unlock()
	u, err := url.Parse(to)
	if err != nil || to == "" || siteURL == "" {
		return siteURL
	}
	site, _ := url.Parse(siteURL)
	if u.Scheme != site.Scheme || u.Host != site.Host || u.User != nil {
		return siteURL
	}
	return to
}

// withQuery appends k=v to a URL's query.
func withQuery(to string, kv ...string) string {
	u, err := url.Parse(to)
	if err != nil {
		return to
	}
	q := u.Query()
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// authorize answers GET /authorize: the server is its own OAuth provider and
// signs the first account in without a consent screen, then redirects to
// redirect_to with an auth code (PKCE only).
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	to := s.safeRedirect(q.Get("redirect_to"))
	if q.Get("provider") == "" {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "Unsupported provider: missing provider")
		return
	}
	ch, method := q.Get("code_challenge"), strings.ToLower(q.Get("code_challenge_method"))
	if !validChallenge(ch) || method != "s256" {
		http.Redirect(w, r, withQuery(to, "error", "invalid_request", "error_code", "validation_failed",
			"error_description", "The demo supports only PKCE with S256"), http.StatusFound)
		return
	}
	s.mu.Lock()
	var a *account
	if len(s.accounts) > 0 {
		a = s.accounts[0]
	}
	s.mu.Unlock()
	if a == nil {
		http.Redirect(w, r, withQuery(to, "error", "server_error", "error_code", "user_not_found"), http.StatusFound)
		return
	}
	code := s.newAuthCode(r, a, ch, false)
	if code == "" {
		tooMany(w, r, to)
		return
	}
	http.Redirect(w, r, withQuery(to, "code", code), http.StatusFound)
}

// otp answers POST /otp: it records a code and a token hash for a known
// account and "sends" them through s.sent (Config.SentFunc). Unknown
// addresses get the same 200, as GoTrue does without create_user.
func (s *Server) otp(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Email               string `json:"email"`
		Phone               string `json:"phone"`
		CodeChallenge       string `json:"code_challenge"`
		CodeChallengeMethod string `json:"code_challenge_method"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if (body.Email == "") == (body.Phone == "") {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "Only an email address or phone number should be provided")
		return
	}
	if len(body.Email) > maxEmail || len(body.Phone) > maxPhone {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "Unable to validate email address or phone number: too long")
		return
	}
	if body.CodeChallenge != "" && !validChallenge(body.CodeChallenge) {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "code challenge has to be between 43 and 128 characters of [A-Za-z0-9-._~]")
		return
	}
	limited := "over_email_send_rate_limit"
	if body.Phone != "" {
		limited = "over_sms_send_rate_limit"
	}
	a := s.accountBy(body.Email, body.Phone)
	// The answer depends on the address alone, whether an account has it or
	// not; the account's own interval (its email and phone share it) only
	// decides, silently, whether a code is sent.
	wait, send := s.otpWait(foldKey(body.Email)+"\x00"+body.Phone, a)
	if wait > 0 {
		gotrueError(w, http.StatusTooManyRequests, limited,
			fmt.Sprintf("For security purposes, you can only request this after %d seconds.", int(wait.Seconds())+1))
		return
	}
	if a != nil && send {
		var hb [28]byte
		_, _ = rand.Read(hb[:])
		var cb [4]byte
		_, _ = rand.Read(cb[:])
		hash := hex.EncodeToString(hb[:])
		st := &otpState{account: a, code: fmt.Sprintf("%06d", (uint32(cb[0])<<24|uint32(cb[1])<<16|uint32(cb[2])<<8|uint32(cb[3]))%1000000),
			redirect: s.safeRedirect(r.URL.Query().Get("redirect_to")), expires: s.now().Add(time.Hour)}
		if body.CodeChallenge != "" && strings.EqualFold(body.CodeChallengeMethod, "s256") {
			st.challenge = body.CodeChallenge
		}
		s.mu.Lock()
		room := s.roomForOTP()
		if room {
			// One pending code per account, as GoTrue keeps one token per
			// user: a new request replaces the previous code, so repeated
			// requests do not multiply the codes a guess can hit.
			for h, o := range s.otps {
				if o.account == a {
					delete(s.otps, h)
				}
			}
			s.otps[hash] = st
		}
		s.mu.Unlock()
		if !room {
			gotrueError(w, http.StatusTooManyRequests, limited, "Too many codes pending")
			return
		}
		link := withQuery(s.issuer+"/verify", "token", hash, "type", "magiclink", "redirect_to", st.redirect)
		if s.sent != nil {
			s.sent(Sent{Email: a.email, Code: st.code, TokenHash: hash, Link: link})
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}\n"))
}

// Bounds of what a flow or code keeps, so that the bounded maps are
// bounded in bytes too: a PKCE challenge (RFC 7636: an S256 challenge is
// 43 characters; GoTrue takes 43 to 128), an email address (RFC 5321: 254
// in a path; 320 leaves room) and a phone number.
const (
	minChallenge = 43
	maxChallenge = 128
	maxEmail     = 320
	maxPhone     = 32
)

// validChallenge reports whether s is a PKCE code challenge GoTrue takes.
func validChallenge(s string) bool {
	if len(s) < minChallenge || len(s) > maxChallenge {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}

// foldKey is the key of an address in the send interval: folded as
// accountBy matches (strings.EqualFold), so that "ſ" and "s" are one
// address for an unknown account as they are for a known one.
func foldKey(email string) string { return strings.ToLower(strings.ToUpper(email)) }

// otpWait is how long the address must wait before a new code, or 0, in
// which case it records the request and send reports whether the account,
// when one has the address, may be sent a code (its own interval passed;
// it is then recorded too). The answer to the caller depends on the
// address alone, so that it tells nothing of accounts. The addresses
// remembered are bounded (maxPending): when a flood of other addresses
// fills the bound, one of them is forgotten for each new one, so nobody is
// refused for the flood; an account's own interval, kept on the account,
// holds whatever the map forgets.
func (s *Server) otpWait(addr string, a *account) (wait time.Duration, send bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.otpInterval <= 0 {
		return 0, true
	}
	now := s.now()
	if wait := s.otpSentTo[addr].Add(s.otpInterval).Sub(now); wait > 0 {
		return wait, false
	}
	if len(s.otpSentTo) >= maxPending {
		for k, t := range s.otpSentTo {
			if !now.Before(t.Add(s.otpInterval)) {
				delete(s.otpSentTo, k)
			}
		}
	}
	for k := range s.otpSentTo {
		if len(s.otpSentTo) < maxPending {
			break
		}
		delete(s.otpSentTo, k) // an arbitrary one: map order
	}
	s.otpSentTo[addr] = now
	if a == nil || now.Before(a.otpSent.Add(s.otpInterval)) {
		return 0, false
	}
	a.otpSent = now
	return 0, true
}

// takeOTP consumes the OTP matching a token hash, or an email/phone and
// code. A wrong code counts against the account's pending code, which
// maxWrongCodes wrong codes burn: its code then matches nothing, its link
// still does.
func (s *Server) takeOTP(hash, email, phone, code string) *otpState {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for h, st := range s.otps {
		forAccount := (email != "" && strings.EqualFold(email, st.account.email)) || (phone != "" && phone == st.account.phone)
		match := (hash != "" && h == hash) || (code != "" && forAccount && !st.burned && equalKeys(code, st.code))
		if match {
			delete(s.otps, h)
			if now.After(st.expires) {
				return nil
			}
			return st
		}
		if code != "" && forAccount {
			if st.wrong++; st.wrong >= maxWrongCodes {
				st.burned = true
			}
		}
	}
	return nil
}

// verifyLink answers GET /verify (the magic link): with a PKCE challenge
// it redirects with an auth code; without one with an error (the server has
// no implicit flow).
func (s *Server) verifyLink(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	st := s.takeOTP(q.Get("token"), "", "", "")
	to := s.safeRedirect(q.Get("redirect_to"))
	switch {
	case st == nil:
		http.Redirect(w, r, withQuery(to, "error", "access_denied", "error_code", "otp_expired",
			"error_description", "Email link is invalid or has expired"), http.StatusSeeOther)
	case st.challenge == "":
		http.Redirect(w, r, withQuery(to, "error", "invalid_request", "error_code", "validation_failed",
			"error_description", "The demo supports magic links with PKCE only"), http.StatusSeeOther)
	default:
		if st.redirect != "" {
			to = st.redirect
		}
		code := s.newAuthCode(r, st.account, st.challenge, true)
		if code == "" {
			tooMany(w, r, to)
			return
		}
		http.Redirect(w, r, withQuery(to, "code", code), http.StatusSeeOther)
	}
}

// verify answers POST /verify.
func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	var body struct {
		TokenHash string `json:"token_hash"`
		Type      string `json:"type"`
		Email     string `json:"email"`
		Phone     string `json:"phone"`
		Token     string `json:"token"`
	}
	if !readJSON(w, r, &body) {
		return
	}
	if body.Type == "" || (body.TokenHash == "" && body.Token == "") {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "Verify requires a token or a token hash")
		return
	}
	st := s.takeOTP(body.TokenHash, body.Email, body.Phone, body.Token)
	if st == nil {
		gotrueError(w, http.StatusForbidden, "otp_expired", "Token has expired or is invalid")
		return
	}
	s.writeSession(w, st.account)
}

// logout answers POST /logout?scope=…: the Bearer access token names the
// user and session; local revokes that session, global every session of
// the user, others every other one. Revoked sessions answer
// session_not_found on refresh.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	scope := r.URL.Query().Get("scope")
	if scope == "" {
		scope = "global"
	}
	if scope != "global" && scope != "local" && scope != "others" {
		gotrueError(w, http.StatusBadRequest, "validation_failed", "Unsupported logout scope")
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" || tok == s.apikey {
		gotrueError(w, http.StatusUnauthorized, "no_authorization", "This endpoint requires a valid Bearer token")
		return
	}
	claims := jwt.MapClaims{}
	_, err := jwt.NewParser(jwt.WithValidMethods([]string{"ES256", "RS256", "EdDSA"}), jwt.WithExpirationRequired(),
		jwt.WithIssuer(s.issuer), jwt.WithTimeFunc(s.now)).
		ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) { return s.ks.PublicKey(t) })
	if err != nil {
		gotrueError(w, http.StatusForbidden, "bad_jwt", "invalid JWT: unable to parse or verify signature")
		return
	}
	sub, _ := claims["sub"].(string)
	sid, _ := claims["session_id"].(string)
	s.mu.Lock()
	found := false
	for _, sess := range s.sessions {
		if sess.spec.Sub != sub || sess.revoked {
			continue
		}
		this := sess.spec.SessionID == sid
		found = found || this
		if scope == "global" || (scope == "local" && this) || (scope == "others" && !this) {
			sess.revoked = true
		}
	}
	s.mu.Unlock()
	if !found {
		gotrueError(w, http.StatusForbidden, "session_not_found", "Session from session_id claim in JWT does not exist")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// getOnly answers any method but GET (HEAD included) with 405 and the
// path's methods in Allow, as GoTrue's router does.
func getOnly(allow string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", allow)
			gotrueError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed")
			return
		}
		h(w, r)
	}
}

// routes registers the auth server's endpoints on mux.
// Routes registers the server's endpoints on mux, all but the JWKS (which
// [Server.ServeHTTP] serves too).
func (s *Server) Routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /auth/v1/token", s.hooked("/token", func(w http.ResponseWriter, r *http.Request) {
		if s.requireAPIKey(w, r) {
			s.token(w, r)
		}
	}))
	// The browser opens these directly (no apikey, as behind the gateway).
	// GET only: a HEAD (a link prefetcher, a mail scanner) must not spend a
	// magic link or start a flow, and ServeMux serves HEAD with GET.
	mux.HandleFunc("GET /auth/v1/authorize", s.hooked("/authorize", getOnly("GET", s.authorize)))
	mux.HandleFunc("GET /auth/v1/verify", s.hooked("/verify", getOnly("GET, POST", s.verifyLink)))
	for path, h := range map[string]http.HandlerFunc{
		"/otp": s.otp, "/verify": s.verify, "/logout": s.logout,
	} {
		mux.HandleFunc("POST /auth/v1"+path, s.hooked(path, func(w http.ResponseWriter, r *http.Request) {
			if s.requireAPIKey(w, r) {
				h(w, r)
			}
		}))
	}
}
