package gotrue

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// Call is one request of the sign-in and sign-out flows, sent exactly as
// auth-js sends it: POST with a JSON body to {ProjectURL}/auth/v1{Path},
// the apikey header, Authorization: Bearer <APIKey> (or the user's access
// token for /logout), X-Supabase-Api-Version.
type Call struct {
	// Path below /auth/v1, e.g. "/token".
	Path string
	// Query is appended as the query string (grant_type, redirect_to,
	// scope), encoded like URLSearchParams.
	Query url.Values
	// Body is encoded as JSON (like JSON.stringify); nil sends no body.
	Body any
	// Bearer replaces the API key in Authorization (the access token on
	// /logout).
	Bearer string
}

// Reply is the outcome of a [Call]. Exactly one of these holds: Err is
// set (no usable answer: network error, timeout, unreadable body); Status
// is 2xx (Body holds the answer); or Status is an error status and Code
// names the auth server's error code.
type Reply struct {
	Status int
	Body   []byte
	// Code is the auth server's error code (invalid_credentials,
	// over_request_rate_limit, …) for an error status.
	Code string
	// RetryAfter is the Retry-After header of a 429 or 503, as sent.
	RetryAfter string
	// Err explains a missing answer. It never holds a token or password.
	Err error
}

// Do sends c. It returns by the context's deadline (then with Err set)
// and never panics.
func (cl *Client) Do(ctx context.Context, c Call) Reply {
	u := strings.TrimRight(strings.TrimSpace(cl.ProjectURL), "/") + "/auth/v1" + c.Path
	if len(c.Query) > 0 {
		u += "?" + c.Query.Encode()
	}
	var body io.Reader
	if c.Body != nil {
		b, err := ssrcookie.EncodeJSON(c.Body)
		if err != nil {
			return Reply{Err: fmt.Errorf("gotrue: encode body: %w", err)}
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, body)
	if err != nil {
		return Reply{Err: fmt.Errorf("gotrue: build request: %w", err)}
	}
	info := cl.ClientInfo
	if info == "" {
		info = DefaultClientInfo
	}
	bearer := cl.APIKey
	if c.Bearer != "" {
		bearer = c.Bearer
	}
	req.Header = http.Header{
		"Apikey":                 {cl.APIKey},
		"Authorization":          {"Bearer " + bearer},
		"X-Client-Info":          {info},
		"X-Supabase-Api-Version": {APIVersion},
	}
	if c.Body != nil {
		req.Header.Set("Content-Type", "application/json;charset=UTF-8")
	}
	hc := cl.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		// url.Error names the URL, which may carry redirect_to but never a
		// secret: passwords, tokens and verifiers travel in the body.
		return Reply{Err: fmt.Errorf("gotrue: %s request: %w", c.Path, unwrapURL(err))}
	}
	defer resp.Body.Close()
	limit := cl.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	rep := Reply{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	if err != nil {
		rep.Err = fmt.Errorf("gotrue: read response: %w", err)
		return rep
	}
	if int64(len(raw)) > limit {
		rep.Err = fmt.Errorf("gotrue: response body exceeds %d bytes", limit)
		return rep
	}
	rep.Body = raw
	if resp.StatusCode >= 300 {
		rep.Code = errorCode(resp, raw)
		if rep.Code == "" {
			rep.Code = oauthError(raw)
		}
	}
	return rep
}

// unwrapURL drops the *url.Error wrapper (its text repeats the URL).
func unwrapURL(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}

// oauthError reads the OAuth-style {"error": "..."} body GoTrue sends for
// some grant errors (e.g. invalid_grant).
func oauthError(raw []byte) string {
	var body struct {
		Error string `json:"error"`
	}
	_ = json.Unmarshal(raw, &body)
	return clean(body.Error)
}

// SessionOf turns a 2xx token response into the session auth-js stores
// (expires_at added when missing), or a Result with Outcome Failed when
// the body is not a session.
func SessionOf(raw []byte, status int, now time.Time) Result {
	return success(raw, status, now)
}
