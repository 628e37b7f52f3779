package authctx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/problem"
)

// SigningKeysDocs is where Supabase explains how a project moves from the
// legacy HS256 JWT secret to asymmetric JWT signing keys. Refusals of
// HS256 tokens and of HS256-only configurations point to it.
const SigningKeysDocs = "https://supabase.com/docs/guides/auth/signing-keys"

// TokenError is the error of a credential that did not verify: a stable
// Code naming the cause (a TOKEN_ code of the problem catalogue) and a
// Detail a developer can act on. A [*Verifier] returns one for every
// refused token, and the resolver keeps it in [Auth.Err], so [Admit]
// answers 401 with Code and Detail, and [Auth.Cause] reads Code for logs.
//
// Detail never holds the token, a key or a claim value, with two
// exceptions that are configuration rather than personal data: the
// received issuer and audience, shown quoted and shortened beside the
// expected ones. It may name the token's key id (kid, quoted and
// shortened), an identifier the JWKS publishes.
//
// A TokenError unwraps to the sentinel it refines ([ErrTokenExpired],
// [ErrTokenClaims], [ErrTokenUnverifiable], [ErrTokenMalformed]), so
// errors.Is keeps working.
type TokenError struct {
	// Code is the cause: problem.CodeTokenExpired, CodeTokenNotYetValid,
	// CodeTokenIssuerMismatch, CodeTokenAudienceMismatch,
	// CodeTokenUnknownKey, CodeTokenSignatureInvalid,
	// CodeTokenAlgorithmNotAccepted, CodeTokenMalformed or, for other
	// causes, CodeTokenInvalid.
	Code problem.Code
	// Detail says what went wrong and what to do, for the problem body.
	Detail string

	msg string // Error(): short, lowercase, for logs
	err error  // the sentinel refined
}

// Error returns a short description for logs (no value of the token).
func (e *TokenError) Error() string {
	if e.msg == "" {
		return "authctx: token refused: " + string(e.Code)
	}
	return e.msg
}

// Unwrap returns the verification sentinel the error refines, or nil.
func (e *TokenError) Unwrap() error { return e.err }

// tokenError builds a TokenError; msg defaults to the sentinel's text.
func tokenError(code problem.Code, sentinel error, msg, detail string) *TokenError {
	if msg == "" && sentinel != nil {
		msg = sentinel.Error()
	}
	return &TokenError{Code: code, Detail: detail, msg: msg, err: sentinel}
}

// invalidCredential is the TOKEN_INVALID error of a credential refused
// before verification (apikey, Authorization header): msg for logs,
// detail for the caller.
func invalidCredential(msg, detail string) error {
	return tokenError(problem.CodeTokenInvalid, nil, "authctx: "+msg, detail)
}

// Cause returns the stable code of an invalid state's cause: the Code of
// a [*TokenError] in Err (TOKEN_EXPIRED, TOKEN_ISSUER_MISMATCH, …),
// CLAIMS_INVALID or ACTOR_INVALID for those reasons, KEYS_NOT_LOADED while
// the signing keys have not loaded, and TOKEN_INVALID for any other
// invalid state (a custom resolver's). It returns "" for the other kinds.
// The Reason of the state stays ReasonToken for every TOKEN_ cause.
func (a Auth) Cause() problem.Code {
	if a.Kind != KindInvalid {
		return ""
	}
	switch a.Reason {
	case ReasonClaims:
		return problem.CodeClaimsInvalid
	case ReasonActor:
		return problem.CodeActorInvalid
	}
	if errors.Is(a.Err, ErrKeysNotLoaded) {
		return problem.CodeKeysNotLoaded
	}
	var te *TokenError
	if errors.As(a.Err, &te) {
		return te.Code
	}
	return problem.CodeTokenInvalid
}

// CauseDetail returns the Detail of a [*TokenError] in an invalid state's
// Err, else "". Like the problem body, it never holds a token, key or
// claim value besides the received issuer or audience.
func (a Auth) CauseDetail() string {
	var te *TokenError
	if a.Kind == KindInvalid && errors.As(a.Err, &te) {
		return te.Detail
	}
	return ""
}

// shown quotes a string taken from a token (issuer, audience, kid, alg)
// for a detail: at most n bytes (cut at a rune boundary, "…" appended),
// control and non-printable characters escaped.
func shown(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "…"
	}
	return strconv.Quote(s)
}

