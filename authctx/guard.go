package authctx

import (
	"errors"
	"net/http"

	"github.com/tablegate/tablegate/problem"
)

// Allow names a kind of caller a guard admits: a signed-in user, an
// anonymous sign-in, a caller without a session, or a service.
type Allow string

// Allow values. The default allow list is {AllowUser}.
const (
	// AllowUser admits full (non-anonymous) signed-in users.
	AllowUser Allow = "user"
	// AllowAnon admits callers without a session. It never admits an
	// anonymous sign-in: admit those with AllowAnonymous.
	AllowAnon Allow = "anon"
	// AllowAnonymous admits anonymous sign-ins (users with is_anonymous).
	AllowAnonymous Allow = "anonymous"
	// AllowService admits service callers (secret apikey, or a custom
	// resolver's service state). Service callers are admitted only where
	// listed.
	AllowService Allow = "service"
)

// Admit decides whether a guard with the allow list admits a. It returns
// nil when admitted, else the Problem to answer:
//
//   - invalid: 401, always, whatever the allow list, with the cause as
//     code and a detail saying what to do: a TOKEN_ code of a
//     [*TokenError] (TOKEN_EXPIRED, TOKEN_ISSUER_MISMATCH, …; see
//     [Auth.Cause]), CLAIMS_INVALID (with the failing paths) or
//     ACTOR_INVALID — except a token that could not be checked because the
//     signing keys have not loaded yet: 503 KEYS_NOT_LOADED with
//     Retry-After;
//   - anonymous sign-in not admitted: 403 ANONYMOUS_USER;
//   - full user not admitted (e.g. allow {anonymous}): 403 CALLER_NOT_ALLOWED;
//   - no session where one is required: 401 AUTH_REQUIRED;
//   - service not admitted: 403 CALLER_NOT_ALLOWED.
//
// Every 401 carries WWW-Authenticate: Bearer. An empty allow list means
// {AllowUser}.
func Admit(a Auth, allow ...Allow) *problem.Problem {
	if len(allow) == 0 {
		allow = defaultAllow
	}
	has := func(x Allow) bool {
		for _, y := range allow {
			if y == x {
				return true
			}
		}
		return false
	}
	switch a.Kind {
	case KindInvalid:
		return invalidProblem(a)
	case KindUser:
		if a.User == nil {
			return invalidProblem(Invalid(ReasonToken, nil))
		}
		if a.User.Claims.Anonymous() {
			if has(AllowAnonymous) {
				return nil
			}
			return problem.WithCode(problem.CodeAnonymousUser, "Anonymous sign-ins are not admitted here; sign in with a permanent account.")
		}
		if has(AllowUser) {
			return nil
		}
		return problem.WithCode(problem.CodeCallerNotAllowed, "Signed-in users are not admitted here.")
	case KindService:
		if has(AllowService) {
			return nil
		}
		return problem.WithCode(problem.CodeCallerNotAllowed, "Service callers are not admitted here.")
	case KindAnon:
		if has(AllowAnon) {
			return nil
		}
		detail := "This route requires a signed-in caller."
		switch a.Reason {
		case ReasonExpired:
			detail = "The session expired; sign in again or refresh the session."
		case ReasonSignedOut:
			detail = "The session was signed out; sign in again."
		case ReasonRefreshFailed:
			detail = "The session expired and could not be refreshed; try again."
		}
		return problem.WithCode(problem.CodeAuthRequired, detail).WithHeader("WWW-Authenticate", `Bearer`)
	}
	return invalidProblem(Invalid(ReasonToken, nil))
}

var defaultAllow = []Allow{AllowUser}

// invalidProblem is the 401 of an invalid state.
func invalidProblem(a Auth) *problem.Problem {
	if errors.Is(a.Err, ErrKeysNotLoaded) {
		// The server cannot verify yet: not the caller's fault, and not a
		// sign-out (clients treat 401 as one).
		return keysNotLoadedProblem()
	}
	var p *problem.Problem
	switch a.Reason {
	case ReasonClaims:
		p = problem.WithCode(problem.CodeClaimsInvalid, "The token's claims failed the claims schema.")
		var ce *ClaimsError
		if errors.As(a.Err, &ce) {
			p.Errors = ce.Errors
		}
	case ReasonActor:
		p = problem.WithCode(problem.CodeActorInvalid, "The token's act (actor) chain is malformed.")
	default:
		var te *TokenError
		if errors.As(a.Err, &te) {
			p = problem.WithCode(te.Code, te.Detail)
		} else {
			p = problem.WithCode(problem.CodeTokenInvalid, "The credential did not verify.")
		}
	}
	if a.Err != nil {
		p = p.WithCause(a.Err)
	}
	return p.WithHeader("WWW-Authenticate", `Bearer error="invalid_token"`)
}

// keysNotLoadedProblem is the answer to a token that could not be
// verified because the signing keys have not loaded yet (the JWKS has not
// answered since start): 503 with Retry-After, never a 401 that clients
// would read as signed out.
func keysNotLoadedProblem() *problem.Problem {
	return problem.WithCode(problem.CodeKeysNotLoaded, "The signing keys are not loaded yet; try again shortly.").
		WithHeader("Retry-After", "1")
}

// Guard returns middleware that admits the callers in allow (default
// {AllowUser}) and answers everyone else with the Problem of [Admit]. It
// reads the caller stored by [Resolver.Middleware]; without it every
// request counts as anon/none.
func Guard(allow ...Allow) func(http.Handler) http.Handler {
	allow = append([]Allow(nil), allow...)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p := Admit(AuthFrom(r.Context()), allow...); p != nil {
				problem.Write(w, p)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// CheckCrossSite refuses a cross-site, state-changing request whose
// credential came from the session cookie (a browser sends cookies with
// requests another site starts; Bearer tokens it never sends) with 403
// CROSS_SITE_REQUEST, using [http.CrossOriginProtection] semantics
// (Sec-Fetch-Site, else Origin against Host; safe methods pass). Bearer,
// apikey and resolver credentials are never affected. nil means allowed.
func (rv *Resolver) CheckCrossSite(r *http.Request, res Result) *problem.Problem {
	if res.Source != SourceCookie {
		return nil
	}
	if err := rv.cop.Check(r); err != nil {
		return problem.WithCode(problem.CodeCrossSiteRequest,
			"A cross-site request may not rely on the session cookie; send the token as a Bearer header.")
	}
	return nil
}

// CrossSite is middleware applying [Resolver.CheckCrossSite] to the
// Result stored by [Resolver.Middleware] (resolving when it is absent).
//
// Like [Resolver.Middleware], it panics at once on a nil *Resolver.
func (rv *Resolver) CrossSite(next http.Handler) http.Handler {
	mustResolver(rv, "CrossSite")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		res, ok := FromContext(r.Context())
		if !ok {
			res = rv.Resolve(r)
		}
		if p := rv.CheckCrossSite(r, res); p != nil {
			problem.Write(w, p)
			return
		}
		next.ServeHTTP(w, r)
	})
}
