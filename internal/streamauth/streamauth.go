// Package streamauth holds what the long-lived responses of packages
// events and mcptools check of their caller beyond admission.
package streamauth

import (
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
)

// ExpiredForStream refuses a long-lived response (an event stream) to a
// user whose token has expired by now though it was admitted inside the
// verifier's clock-skew leeway: such a stream would end as it opens, and
// the client would reconnect with the same token. It returns the 401 that
// makes a client refresh first, or nil.
func ExpiredForStream(a authctx.Auth, now time.Time) *problem.Problem {
	if a.User == nil || a.User.ExpiresAt.IsZero() || now.Before(a.User.ExpiresAt) {
		return nil
	}
	return problem.WithCode(problem.CodeTokenExpired, "The token has expired; refresh it, then reconnect.").
		WithHeader("WWW-Authenticate", `Bearer error="invalid_token"`)
}
