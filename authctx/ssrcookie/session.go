package ssrcookie

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
)

// ErrInvalidSession is returned by [ParseSession] when the stored value is
// not a session object. The JavaScript client removes such a session
// (deletes its cookies, see [Clear]).
var ErrInvalidSession = errors.New("ssrcookie: stored value is not a valid session")

// Session is the session object auth-js stores: the GoTrue token response.
// Build one with [ParseSession]; Raw keeps the exact bytes it came from.
type Session struct {
	AccessToken          string          `json:"access_token"`
	TokenType            string          `json:"token_type"`
	ExpiresIn            int64           `json:"expires_in"`
	ExpiresAt            int64           `json:"expires_at"`
	RefreshToken         string          `json:"refresh_token"`
	User                 json.RawMessage `json:"user,omitempty"`
	ProviderToken        string          `json:"provider_token,omitempty"`
	ProviderRefreshToken string          `json:"provider_refresh_token,omitempty"`

	// Raw is the JSON the session was parsed from.
	Raw []byte `json:"-"`
}

// ParseSession parses a stored session. Like auth-js _isValidSession it
// requires access_token, refresh_token and expires_at; it is stricter in
// that the tokens must be non-empty strings and expires_at a finite
// number (fractions are truncated). Any other shape gives
// [ErrInvalidSession]. The returned Session keeps raw in Raw.
func ParseSession(raw []byte) (*Session, error) {
	var w struct {
		AccessToken          *string         `json:"access_token"`
		TokenType            *string         `json:"token_type"`
		ExpiresIn            *json.Number    `json:"expires_in"`
		ExpiresAt            *json.Number    `json:"expires_at"`
		RefreshToken         *string         `json:"refresh_token"`
		User                 json.RawMessage `json:"user"`
		ProviderToken        *string         `json:"provider_token"`
		ProviderRefreshToken *string         `json:"provider_refresh_token"`
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, ErrInvalidSession
	}
	if err := json.Unmarshal(trimmed, &w); err != nil {
		return nil, ErrInvalidSession
	}
	if w.AccessToken == nil || *w.AccessToken == "" || w.RefreshToken == nil || *w.RefreshToken == "" || w.ExpiresAt == nil {
		return nil, ErrInvalidSession
	}
	exp, ok := number(w.ExpiresAt)
	if !ok {
		return nil, ErrInvalidSession
	}
	s := &Session{AccessToken: *w.AccessToken, RefreshToken: *w.RefreshToken, ExpiresAt: exp, Raw: raw}
	if w.TokenType != nil {
		s.TokenType = *w.TokenType
	}
	if in, ok := number(w.ExpiresIn); ok {
		s.ExpiresIn = in
	}
	if len(w.User) > 0 && string(w.User) != "null" {
		s.User = w.User
	}
	if w.ProviderToken != nil {
		s.ProviderToken = *w.ProviderToken
	}
	if w.ProviderRefreshToken != nil {
		s.ProviderRefreshToken = *w.ProviderRefreshToken
	}
	return s, nil
}

// number converts a JSON number to int64, truncating fractions; ok is false
// for nil, non-finite or out-of-range values.
func number(n *json.Number) (int64, bool) {
	if n == nil {
		return 0, false
	}
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}
