// This file holds the caller model: the resolved state (Auth) of who is
// calling — a user, a service, anon or invalid — with its views: the actor
// that hooks, events and MCP expose (Actor), and the identity the db
// package binds into each unit of work (DBCaller).

package authctx

import (
	"encoding/json"
	"time"

	"github.com/tablegate/tablegate/db"
)

// Kind is the kind of an auth state, and the type of an [Actor].
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

// Auth is who is calling, as resolution decided it: exactly one of the
// kinds, with the fields that kind carries. It is the one caller type that
// resolvers, guards, hooks, authorizers and plugins see; [Auth.Actor] is
// who acts (as events, MCP tools and audit records expose it) and
// [Auth.DBCaller] what the database runs as. Auth values are safe to share between
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

	// db is what the database binds: the JSON of the verified claims
	// and its role claim, built once per verified token.
	db db.Caller
}

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
// claimsJSON may be nil (NewUser then marshals claims); when given it must
// be exactly the JSON of claims:
// it is what the db package sends to Postgres as request.jwt.claims (what
// auth.jwt() and auth.role() read), and the database role follows its role
// claim, so policies and the role always agree with each other — but JSON
// that disagrees with claims makes Go code and policies see different
// callers. Pass nil unless the bytes come from the same verified payload.
// The state keeps claims as they are: do not modify them afterwards.
func NewUser(claims Claims, token string, claimsJSON json.RawMessage) Auth {
	id, _ := claims["sub"].(string)
	if claimsJSON == nil {
		// Claims that do not marshal leave it nil: the db package refuses
		// such a caller.
		claimsJSON, _ = json.Marshal(claims)
	}
	u := &User{ID: id, Claims: claims, Token: token, db: db.UserCaller(id, claimsJSON)}
	return Auth{Kind: KindUser, User: u}
}

// Claims returns the verified claims of a user, nil for every other kind.
// They may be shared with other requests presenting the same token: never
// modify them; [Auth.Clone] returns a copy that may be modified.
func (a Auth) Claims() Claims {
	if a.Kind != KindUser || a.User == nil {
		return nil
	}
	return a.User.Claims
}

// Actor is who acts, as hooks, events, MCP tools and audit records expose
// it: {"type":"user","id":"…","anonymous":true}. Build it with [Auth.Actor].
type Actor struct {
	// Type is KindUser, KindService or KindAnon (an invalid state acts as
	// anon; guards refuse it before anything runs).
	Type Kind `json:"type"`
	// ID is the user id (KindUser) or the key name (KindService).
	ID string `json:"id,omitempty"`
	// Anonymous is true for anonymous sign-ins (KindUser only).
	Anonymous bool `json:"anonymous,omitempty"`
}

// Actor returns who acts in a: a user (with whether it signed in
// anonymously), a service by key name, or anon for every other state.
func (a Auth) Actor() Actor {
	switch a.Kind {
	case KindUser:
		if a.User != nil {
			return Actor{Type: KindUser, ID: a.User.ID, Anonymous: a.User.Claims.Anonymous()}
		}
	case KindService:
		return Actor{Type: KindService, ID: a.KeyName}
	}
	return Actor{Type: KindAnon}
}

// DBCaller returns the identity the db package binds into a unit of work
// ([db.DB.Run]): a user runs as its role claim with its verified claims
// (those resolution verified, never a hook's modified copy), a service as
// service_role, and every other state — an invalid one included — as anon.
// It is built once per verified token: calling it allocates nothing.
func (a Auth) DBCaller() db.Caller {
	switch a.Kind {
	case KindUser:
		if a.User != nil {
			return a.User.db
		}
	case KindService:
		return db.ServiceCaller()
	}
	return db.Caller{}
}
