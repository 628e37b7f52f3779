// Package gotrue is the one call tablegate makes to the Supabase auth
// server (GoTrue): the refresh-token grant, sent exactly as auth-js sends
// it, with its outcome sorted into the three cases the cookie refresh flow
// acts on (see [Outcome]).
package gotrue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
)

// APIVersion is the X-Supabase-Api-Version auth-js sends; it selects the
// {"code","message"} error body.
const APIVersion = "2024-01-01"

// DefaultMaxBodyBytes bounds a token response. A real one is a few KiB.
const DefaultMaxBodyBytes = 1 << 20

// DefaultClientInfo is the X-Client-Info header tablegate sends.
const DefaultClientInfo = "tablegate-go"

// Outcome sorts a refresh attempt.
type Outcome int

const (
	// Failed: no usable answer (network error, timeout, 5xx, 408, 429, or a
	// 2xx whose body is not a session). The stored session must be kept so
	// that the next request retries.
	Failed Outcome = iota
	// Success: the server issued a new session (Result.Session).
	Success
	// Rejected: the server refused the refresh token (any other 4xx, e.g.
	// 400 refresh_token_not_found, refresh_token_already_used,
	// session_not_found, session_expired). The caller is signed out.
	Rejected
)

// String names the outcome for logs.
func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Rejected:
		return "rejected"
	}
	return "failed"
}

// Result is the outcome of one refresh call.
type Result struct {
	Outcome Outcome
	// Session is the new session JSON, exactly as auth-js would store it
	// (the response object, expires_at added when the server omitted it,
	// printed like JSON.stringify). Set for Success only.
	Session []byte
	// Parsed is Session parsed. Set for Success only.
	Parsed *ssrcookie.Session
	// Status is the HTTP status, 0 when no response arrived.
	Status int
	// Code is the auth server's error code (e.g. refresh_token_not_found),
	// when it sent one.
	Code string
	// Err explains Failed and Rejected outcomes. It never holds a token.
	Err error
	// RetryAfter is the server's Retry-After on a 429 or 503 (seconds or
	// an HTTP date), 0 when absent or unreadable.
	RetryAfter time.Duration
}

// retryAfter reads a Retry-After header: delta-seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0
		}
		return time.Duration(min(n, 86400)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}

// Client calls one project's auth server. The zero value is not usable:
// ProjectURL and APIKey are required. A Client is safe for concurrent use.
type Client struct {
	// ProjectURL is the Supabase project URL; requests go to
	// {ProjectURL}/auth/v1/token?grant_type=refresh_token.
	ProjectURL string
	// APIKey is the publishable (or legacy anon) key, sent as the apikey
	// header and as Authorization: Bearer, like auth-js.
	APIKey string
	// HTTPClient sends the request (default http.DefaultClient). Bound
	// every call with the context's deadline.
	HTTPClient *http.Client
	// ClientInfo is the X-Client-Info header (default DefaultClientInfo).
	ClientInfo string
	// MaxBodyBytes bounds the response body (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

// TokenURL returns the refresh endpoint.
func (c *Client) TokenURL() string {
	return strings.TrimRight(strings.TrimSpace(c.ProjectURL), "/") + "/auth/v1/token?grant_type=refresh_token"
}

// Refresh exchanges refreshToken for a new session. now stamps expires_at
// when the server omits it. Refresh never panics and returns by the
// context's deadline (then with Outcome Failed).
func (c *Client) Refresh(ctx context.Context, refreshToken string, now time.Time) Result {
	body, err := ssrcookie.EncodeJSON(map[string]string{"refresh_token": refreshToken})
	if err != nil {
		return Result{Err: fmt.Errorf("gotrue: encode body: %w", err)}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.TokenURL(), bytes.NewReader(body))
	if err != nil {
		return Result{Err: fmt.Errorf("gotrue: build request: %w", err)}
	}
	info := c.ClientInfo
	if info == "" {
		info = DefaultClientInfo
	}
	req.Header = http.Header{
		"Apikey":                 {c.APIKey},
		"Authorization":          {"Bearer " + c.APIKey},
		"Content-Type":           {"application/json;charset=UTF-8"},
		"X-Client-Info":          {info},
		"X-Supabase-Api-Version": {APIVersion},
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	// Errors below never contain the token: it travels only in the body.
	resp, err := hc.Do(req)
	if err != nil {
		return Result{Err: fmt.Errorf("gotrue: refresh request: %w", err)}
	}
	defer resp.Body.Close()
	limit := c.MaxBodyBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	res := Result{Status: resp.StatusCode}
	if err != nil {
		res.Err = fmt.Errorf("gotrue: read response: %w", err)
		return res
	}
	if int64(len(raw)) > limit {
		res.Err = fmt.Errorf("gotrue: response body exceeds %d bytes", limit)
		return res
	}
	switch s := resp.StatusCode; {
	case s >= 200 && s < 300:
		return success(raw, resp.StatusCode, now)
	case s >= 500, s == http.StatusRequestTimeout, s == http.StatusTooManyRequests:
		res.Code = errorCode(resp, raw)
		if s == http.StatusTooManyRequests || s == http.StatusServiceUnavailable {
			res.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), now)
		}
		res.Err = fmt.Errorf("gotrue: auth server answered %d %s", s, res.Code)
		return res
	case s >= 400:
		res.Outcome = Rejected
		res.Code = errorCode(resp, raw)
		res.Err = fmt.Errorf("gotrue: refresh token rejected: %d %s", s, res.Code)
		return res
	}
	res.Err = fmt.Errorf("gotrue: unexpected status %d", resp.StatusCode)
	return res
}

