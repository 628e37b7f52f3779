package authflow

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/tablegate/tablegate/problem"
)

// maxFormBytes bounds the body of a form route.
const maxFormBytes = 16 << 10

// Callback is what a callback URL asks for, parsed by [ParseCallback].
type Callback struct {
	// Code and FlowID finish a PKCE flow (OAuth, magic link).
	Code   string
	FlowID string
	// TokenHash and Type verify an email link built from a template
	// ({{ .TokenHash }}).
	TokenHash string
	Type      string
	// AuthError is the error code the auth server redirected with
	// (error_code, else error), when it did.
	AuthError string
	// Next is the raw next parameter (check it with [Flows.SafeRedirect]).
	Next string
}

// ParseCallback reads a callback query: ?code=…[&sb_flow_id=…],
// ?token_hash=…&type=…, or the auth server's ?error=…&error_code=…. A
// parameter given twice, a flow id of the wrong shape, or a mix of code
// and token_hash is refused (400 AUTH_INVALID_INPUT); no value is echoed.
// It never panics (fuzzed).
func ParseCallback(q url.Values) (Callback, error) {
	var c Callback
	one := func(k string) (string, bool) {
		v := q[k]
		if len(v) > 1 {
			return "", false
		}
		if len(v) == 1 {
			return v[0], true
		}
		return "", true
	}
	var ok [7]bool
	c.Code, ok[0] = one("code")
	c.FlowID, ok[1] = one(FlowIDParam)
	c.TokenHash, ok[2] = one("token_hash")
	c.Type, ok[3] = one("type")
	c.Next, ok[4] = one("next")
	errCode, ok5 := one("error_code")
	errName, ok6 := one("error")
	ok[5], ok[6] = ok5, ok6
	for _, b := range ok {
		if !b {
			return Callback{}, newProblem(CodeInvalidInput, "A callback parameter is repeated.")
		}
	}
	if errCode != "" || errName != "" {
		c.AuthError = cleanCode(errCode)
		if c.AuthError == "" {
			c.AuthError = cleanCode(errName)
		}
		if c.AuthError == "" {
			c.AuthError = "unknown"
		}
		return c, nil
	}
	switch {
	case c.Code != "" && c.TokenHash == "":
		if len(c.Code) > 1024 {
			return Callback{}, newProblem(CodeInvalidInput, "The callback code is too long.")
		}
		if c.FlowID != "" && !validFlowID(c.FlowID) {
			return Callback{}, newProblem(CodeInvalidInput, "The callback's sb_flow_id is malformed.")
		}
	case c.TokenHash != "" && c.Code == "":
		if len(c.TokenHash) > 1024 || !emailTypes[c.Type] {
			return Callback{}, newProblem(CodeInvalidInput, "The callback needs a token_hash and a known type.")
		}
	default:
		return Callback{}, newProblem(CodeInvalidInput, "The callback needs a code, or a token_hash and type.")
	}
	return c, nil
}

