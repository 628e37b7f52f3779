package authctx

import "sync"

// StandardClaims is the conventional claim shape that tenant and
// membership logic reads: tenant_id, roles and memberships. Roles and memberships come from the
// token's top-level claims (set by an access token hook), never from
// user_metadata, which users can edit.
type StandardClaims struct {
	// TenantID is the active tenant (a uuid), when the token names one.
	TenantID string `json:"tenant_id,omitempty"`
	// Roles are application roles; empty when the token has none.
	Roles []string `json:"roles"`
	// Memberships are the caller's scoped roles; empty when none.
	Memberships []Membership `json:"memberships"`
}

// Membership is one scoped membership of [StandardClaims].
type Membership struct {
	// Scope names the kind of thing the membership is in (e.g. "org").
	Scope string `json:"scope"`
	// ID identifies that thing.
	ID string `json:"id"`
	// Roles are the caller's roles in it.
	Roles []string `json:"roles"`
}

// standardClaimsJSON is the JSON Schema of StandardClaims, with the
// defaults and the uuid pattern that inference cannot express.
const standardClaimsJSON = `{
  "type": "object",
  "properties": {
    "tenant_id": {"type": "string", "format": "uuid",
      "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"},
    "roles": {"type": "array", "items": {"type": "string"}, "default": []},
    "memberships": {"type": "array", "default": [], "items": {
      "type": "object",
      "required": ["scope", "id", "roles"],
      "properties": {
        "scope": {"type": "string"},
        "id": {"type": "string"},
        "roles": {"type": "array", "items": {"type": "string"}}
      }
    }}
  }
}`

var (
	standardOnce   sync.Once
	standardSchema *ClaimsSchema
)

// StandardClaimsSchema returns the claims schema of [StandardClaims]:
// tenant_id optional uuid, roles default [], memberships default [] of
// {scope, id, roles}. Read the result with TypedClaims[StandardClaims].
func StandardClaimsSchema() *ClaimsSchema {
	standardOnce.Do(func() {
		s, err := ClaimsJSONSchema([]byte(standardClaimsJSON))
		if err != nil {
			panic("authctx: standard claims schema: " + err.Error())
		}
		standardSchema = s
	})
	return standardSchema
}

// TenantID returns the active tenant of claims: tenant_id, else
// app_metadata.tenant_id, else "".
func (c Claims) TenantID() string {
	if t, ok := c["tenant_id"].(string); ok && t != "" {
		return t
	}
	if am, ok := c["app_metadata"].(map[string]any); ok {
		if t, ok := am["tenant_id"].(string); ok {
			return t
		}
	}
	return ""
}
