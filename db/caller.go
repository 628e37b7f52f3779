package db

import (
	"encoding/json"
	"errors"
)

// Caller is who a unit of work runs as in Postgres: the database role, the
// claims sent as request.jwt.claims (what auth.uid(), auth.jwt() and
// auth.role() read in policies), and the share of the pool the work draws
// on ([Config.MaxConnsPerCaller]).
//
// The zero Caller is a caller without a session: it runs as anon with the
// claims {"role":"anon"} and shares one part of the pool with every other
// such caller. Build the others with [UserCaller] and [ServiceCaller];
// package authctx builds the Caller of a resolved request
// (authctx.Auth.DBCaller) once per verified token, so binding it costs no
// allocation per request. A Caller is a small value, safe to copy and to
// share between goroutines.
type Caller struct {
	kind    callerKind
	id      string          // a user's id: its share of the pool
	claims  json.RawMessage // a user's verified claims, as sent
	role    string          // the role claim of claims ("" when not a string)
	claimed bool            // claims carries a role claim
}

// callerKind says how a Caller runs.
type callerKind uint8

const (
	callerAnon callerKind = iota
	callerUser
	callerService
)

// UserCaller returns the Caller of a signed-in user: id is the user's id
// (the sub claim; it names the user's share of the pool) and claims the
// JSON of the verified claims, sent to Postgres byte for byte. The user
// runs as the role claim of claims when [Config.UserRoles] lists it, as
// authenticated when claims has no role claim, and is refused with
// [ErrRoleNotAllowed] otherwise, so the role and what policies read never
// disagree. UserCaller reads the role claim once, here; claims must not be
// modified afterwards.
func UserCaller(id string, claims json.RawMessage) Caller {
	c := Caller{kind: callerUser, id: id, claims: claims}
	var v struct {
		Role json.RawMessage `json:"role"` // "null" for a null claim
	}
	if json.Unmarshal(claims, &v) == nil && v.Role != nil {
		c.claimed = true
		_ = json.Unmarshal(v.Role, &c.role) // not a string (null included): "", refused
	}
	return c
}

// ServiceCaller returns the Caller of the server's own work and of secret
// keys: it runs as service_role with the claims {"role":"service_role"}
// (row-level security does not apply to that role on Supabase) and is not
// bounded per caller.
func ServiceCaller() Caller { return Caller{kind: callerService} }

// Claims returns the JSON that c sends as request.jwt.claims.
func (c Caller) Claims() json.RawMessage {
	switch c.kind {
	case callerUser:
		return c.claims
	case callerService:
		return serviceClaims
	}
	return anonClaims
}

// Role returns the database role c asks to run as: a user's role claim (""
// when that claim is not a string), authenticated for a user without one,
// anon or service_role. [DB.Run] refuses a user whose role claim
// [Config.UserRoles] does not list.
func (c Caller) Role() string {
	switch c.kind {
	case callerUser:
		if c.claimed {
			return c.role
		}
		return RoleAuthenticated
	case callerService:
		return RoleServiceRole
	}
	return RoleAnon
}

// errNoClaims refuses a user Caller built without claims.
var errNoClaims = errors.New("db: a user Caller without claims JSON (build it with UserCaller and the verified claims)")