// cleanCode keeps an error code printable and short.
func cleanCode(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

// ServeCallback is the callback route (GET only): it finishes a PKCE flow
// (?code=…&sb_flow_id=…) or verifies a token hash (?token_hash=…&type=…),
// writes the session cookies and answers 303 See Other to the next
// parameter (checked by [Flows.SafeRedirect]; "/" otherwise). Failures —
// including an error the auth server redirected with — are Problem
// Details; the verifier cookies of the flow are cleared either way.
func (f *Flows) ServeCallback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		// Not even HEAD: link checkers and prefetchers must not spend the
		// single-use code or token hash.
		problem.Write(w, problem.New(problem.KindMethodNotAllowed, "The callback answers GET.").WithHeader("Allow", "GET"))
		return
	}
	c, err := ParseCallback(r.URL.Query())
	if err != nil {
		problem.Write(w, problem.From(err))
		return
	}
	if c.AuthError != "" {
		// The flow is over: drop its verifier like auth-js does.
		cookies := f.pkceCookies(r)
		v, used := readVerifier(cookies, f.cookieName, c.FlowID)
		commit(w, f.removeVerifier(cookies, used, v))
		p := newProblem(problemFor(c.AuthError, 400), "")
		p.Detail += " (auth server code " + c.AuthError + ")"
		problem.Write(w, p)
		return
	}
	if c.Code != "" {
		_, err = f.ExchangeCode(w, r, c.Code, c.FlowID)
	} else {
		_, err = f.VerifyOTP(w, r, &VerifyRequest{TokenHash: c.TokenHash, Type: c.Type})
	}
	if err != nil {
		problem.Write(w, problem.From(err))
		return
	}
	target, _ := f.SafeRedirect(c.Next)
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// Handler serves the flows under Config.BasePath (default /auth) for
// server-rendered pages; every POST takes a urlencoded form (or
// multipart) and answers 303 See Other to its next field (checked by
// [Flows.SafeRedirect]) or a Problem:
//
//	POST {base}/sign-in    email or phone, password, next
//	POST {base}/otp        email or phone, next         (sends the code/link)
//	POST {base}/verify     email or phone, token, type, next
//	GET  {base}/oauth      provider, next, scopes       (302 to the provider)
//	GET  {base}/callback   code+sb_flow_id | token_hash+type, next
//	POST {base}/sign-out   scope (global|local|others), next
//
// Cross-site posts are refused (403 CROSS_SITE_REQUEST); another method
// on a flow's path is answered 405 with an Allow header.
func (f *Flows) Handler() http.Handler {
	mux := http.NewServeMux()
	b := f.basePath
	for _, p := range []string{"/sign-in", "/otp", "/verify", "/sign-out"} {
		mux.Handle(b+p, methodNotAllowed("POST"))
	}
	mux.Handle(b+"/oauth", methodNotAllowed("GET, HEAD"))
	mux.HandleFunc("POST "+b+"/sign-in", f.form(func(w http.ResponseWriter, r *http.Request) error {
		_, err := f.SignInWithPassword(w, r, &PasswordCredentials{Email: r.PostFormValue("email"),
			Phone: r.PostFormValue("phone"), Password: r.PostFormValue("password")})
		return err
	}))
	mux.HandleFunc("POST "+b+"/otp", f.form(func(w http.ResponseWriter, r *http.Request) error {
		return f.SendOTP(w, r, &OTPRequest{Email: r.PostFormValue("email"), Phone: r.PostFormValue("phone"),
			Next: r.PostFormValue("next")})
	}))
	mux.HandleFunc("POST "+b+"/verify", f.form(func(w http.ResponseWriter, r *http.Request) error {
		_, err := f.VerifyOTP(w, r, &VerifyRequest{Email: r.PostFormValue("email"), Phone: r.PostFormValue("phone"),
			Token: r.PostFormValue("token"), Type: r.PostFormValue("type")})
		return err
	}))
	mux.HandleFunc("POST "+b+"/sign-out", f.form(func(w http.ResponseWriter, r *http.Request) error {
		return f.SignOut(w, r, &SignOutOpts{Scope: r.PostFormValue("scope")})
	}))
	mux.HandleFunc("GET "+b+"/oauth", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		u, err := f.StartOAuth(w, r, &OAuthRequest{Provider: q.Get("provider"), Next: q.Get("next"), Scopes: q.Get("scopes")})
		if err != nil {
			problem.Write(w, problem.From(err))
			return
		}
		w.Header().Set("Referrer-Policy", "no-referrer")
		http.Redirect(w, r, u, http.StatusFound)
	})
	mux.HandleFunc(b+"/callback", f.ServeCallback) // any method: ServeCallback answers 405 itself
	return mux
}

// methodNotAllowed answers a flow's path asked with another method.
func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, problem.Newf(problem.KindMethodNotAllowed, "%s answers %s.", r.URL.Path, allow).
			WithHeader("Allow", allow))
	})
}

// form wraps a POST route: bounded form parsing, then 303 to next.
func (f *Flows) form(run func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f.crossSite(r); err != nil {
			problem.Write(w, problem.From(err))
			return
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if ct != "application/x-www-form-urlencoded" && ct != "multipart/form-data" {
			problem.Write(w, problem.New(problem.KindUnsupportedMediaType, "Send an HTML form (application/x-www-form-urlencoded)."))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		var err error
		if ct == "multipart/form-data" {
			err = r.ParseMultipartForm(maxFormBytes)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			problem.Write(w, newProblem(CodeInvalidInput, "The form could not be read."))
			return
		}
		if err := run(w, r); err != nil {
			problem.Write(w, problem.From(err))
			return
		}
		target, _ := f.SafeRedirect(r.PostFormValue("next"))
		http.Redirect(w, r, target, http.StatusSeeOther)
	}
}
