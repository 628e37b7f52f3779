// This file holds the auth states (user, service, anon, invalid) and the
// caller that the db package pushes into each caller-bound transaction.

package authctx

import (
	"encoding/json"
	"time"
)

// Kind is the kind of an auth state.
type Kind string

// The four auth state kinds.
const (
	// KindUser is a verified signed-in user; anonymous sign-ins are users
	// too, with claim is_anonymous true.
	KindUser Kind = "user"
	// KindService is a secret-key or service caller.
	KindService Kind = "service"
	// KindAnon is a caller without a usable session.
	KindAnon Kind = "anon"
	// KindInvalid is a caller whose credential must be answered with 401.
	KindInvalid Kind = "invalid"
)

// Reason qualifies an anon or invalid state.
type Reason string

// Reasons of anon and invalid states.
const (
	ReasonNone          Reason = "none"           // anon: no credential at all
	ReasonExpired       Reason = "expired"        // anon: cookie token expired, refresh off
	ReasonSignedOut     Reason = "signed_out"     // anon: refresh token rejected
	ReasonRefreshFailed Reason = "refresh_failed" // anon: expired and the refresh failed
	ReasonToken         Reason = "token"          // invalid: did not verify
	ReasonClaims        Reason = "claims"         // invalid: failed the claims schema
	ReasonActor         Reason = "actor"          // invalid: malformed act chain
)

// Auth is the result of caller resolution: exactly one of the kinds, with
// the fields that kind carries. Auth values are safe to share between
// goroutines as long as nobody modifies them: a resolved User (and its
// Claims) is shared by every request presenting the same token, so never
// write to it; [Auth.Clone] returns a copy that may be modified. rest hands
// hooks such a copy.
type Auth struct {
	Kind Kind
	// Reason is set for KindAnon and KindInvalid.
	Reason Reason
	// User is set for KindUser.
	User *User
	// KeyName names the secret key or service (KindService).
	KeyName string
	// Err explains an invalid state for logs and problem bodies (failing
	// claim paths, never values). Nil otherwise.
	Err error
}

// User is a verified signed-in user.
type User struct {
	// ID is the sub claim.
	ID string
	// Claims are the verified claims, after the claims schema was applied.
	Claims Claims
	// Token is the verified access token.
	Token string
	// Profile is the parsed user_metadata when a profile schema is set
	// (display-only; never used for authorization). Nil otherwise.
	Profile any
	// ExpiresAt is the token's exp; zero when unknown (a custom resolver
	// may leave it unset).
	ExpiresAt time.Time

	// claimsJSON caches the JSON form of Claims for the database, and
	// role is its role claim (what the database role follows).
	claimsJSON json.RawMessage
	role       roleClaim
}

// roleClaim is the role claim of a claims JSON document.
type roleClaim struct {
	value   any
	present bool
}

// roleOf reads the role claim of a claims JSON document.
func roleOf(raw json.RawMessage) roleClaim {
	var v struct {
		Role *json.RawMessage `json:"role"`
	}
	if json.Unmarshal(raw, &v) != nil || v.Role == nil {
		return roleClaim{}
	}
	var role any
	if json.Unmarshal(*v.Role, &role) != nil {
		return roleClaim{}
	}
	return roleClaim{value: role, present: true}
}

// ClaimsJSON returns the JSON of the user's claims when resolution
// already has it (the token payload, or the merged claims), else nil.
func (u *User) ClaimsJSON() json.RawMessage { return u.claimsJSON }

// Claims are JWT claims as decoded JSON. The Claims of a resolved [Auth]
// are shared by every request that presents the same token: never modify
// them; [Claims.Clone] returns a copy that may be modified.
type Claims map[string]any

// Clone returns a deep copy of c (nested objects and arrays included);
// nil for nil.
func (c Claims) Clone() Claims {
	if c == nil {
		return nil
	}
	return Claims(cloneObject(c))
}

func cloneObject(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneObject(x)
	case Claims:
		return Claims(cloneObject(x))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	case []string:
		return append([]string(nil), x...)
	case json.RawMessage:
		return append(json.RawMessage(nil), x...)
	}
	return v // strings, numbers, booleans and nil are immutable
}

// Anonymous reports whether the claims mark an anonymous sign-in.
func (c Claims) Anonymous() bool {
	b, _ := c["is_anonymous"].(bool)
	return b
}

// Clone returns a copy of a whose User (if any) is a copy with deeply
// copied Claims, for code that wants to modify them: the Claims of a
// resolved state are shared by every request presenting the same token.
func (a Auth) Clone() Auth {
	if a.User != nil {
		u := *a.User
		u.Claims = u.Claims.Clone()
		a.User = &u
	}
	return a
}

// Anon returns the anon state with a reason.
func Anon(reason Reason) Auth { return Auth{Kind: KindAnon, Reason: reason} }

