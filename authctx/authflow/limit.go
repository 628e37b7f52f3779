package authflow

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tablegate/tablegate/internal/ratelimit"
	"github.com/tablegate/tablegate/problem"
)

// Defaults of the sign-in attempt limits of [Config].
const (
	// DefaultAttemptsPerAccount is how many sign-in attempts one email
	// address or phone number may make in DefaultAttemptWindow.
	DefaultAttemptsPerAccount = 10
	// DefaultAttemptsPerAddress is how many one client address may make.
	DefaultAttemptsPerAddress = 60
	// DefaultAttemptWindow is the window of both limits.
	DefaultAttemptWindow = time.Minute
)

// maxTrackedKeys bounds the accounts and the addresses each limit tracks
// at once (about 120 bytes each); beyond it the oldest window is
// forgotten.
const maxTrackedKeys = 50_000

// limits are the sign-in attempt limits of a Flows; nil limiters limit
// nothing.
type limits struct {
	perAccount  *ratelimit.Limiter
	perAddress  *ratelimit.Limiter
	proxyHeader string
}

func newLimits(c *Config) limits {
	window := c.AttemptWindow
	if window == 0 {
		window = DefaultAttemptWindow
	}
	mk := func(n, def int) *ratelimit.Limiter {
		switch {
		case n < 0:
			return nil
		case n == 0:
			n = def
		}
		return ratelimit.New(ratelimit.Config{Limit: n, Window: window, MaxKeys: maxTrackedKeys, Now: c.Now})
	}
	return limits{perAccount: mk(c.AttemptsPerAccount, DefaultAttemptsPerAccount),
		perAddress: mk(c.AttemptsPerAddress, DefaultAttemptsPerAddress), proxyHeader: http.CanonicalHeaderKey(c.TrustedProxyHeader)}
}

// validHeaderName reports whether s is an HTTP header name (RFC 9110 token).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// attempt is one counted sign-in attempt.
type attempt struct{ account, address ratelimit.Ticket }

// accountKey is the key of an email address or phone number: emails
// folded and trimmed, phones as their digits, so that spellings of one
// address share its limit. It does not depend on whether an account has
// the address.
func accountKey(email, phone string) string {
	if email != "" {
		return "e:" + strings.ToLower(strings.ToUpper(strings.TrimSpace(email)))
	}
	if phone != "" {
		return "p:" + strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, phone)
	}
	return ""
}

// take counts an attempt of account ("" for none: a token hash) from the
// request's client address, or returns 429 AUTH_RATE_LIMITED with
// Retry-After when either has used its window. The answer depends on the
// key alone, never on whether an account has it.
func (f *Flows) take(r *http.Request, account string) (attempt, error) {
	var a attempt
	if account != "" && f.limits.perAccount != nil {
		t, ok, wait := f.limits.perAccount.Take(account)
		if !ok {
			return attempt{}, tooManyAttempts(wait)
		}
		a.account = t
	}
	if f.limits.perAddress != nil {
		t, ok, wait := f.limits.perAddress.Take(ratelimit.ClientAddr(r, f.limits.proxyHeader))
		if !ok {
			f.limits.perAccount.Give(a.account)
			return attempt{}, tooManyAttempts(wait)
		}
		a.address = t
	}
	return a, nil
}

// settle gives an attempt back when it was no guess: it succeeded (err
// nil), or the auth server did not judge it (unavailable).
func (f *Flows) settle(a attempt, err error) {
	if p, ok := problem.As(err); err == nil || ok && p.Code == CodeUnavailable {
		f.limits.perAccount.Give(a.account)
		f.limits.perAddress.Give(a.address)
	}
}

// tooManyAttempts is the 429 of a used limit.
func tooManyAttempts(wait time.Duration) *problem.Problem {
	secs := int((wait + time.Second - 1) / time.Second)
	return newProblem(CodeRateLimited, "Too many sign-in attempts; wait before trying again.").
		WithHeader("Retry-After", strconv.Itoa(secs))
}
