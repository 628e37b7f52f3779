// This file holds the auth states (seed section 2.1) and the repository
// context that the db package pushes into each caller-bound transaction.

package authctx

import (
	"encoding/json"
	"time"
)

// Kind is the kind of an auth state.
type Kind string

// The four auth state kinds of the seed's section 2.1.
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
// the fields that kind carries. Auth values are immutable once returned
// and safe to share between goroutines.
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

	// claimsJSON caches the JSON form of Claims for the database.
	claimsJSON json.RawMessage
}

// ClaimsJSON returns the JSON of the user's claims when resolution
// already has it (the token payload, or the merged claims), else nil.
func (u *User) ClaimsJSON() json.RawMessage { return u.claimsJSON }

// Claims are JWT claims as decoded JSON.
type Claims map[string]any

// Anonymous reports whether the claims mark an anonymous sign-in.
func (c Claims) Anonymous() bool {
	b, _ := c["is_anonymous"].(bool)
	return b
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
// the db package picks the database role from claims but sends claimsJSON
// to Postgres as request.jwt.claims (what auth.jwt() and auth.role() read),
// so JSON that disagrees with claims makes policies see another caller.
// Pass nil unless the bytes come from the same verified payload.
func NewUser(claims Claims, token string, claimsJSON json.RawMessage) Auth {
	id, _ := claims["sub"].(string)
	return Auth{Kind: KindUser, User: &User{ID: id, Claims: claims, Token: token, claimsJSON: claimsJSON}}
}

// Session is the caller as an application sees it (seed 2.2 toSession).
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

// ToSession returns the session view of an auth state.
func ToSession(a Auth) Session {
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

// Context is the verified request context handed to repositories, hooks
// and plugins (seed 2.2 authContext): the actor and the JWT claims. The db
// package pushes exactly this into request.jwt.claims and picks the
// database role from the actor.
type Context struct {
	Actor Actor
	// Claims are the verified JWT claims (users), or nil.
	Claims Claims
	// ClaimsJSON is the JSON of Claims when already known (saves a marshal
	// on the hot path). May be nil.
	ClaimsJSON json.RawMessage
}

// AuthContext returns the repository context of an auth state. An invalid
// state has no context and yields an anon actor; guards refuse invalid
// callers before any repository is reached.
func AuthContext(a Auth) Context {
	switch a.Kind {
	case KindUser:
		if a.User == nil {
			break
		}
		return Context{
			Actor:      Actor{Type: ActorUser, ID: a.User.ID, Anonymous: a.User.Claims.Anonymous()},
			Claims:     a.User.Claims,
			ClaimsJSON: a.User.claimsJSON,
		}
	case KindService:
		return Context{Actor: Actor{Type: ActorService, ID: a.KeyName}}
	}
	return Context{Actor: Actor{Type: ActorAnon}}
}
