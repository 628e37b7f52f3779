package authflow

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/tablegate/tablegate/authctx/internal/gotrue"
	"github.com/tablegate/tablegate/problem"
)

// Problem codes of the flows (besides problem.CodeCrossSiteRequest).
const (
	// CodeInvalidCredentials: wrong email/phone or password (401).
	CodeInvalidCredentials problem.Code = "INVALID_CREDENTIALS"
	// CodeNotConfirmed: the email or phone is not confirmed yet (403).
	CodeNotConfirmed problem.Code = "AUTH_NOT_CONFIRMED"
	// CodeRateLimited: the auth server's rate limit (429, Retry-After).
	CodeRateLimited problem.Code = "AUTH_RATE_LIMITED"
	// CodeFlowInvalid: the PKCE flow expired, was used already, or its
	// verifier is missing from this browser's cookies (400).
	CodeFlowInvalid problem.Code = "AUTH_FLOW_INVALID"
	// CodeOTPInvalid: the code or link is wrong or expired (401).
	CodeOTPInvalid problem.Code = "AUTH_OTP_INVALID"
	// CodeUserBanned: the user is banned (403).
	CodeUserBanned problem.Code = "AUTH_USER_BANNED"
	// CodeMethodDisabled: sign-ups, the provider or the method are
	// disabled on the auth server (403).
	CodeMethodDisabled problem.Code = "AUTH_METHOD_DISABLED"
	// CodeWeakPassword: the password fails the auth server's policy (422).
	CodeWeakPassword problem.Code = "AUTH_WEAK_PASSWORD"
	// CodeInvalidInput: a missing or malformed field (400).
	CodeInvalidInput problem.Code = "AUTH_INVALID_INPUT"
	// CodeRejected: any other refusal of the auth server (400).
	CodeRejected problem.Code = "AUTH_REJECTED"
	// CodeUnavailable: the auth server did not answer in time, failed, or
	// answered something that is not a session (503).
	CodeUnavailable problem.Code = "AUTH_UNAVAILABLE"
)

// The short names used in this package.
const (
	codeInvalidInput = CodeInvalidInput
	codeFlowInvalid  = CodeFlowInvalid
	codeUnavailable  = CodeUnavailable
)

// KindTooManyRequests is the problem kind of a rate-limited flow (429).
const KindTooManyRequests problem.Kind = "too_many_requests"

type codeSpec struct {
	kind   problem.Kind
	status int
	detail string
}

var codes = map[problem.Code]codeSpec{
	CodeInvalidCredentials: {problem.KindUnauthorized, 401, "Invalid login credentials."},
	CodeNotConfirmed:       {problem.KindForbidden, 403, "The email address or phone number is not confirmed yet."},
	CodeRateLimited:        {KindTooManyRequests, 429, "Too many attempts; wait before trying again."},
	CodeFlowInvalid:        {problem.KindBadRequest, 400, "The sign-in flow expired or was already used; start the sign-in again."},
	CodeOTPInvalid:         {problem.KindUnauthorized, 401, "The code or link is invalid or has expired; request a new one."},
	CodeUserBanned:         {problem.KindForbidden, 403, "This user is banned."},
	CodeMethodDisabled:     {problem.KindForbidden, 403, "This sign-in method is disabled."},
	CodeWeakPassword:       {problem.KindUnprocessable, 422, "The password is too weak."},
	CodeInvalidInput:       {problem.KindBadRequest, 400, "The request is missing a field or has a malformed one."},
	CodeRejected:           {problem.KindBadRequest, 400, "The auth server refused the request."},
	CodeUnavailable:        {problem.KindUnavailable, 503, "The auth server is unavailable; try again."},
}