// roundAgo renders a duration for a detail: whole seconds, or
// milliseconds below a second.
func roundAgo(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// malformed refines a shape or header error of preShape/headerOf.
func malformed(err error) error {
	reason := strings.TrimPrefix(err.Error(), ErrTokenMalformed.Error()+": ")
	return tokenError(problem.CodeTokenMalformed, ErrTokenMalformed, err.Error(),
		"The credential is not a compact JWT ("+reason+"): send the access token — three base64url segments "+
			"separated by dots — as `Authorization: Bearer <token>`.")
}

// algRefused is the refusal of a token signed with an algorithm this
// verifier never accepts.
func algRefused(alg string) error {
	msg := fmt.Sprintf("%s: alg is not accepted (ES256, RS256 or EdDSA only)", ErrTokenMalformed)
	var detail string
	switch {
	case strings.HasPrefix(strings.ToUpper(alg), "HS"):
		detail = "The token is signed with " + shown(alg, 8) + ", a legacy shared JWT secret: tablegate never accepts " +
			"shared secrets and verifies only ES256, RS256 or EdDSA tokens against the project's public keys (JWKS). " +
			"Move the project to JWT signing keys (Supabase dashboard: Project Settings > JWT Keys; locally: " +
			"`supabase gen signing-key` and [auth] signing_keys_path; see " + SigningKeysDocs + "), then sign in again for a new token."
	case alg == "" || strings.EqualFold(alg, "none"):
		detail = "The token is unsigned (alg none or missing), which is never accepted: tablegate verifies only " +
			"ES256, RS256 or EdDSA tokens against the project's JWKS."
	default:
		detail = "The token's alg " + shown(alg, 16) + " is not accepted: tablegate verifies only ES256, RS256 or " +
			"EdDSA tokens against the project's JWKS."
	}
	return tokenError(problem.CodeTokenAlgorithmNotAccepted, ErrTokenMalformed, msg, detail)
}

// algOf returns the alg of a token's header ("" when it cannot be read).
// Only called on a refusal.
func algOf(token string) string {
	dot := strings.IndexByte(token, '.')
	if dot <= 0 || dot > 1024 {
		return ""
	}
	h, err := jwt.NewParser().DecodeSegment(token[:dot])
	if err != nil {
		return ""
	}
	var m struct {
		Alg any `json:"alg"`
	}
	if json.Unmarshal(h, &m) != nil {
		return ""
	}
	s, _ := m.Alg.(string)
	return s
}

// keySource describes where the verifier's keys come from, with how many
// keys it holds and, for a fetched JWKS, how long ago it was fetched.
// Only called on a refusal.
func (v *Verifier) keySource(ctx context.Context) string {
	if v.fetcher == nil {
		return "the inline JWKS"
	}
	f := v.fetcher
	s := "the JWKS at " + f.shown
	n := 0
	if keys, err := f.store.KeyReadAll(ctx); err == nil {
		n = len(keys)
	}
	s += " (" + strconv.Itoa(n) + " key"
	if n != 1 {
		s += "s"
	}
	if at := f.fetchedAt.Load(); at != 0 {
		s += ", fetched " + roundAgo(v.now().Sub(time.Unix(0, at))) + " ago"
	}
	s += "; an unknown key id re-fetches it at most once every " + f.every.String() + ")"
	if v.inline {
		s = "the inline JWKS or " + s
	}
	return s
}

// claimRefusal refines a claims error of the parser (the signature
// verified): expired, not yet valid, issuer, audience, else TOKEN_INVALID.
func (v *Verifier) claimRefusal(err error, claims jwt.MapClaims) error {
	skew := "the clock leeway is " + v.skew.String()
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		detail := "The token has expired"
		if exp, e := claims.GetExpirationTime(); e == nil && exp != nil {
			detail = "The token expired " + roundAgo(v.now().Sub(exp.Time)) + " ago"
		}
		return tokenError(problem.CodeTokenExpired, ErrTokenExpired, "",
			detail+"; "+skew+". Refresh the session (or sign in again) and retry with the new access token.")
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		detail := "The token is not valid yet (nbf)"
		if nbf, e := claims.GetNotBefore(); e == nil && nbf != nil {
			detail = "The token is not valid for another " + roundAgo(nbf.Time.Sub(v.now())) + " (nbf)"
		}
		return tokenError(problem.CodeTokenNotYetValid, ErrTokenClaims, ErrTokenClaims.Error()+": nbf is in the future",
			detail+"; "+skew+". Check that the clocks of the token's issuer and of this server agree.")
	case errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
		detail := "The token was issued in the future (iat)"
		if iat, e := claims.GetIssuedAt(); e == nil && iat != nil {
			detail = "The token was issued " + roundAgo(iat.Time.Sub(v.now())) + " in the future (iat)"
		}
		return tokenError(problem.CodeTokenNotYetValid, ErrTokenClaims, ErrTokenClaims.Error()+": iat is in the future",
			detail+"; "+skew+". Check that the clocks of the token's issuer and of this server agree.")
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing) && claims["exp"] != nil:
		// exp is there: the missing claim is the expected iss or aud.
		if _, ok := claims["iss"]; !ok && v.issuer != "" {
			return v.claimRefusal(jwt.ErrTokenInvalidIssuer, claims)
		}
		if _, ok := claims["aud"]; !ok && v.audience != "" {
			return v.claimRefusal(jwt.ErrTokenInvalidAudience, claims)
		}
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		got := "has no issuer (iss)"
		switch iss := claims["iss"].(type) {
		case string:
			got = "was issued by " + shown(iss, 120)
		case nil:
		default:
			got = "has an issuer (iss) that is not a string"
		}
		return tokenError(problem.CodeTokenIssuerMismatch, ErrTokenClaims, ErrTokenClaims.Error()+": iss does not match",
			"The token "+got+", but this server expects tokens issued by "+shown(v.issuer, 200)+
				": it comes from another project or auth server. If the expected issuer is wrong, set "+
				"SUPABASE_JWT_ISSUER (Config.Issuer).")
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		got := "has no audience (aud)"
		switch aud := claims["aud"].(type) {
		case string:
			got = "is for the audience " + shown(aud, 80)
		case []any:
			var names []string
			for i, a := range aud {
				if i == 4 {
					names = append(names, "…")
					break
				}
				if s, ok := a.(string); ok {
					names = append(names, shown(s, 80))
				}
			}
			if len(names) > 0 {
				got = "is for the audiences " + strings.Join(names, ", ")
			}
		case nil:
		default:
			got = "has an audience (aud) that is neither a string nor a list of strings"
		}
		return tokenError(problem.CodeTokenAudienceMismatch, ErrTokenClaims, ErrTokenClaims.Error()+": aud does not match",
			"The token "+got+", but this server expects the audience "+shown(v.audience, 80)+
				". If the expected audience is wrong, set SUPABASE_JWT_AUDIENCE (Config.Audience).")
	}
	reason := claimsReason(err)
	return tokenError(problem.CodeTokenInvalid, ErrTokenClaims, ErrTokenClaims.Error()+": "+reason,
		"The token's registered claims are not valid: "+reason+".")
}

