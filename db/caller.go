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
	role, claimed, ok := scanRole(claims)
	if !ok {
		role, claimed = decodeRole(claims)
	}
	return Caller{kind: callerUser, id: id, claims: claims, role: role, claimed: claimed}
}

// decodeRole reads the top-level role claim of a JSON object with
// encoding/json: role is the claim when it is a string ("" otherwise, a
// null included), claimed whether there is one.
func decodeRole(b []byte) (role string, claimed bool) {
	var v struct {
		Role json.RawMessage `json:"role"` // "null" for a null claim
	}
	if json.Unmarshal(b, &v) != nil || v.Role == nil {
		return "", false
	}
	_ = json.Unmarshal(v.Role, &role)
	return role, true
}

// scanRole reads the top-level role claim of a JSON object as
// encoding/json would (the last of duplicate keys wins), without
// allocating for the request roles: role is the claim when it is a string
// ("" otherwise), claimed whether there is one. ok is false when the scan
// cannot decide (an escape in a key or in the role, malformed JSON): the
// caller then decodes with encoding/json.
func scanRole(b []byte) (role string, claimed, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return "", false, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return "", false, skipSpace(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return "", false, false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' && b[j] != '\\' {
			j++
		}
		if j >= len(b) || b[j] == '\\' {
			return "", false, false
		}
		key := b[i+1 : j]
		i = skipSpace(b, j+1)
		if i >= len(b) || b[i] != ':' {
			return "", false, false
		}
		i = skipSpace(b, i+1)
		end, isString, escaped := skipValue(b, i)
		if end < 0 {
			return "", false, false
		}
		if string(key) == "role" {
			if escaped {
				return "", false, false
			}
			claimed, role = true, ""
			if isString {
				v := b[i+1 : end-1]
				for _, c := range v {
					if c < 0x20 || c >= 0x80 { // encoding/json's reading of these may differ
						return "", false, false
					}
				}
				role = internRole(v)
			}
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' && skipSpace(b, i+1) == len(b) {
			return role, claimed, true
		}
		return "", false, false
	}
}

// skipSpace returns the index of the first non-space byte from i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the JSON value starting at i (-1 when
// malformed), whether it is a string, and whether that string holds an
// escape. Objects and arrays are skipped by nesting; their contents are
// not checked.
func skipValue(b []byte, i int) (end int, isString, escaped bool) {
	if i >= len(b) {
		return -1, false, false
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				escaped = true
				j++
			case '"':
				return j + 1, true, escaped
			}
		}
		return -1, false, false
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, false, false
				}
			case '"':
				e, _, _ := skipValue(b, j)
				if e < 0 {
					return -1, false, false
				}
				j = e - 1
			}
		}
		return -1, false, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1, false, false
	}
	return j, false, false
}

// internRole returns the request roles without allocating.
func internRole(b []byte) string {
	switch string(b) {
	case RoleAuthenticated:
		return RoleAuthenticated
	case RoleAnon:
		return RoleAnon
	case RoleServiceRole:
		return RoleServiceRole
	}
	return string(b)
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