// success turns a 2xx body into a stored session, or a Failed result when
// the body is not one (auth-js's hasSession: access_token, refresh_token
// and expires_in all present and truthy).
func success(raw []byte, status int, now time.Time) Result {
	fail := func(why string) Result {
		return Result{Status: status, Err: errors.New("gotrue: refresh response " + why)}
	}
	var probe struct {
		AccessToken  any `json:"access_token"`
		RefreshToken any `json:"refresh_token"`
		ExpiresIn    any `json:"expires_in"`
		ExpiresAt    any `json:"expires_at"`
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return fail("is not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &probe); err != nil {
		return fail("has fields of the wrong type")
	}
	at, _ := probe.AccessToken.(string)
	rt, _ := probe.RefreshToken.(string)
	in, _ := probe.ExpiresIn.(float64)
	if at == "" || rt == "" || in == 0 || math.IsNaN(in) {
		return fail("lacks access_token, refresh_token or expires_in")
	}
	session := trimmed
	if !truthy(probe.ExpiresAt) {
		// auth-js _sessionResponse: expires_at = round(now/1000) + expires_in,
		// assigned on a copy of the object (so it goes last when absent).
		exp := float64(int64(math.Round(float64(now.UnixMilli())/1000))) + in
		session = append(bytes.Clone(trimmed[:len(trimmed)-1]), `,"expires_at":`+strconv.FormatFloat(exp, 'f', -1, 64)+`}`...)
	}
	out, err := ssrcookie.StringifyJSON(session)
	if err != nil {
		return fail("cannot be re-encoded")
	}
	parsed, err := ssrcookie.ParseSession(out)
	if err != nil {
		return fail("is not a valid session")
	}
	return Result{Outcome: Success, Session: out, Parsed: parsed, Status: status}
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// errorCode extracts the error code like auth-js: the body's "code" when
// the response declares API version 2024-01-01 or later, else
// "error_code"; the x-sb-error-code header as a fallback.
func errorCode(resp *http.Response, raw []byte) string {
	var body struct {
		Code      any    `json:"code"`
		ErrorCode string `json:"error_code"`
	}
	_ = json.Unmarshal(raw, &body)
	if v := resp.Header.Get("X-Supabase-Api-Version"); v >= APIVersion {
		if s, ok := body.Code.(string); ok && s != "" {
			return clean(s)
		}
	}
	if body.ErrorCode != "" {
		return clean(body.ErrorCode)
	}
	return clean(resp.Header.Get("X-Sb-Error-Code"))
}

// clean keeps error codes printable and short for logs.
func clean(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}