// claimsInvalid is the TOKEN_INVALID refusal of a verified token whose
// claims break a rule checked after the parser (types, ranges, lifetime).
func claimsInvalid(reason string) error {
	return tokenError(problem.CodeTokenInvalid, ErrTokenClaims, ErrTokenClaims.Error()+": "+reason,
		"The token's claims are not valid: "+reason+".")
}

// keyRefusal refines an error of the key function (the alg was
// accepted): an unknown kid, no key for the alg, a key of another alg.
func (v *Verifier) keyRefusal(ctx context.Context, err error, hdr jwsHeader) error {
	switch {
	case errors.Is(err, ErrKeysNotLoaded):
		return fmt.Errorf("%w: %w", ErrTokenUnverifiable, ErrKeysNotLoaded)
	case errors.Is(err, errAlgKeyMismatch):
		return tokenError(problem.CodeTokenSignatureInvalid, ErrTokenUnverifiable, ErrTokenUnverifiable.Error()+": alg does not match the key",
			"The token's alg "+hdr.Alg+" does not fit the key with its key id "+shown(hdr.Kid, 64)+" in "+v.keySource(ctx)+
				": a token must be signed with the algorithm of its key.")
	case errors.Is(err, errNoKeyForAlg):
		return tokenError(problem.CodeTokenUnknownKey, ErrTokenUnverifiable, ErrTokenUnverifiable.Error()+": no key for the alg",
			"The token has no key id (kid) and no key of "+v.keySource(ctx)+" fits its alg "+hdr.Alg+
				": it was signed by another project or by a key this project no longer publishes.")
	}
	if hdr.Kid == "" {
		return tokenError(problem.CodeTokenUnknownKey, ErrTokenUnverifiable, ErrTokenUnverifiable.Error()+": no key",
			"No key of "+v.keySource(ctx)+" verifies the token, which names no key id (kid).")
	}
	return tokenError(problem.CodeTokenUnknownKey, ErrTokenUnverifiable, ErrTokenUnverifiable.Error()+": unknown kid",
		"No key of "+v.keySource(ctx)+" has the token's key id (kid) "+shown(hdr.Kid, 64)+
			": the token was signed by another project, or by a key this project no longer publishes. Sign in again "+
			"for a token of this project, or point SUPABASE_URL (or SUPABASE_JWKS_URL) at the project that issued it.")
}

// signatureRefusal is the refusal of a token whose key was found but
// whose signature does not verify.
func (v *Verifier) signatureRefusal(ctx context.Context, hdr jwsHeader) error {
	with := "with the key of key id " + shown(hdr.Kid, 64)
	if hdr.Kid == "" {
		with = "with any " + hdr.Alg + " key"
	}
	return tokenError(problem.CodeTokenSignatureInvalid, ErrTokenUnverifiable, "",
		"The token's signature does not verify "+with+" in "+v.keySource(ctx)+
			": the token was altered after signing, or signed by another key that carries the same key id.")
}