// byAuthCode maps the auth server's error codes (auth-js ErrorCode).
var byAuthCode = map[string]problem.Code{
	"invalid_credentials":          CodeInvalidCredentials,
	"email_not_confirmed":          CodeNotConfirmed,
	"phone_not_confirmed":          CodeNotConfirmed,
	"over_request_rate_limit":      CodeRateLimited,
	"over_email_send_rate_limit":   CodeRateLimited,
	"over_sms_send_rate_limit":     CodeRateLimited,
	"flow_state_expired":           CodeFlowInvalid,
	"flow_state_not_found":         CodeFlowInvalid,
	"bad_code_verifier":            CodeFlowInvalid,
	"bad_oauth_state":              CodeFlowInvalid,
	"bad_oauth_callback":           CodeFlowInvalid,
	"invalid_grant":                CodeFlowInvalid,
	"otp_expired":                  CodeOTPInvalid,
	"user_banned":                  CodeUserBanned,
	"signup_disabled":              CodeMethodDisabled,
	"email_provider_disabled":      CodeMethodDisabled,
	"phone_provider_disabled":      CodeMethodDisabled,
	"provider_disabled":            CodeMethodDisabled,
	"otp_disabled":                 CodeMethodDisabled,
	"oauth_provider_not_supported": CodeMethodDisabled,
	"anonymous_provider_disabled":  CodeMethodDisabled,
	"weak_password":                CodeWeakPassword,
	"validation_failed":            CodeInvalidInput,
	"bad_json":                     CodeInvalidInput,
	"email_address_invalid":        CodeInvalidInput,
	"email_address_not_authorized": CodeInvalidInput,
	"captcha_failed":               CodeInvalidInput,
}

// newProblem builds the problem of a flow code.
func newProblem(c problem.Code, detail string) *problem.Problem {
	spec := codes[c]
	if detail == "" {
		detail = spec.detail
	}
	title := spec.kind.Title()
	if spec.kind == KindTooManyRequests {
		title = "Too many requests"
	}
	return &problem.Problem{Kind: spec.kind, Status: spec.status, Title: title, Code: c, Detail: detail}
}

// problemFor maps an auth server error code and HTTP status (as
// [Flows.Problem] does) to a flow Problem code.
func problemFor(authCode string, status int) problem.Code {
	if c, ok := byAuthCode[authCode]; ok {
		return c
	}
	switch {
	case status == http.StatusTooManyRequests:
		return CodeRateLimited
	case status >= 500 || status == http.StatusRequestTimeout || status == 0:
		return CodeUnavailable
	}
	return CodeRejected
}

// Problem maps one auth server answer to the Problem a flow returns. The
// detail names the auth server's error code, never its message (which may
// quote the input) and never a secret. Rate limits carry Retry-After
// (the auth server's, else 60 seconds); an unanswered call is 503 with
// Retry-After 5.
func (f *Flows) Problem(rep gotrue.Reply) *problem.Problem {
	if rep.Err != nil {
		d := "The auth server could not be reached."
		if errors.Is(rep.Err, context.DeadlineExceeded) {
			d = "The auth server did not answer in time."
		}
		return newProblem(CodeUnavailable, d).WithHeader("Retry-After", "5").WithCause(rep.Err)
	}
	c := problemFor(rep.Code, rep.Status)
	p := newProblem(c, "")
	if rep.Code != "" && (c == CodeRejected || c == CodeInvalidInput || c == CodeFlowInvalid || c == CodeMethodDisabled) {
		p.Detail += " (auth server code " + rep.Code + ")"
	}
	switch c {
	case CodeRateLimited:
		ra := "60"
		if n, err := strconv.Atoi(rep.RetryAfter); err == nil && n >= 0 && n < 86400 {
			ra = strconv.Itoa(n)
		}
		p = p.WithHeader("Retry-After", ra)
	case CodeUnavailable:
		p = p.WithHeader("Retry-After", "5")
	case CodeInvalidCredentials, CodeOTPInvalid:
		p = p.WithHeader("WWW-Authenticate", `Bearer`)
	}
	return p
}
