package keys

import (
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// DefaultIssuer is the issuer of minted tokens when none is given: the
// Supabase CLI's local auth URL.
const DefaultIssuer = "http://127.0.0.1:54321/auth/v1"

// TokenSpec describes a development access token; [Mint] fills in what
// is left empty.
type TokenSpec struct {
	Sub       string // default a random UUID
	Anonymous bool
	Role      string        // database role claim; default authenticated
	Tenant    string        // tenant_id claim, empty for none
	Roles     []string      // roles claim
	TTL       time.Duration // default an hour
	Issuer    string        // default DefaultIssuer
	Email     string
	SessionID string         // default a random UUID
	Extra     map[string]any // more claims, set last
}

// Mint signs a token shaped like a GoTrue access token: iss, sub, aud
// "authenticated", exp, iat, email, phone, app_metadata, user_metadata,
// role, aal, amr, session_id, is_anonymous; plus tenant_id and roles (the
// conventional tenant and role claims) when given. The header carries the
// signing key's kid. It fails only when the set holds no signing key.
func Mint(ks *Set, s TokenSpec, now time.Time) (string, error) {
	k, err := ks.Signer()
	if err != nil {
		return "", err
	}
	if s.Sub == "" {
		s.Sub = NewUUID()
	}
	if s.Role == "" {
		s.Role = "authenticated"
	}
	if s.TTL <= 0 {
		s.TTL = time.Hour
	}
	if s.Issuer == "" {
		s.Issuer = DefaultIssuer
	}
	if s.SessionID == "" {
		s.SessionID = NewUUID()
	}
	provider := "email"
	method := "password"
	if s.Anonymous {
		provider, method = "anonymous", "anonymous"
	}
	appMeta := map[string]any{"provider": provider, "providers": []string{provider}}
	claims := jwt.MapClaims{
		"iss":           s.Issuer,
		"sub":           s.Sub,
		"aud":           "authenticated",
		"exp":           now.Add(s.TTL).Unix(),
		"iat":           now.Unix(),
		"email":         s.Email,
		"phone":         "",
		"app_metadata":  appMeta,
		"user_metadata": map[string]any{},
		"role":          s.Role,
		"aal":           "aal1",
		"amr":           []map[string]any{{"method": method, "timestamp": now.Unix()}},
		"session_id":    s.SessionID,
		"is_anonymous":  s.Anonymous,
	}
	if s.Tenant != "" {
		claims["tenant_id"] = s.Tenant
	}
	if len(s.Roles) > 0 {
		claims["roles"] = s.Roles
	}
	for key, v := range s.Extra {
		claims[key] = v
	}
	t := jwt.NewWithClaims(k.Method(), claims)
	t.Header["kid"] = k.Kid
	signed, err := t.SignedString(k.Private)
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return signed, nil
}