// Invalid returns the invalid state with a reason and an explanation.
func Invalid(reason Reason, err error) Auth {
	if reason == "" {
		reason = ReasonToken
	}
	return Auth{Kind: KindInvalid, Reason: reason, Err: err}
}

// Service returns the service state for a named key.
func Service(keyName string) Auth { return Auth{Kind: KindService, KeyName: keyName} }

// NewUser returns the user state for verified claims and their token.
// claimsJSON may be nil; when given it must be exactly the JSON of claims:
// it is what the db package sends to Postgres as request.jwt.claims (what
// auth.jwt() and auth.role() read), and the database role follows its role
// claim, so policies and the role always agree with each other — but JSON
// that disagrees with claims makes Go code and policies see different
// callers. Pass nil unless the bytes come from the same verified payload.
// The state keeps claims as they are: do not modify them afterwards.
func NewUser(claims Claims, token string, claimsJSON json.RawMessage) Auth {
	id, _ := claims["sub"].(string)
	u := &User{ID: id, Claims: claims, Token: token, claimsJSON: claimsJSON}
	if claimsJSON != nil {
		u.role = roleOf(claimsJSON)
	}
	return Auth{Kind: KindUser, User: u}
}

// Session is the caller as an application sees it: who signed in, and
// whether anonymously.
type Session struct {
	// Anonymous is true for anonymous sign-ins.
	Anonymous bool
	// UserID is the user's id, empty for non-users.
	UserID string
	// Claims are the verified claims of a user, nil otherwise.
	Claims Claims
	// Profile is the parsed user_metadata, when a profile schema is set.
	Profile any
}

// Session returns the session view of the state: empty for every kind
// but a user.
func (a Auth) Session() Session {
	if a.Kind != KindUser || a.User == nil {
		return Session{}
	}
	return Session{Anonymous: a.User.Claims.Anonymous(), UserID: a.User.ID, Claims: a.User.Claims, Profile: a.User.Profile}
}

// ActorType is the kind of actor a repository context carries.
type ActorType string

// Actor types.
const (
	ActorUser    ActorType = "user"
	ActorService ActorType = "service"
	ActorAnon    ActorType = "anon"
)

// Actor is who acts in a repository context.
type Actor struct {
	Type ActorType `json:"type"`
	// ID is the user id (ActorUser) or the key name (ActorService).
	ID string `json:"id,omitempty"`
	// Anonymous is true for anonymous sign-ins (ActorUser only).
	Anonymous bool `json:"anonymous,omitempty"`
}

// Caller is the verified caller handed to repositories, hooks, authorizers
// and plugins: the actor and the JWT claims. The db package sends
// ClaimsJSON (or, without it, the JSON of Claims) to Postgres as
// request.jwt.claims and picks the database role from the role claim of
// exactly that JSON. Build one with [Auth.Caller].
//
// Claims may be shared with other requests presenting the same token:
// never modify them; use [Caller.Clone] for a copy of your own.
type Caller struct {
	Actor Actor
	// Claims are the verified JWT claims (users), or nil.
	Claims Claims

	// claimsJSON is the JSON of Claims when already known (saves a
	// marshal on the hot path), and role its role claim.
	claimsJSON json.RawMessage
	role       roleClaim
}

// ClaimsJSON returns the JSON of Claims when resolution already has it
// (the verified payload, or the merged claims), else nil.
func (c Caller) ClaimsJSON() json.RawMessage { return c.claimsJSON }

// RoleClaim returns the role claim the database role follows: the role of
// ClaimsJSON when set, else of Claims. ok is false without a role claim.
func (c Caller) RoleClaim() (role any, ok bool) {
	if c.claimsJSON != nil {
		return c.role.value, c.role.present
	}
	role, ok = c.Claims["role"]
	return role, ok
}

// Clone returns a copy of c whose Claims are a deep copy: code may modify
// them without touching other requests. The database still receives the
// verified claims (ClaimsJSON) and role of the original.
func (c Caller) Clone() Caller {
	c.Claims = c.Claims.Clone()
	return c
}

// Caller returns the caller of an auth state, for repositories and the
// db package. An invalid state has no caller and yields an anon actor;
// guards refuse invalid callers before any repository is reached.
func (a Auth) Caller() Caller {
	switch a.Kind {
	case KindUser:
		if a.User == nil {
			break
		}
		return Caller{
			Actor:      Actor{Type: ActorUser, ID: a.User.ID, Anonymous: a.User.Claims.Anonymous()},
			Claims:     a.User.Claims,
			claimsJSON: a.User.claimsJSON,
			role:       a.User.role,
		}
	case KindService:
		return Caller{Actor: Actor{Type: ActorService, ID: a.KeyName}}
	}
	return Caller{Actor: Actor{Type: ActorAnon}}
}
