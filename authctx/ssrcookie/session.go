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
	s, expiresAt, err := parseSession(raw)
	if err != nil {
		return nil, err
	}
	if s.AccessToken == "" || s.RefreshToken == "" || !expiresAt {
		return nil, ErrInvalidSession
	}
	return s, nil
}

// LoadSession parses a stored session exactly as leniently as auth-js
// getSession loads one (_isValidSession): a JSON object that has the keys
// access_token, refresh_token and expires_at, whatever their values. A
// field whose value is not of the Session field's type (for example a
// null or numeric access_token) is left zero, so the session may hold no
// usable token; [ParseSession] refuses those. Any other shape gives
// [ErrInvalidSession], which the JavaScript client treats as signed out.
// The returned Session keeps raw in Raw.
func LoadSession(raw []byte) (*Session, error) {
	s, _, err := parseSession(raw)
	return s, err
}

// parseSession is LoadSession; expiresAt reports whether expires_at is a
// finite number.
func parseSession(raw []byte) (s *Session, expiresAt bool, err error) {
	var w struct {
		AccessToken          json.RawMessage `json:"access_token"`
		TokenType            json.RawMessage `json:"token_type"`
		ExpiresIn            json.RawMessage `json:"expires_in"`
		ExpiresAt            json.RawMessage `json:"expires_at"`
		RefreshToken         json.RawMessage `json:"refresh_token"`
		User                 json.RawMessage `json:"user"`
		ProviderToken        json.RawMessage `json:"provider_token"`
		ProviderRefreshToken json.RawMessage `json:"provider_refresh_token"`
	}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false, ErrInvalidSession
	}
	if err := json.Unmarshal(trimmed, &w); err != nil {
		return nil, false, ErrInvalidSession
	}
	// A key present with the value null is kept as "null", absent as nil.
	if w.AccessToken == nil || w.RefreshToken == nil || w.ExpiresAt == nil {
		return nil, false, ErrInvalidSession
	}
	s = &Session{AccessToken: str(w.AccessToken), RefreshToken: str(w.RefreshToken), TokenType: str(w.TokenType),
		ProviderToken: str(w.ProviderToken), ProviderRefreshToken: str(w.ProviderRefreshToken), Raw: raw}
	s.ExpiresAt, expiresAt = number(w.ExpiresAt)
	s.ExpiresIn, _ = number(w.ExpiresIn)
	if len(w.User) > 0 && string(w.User) != "null" {
		s.User = w.User
	}
	return s, expiresAt, nil
}

// str returns a JSON string value, "" for any other value.
func str(v json.RawMessage) string {
	var s string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &s) != nil {
		return ""
	}
	return s
}

// number converts a JSON number to int64, truncating fractions; ok is
// false for absent or non-number values and non-finite or out-of-range
// numbers.
func number(v json.RawMessage) (int64, bool) {
	if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
		return 0, false
	}
	n := json.Number(v)
	if i, err := n.Int64(); err == nil {
		return i, true
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}
