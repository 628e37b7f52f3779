package problem

import "net/http"

// Code is a stable, machine-readable error code carried in a problem's
// "code" field. The catalogue below is the single list every package and the
// OpenAPI generator read.
type Code string

// The catalogue of codes.
const (
	// CodeTokenInvalid: a credential did not verify (invalid/token) for a
	// cause no more specific TOKEN_ code names: an apikey that is not a
	// configured key, an Authorization scheme other than Bearer, a
	// registered claim of the wrong type, a token without sub.
	CodeTokenInvalid Code = "TOKEN_INVALID"
	// CodeTokenExpired: the token's exp passed longer ago than the clock
	// leeway (invalid/token); the detail says how long ago.
	CodeTokenExpired Code = "TOKEN_EXPIRED"
	// CodeTokenNotYetValid: the token's nbf or iat lies further in the
	// future than the clock leeway (invalid/token).
	CodeTokenNotYetValid Code = "TOKEN_NOT_YET_VALID"
	// CodeTokenIssuerMismatch: the token's iss is not the expected issuer
	// (invalid/token); the detail names both.
	CodeTokenIssuerMismatch Code = "TOKEN_ISSUER_MISMATCH"
	// CodeTokenAudienceMismatch: the token's aud lacks the expected
	// audience (invalid/token); the detail names both.
	CodeTokenAudienceMismatch Code = "TOKEN_AUDIENCE_MISMATCH"
	// CodeTokenUnknownKey: no key of the JWKS has the token's key id (kid),
	// or none fits its alg (invalid/token).
	CodeTokenUnknownKey Code = "TOKEN_UNKNOWN_KEY"
	// CodeTokenSignatureInvalid: the key named by the token does not
	// verify its signature (invalid/token).
	CodeTokenSignatureInvalid Code = "TOKEN_SIGNATURE_INVALID"
	// CodeTokenAlgorithmNotAccepted: the token is signed with an algorithm
	// other than ES256, RS256 or EdDSA, such as a legacy HS256 JWT secret
	// (invalid/token).
	CodeTokenAlgorithmNotAccepted Code = "TOKEN_ALGORITHM_NOT_ACCEPTED"
	// CodeTokenMalformed: the credential is not a compact JWT
	// (invalid/token).
	CodeTokenMalformed Code = "TOKEN_MALFORMED"
	// CodeKeysNotLoaded: a token could not be checked because the signing
	// keys have not loaded yet (the JWKS has not answered since start); a
	// 503 with Retry-After, never a 401.
	CodeKeysNotLoaded Code = "KEYS_NOT_LOADED"
	// CodeClaimsInvalid: verified claims failed the claims schema (invalid/claims).
	CodeClaimsInvalid Code = "CLAIMS_INVALID"
	// CodeActorInvalid: a malformed RFC 8693 act chain (invalid/actor).
	CodeActorInvalid Code = "ACTOR_INVALID"
	// CodeAuthRequired: no session where the guard requires one.
	CodeAuthRequired Code = "AUTH_REQUIRED"
	// CodeAnonymousUser: an anonymous sign-in refused by the guard.
	CodeAnonymousUser Code = "ANONYMOUS_USER"
	// CodeCallerNotAllowed: a caller kind the guard does not admit (e.g. a
	// full user on an anonymous-only route).
	CodeCallerNotAllowed Code = "CALLER_NOT_ALLOWED"
	// CodeCrossSiteRequest: a cross-site request relying on the session cookie.
	CodeCrossSiteRequest Code = "CROSS_SITE_REQUEST"
	// CodePermissionDenied: the authorizer refused.
	CodePermissionDenied Code = "PERMISSION_DENIED"
	// CodeApprovalRequired: the authorizer requires an approval first.
	CodeApprovalRequired Code = "APPROVAL_REQUIRED"
	// CodeTenantRequired: the tenant plugin found no active tenant in the
	// caller's claims.
	CodeTenantRequired Code = "TENANT_REQUIRED"
	// CodeTenantMismatch: the body names a tenant other than the caller's
	// active tenant (tenant plugin).
	CodeTenantMismatch Code = "TENANT_MISMATCH"
)

// CodeInfo documents one catalogued code.
type CodeInfo struct {
	Code   Code
	Status int
	Kind   Kind
	// Description says when the code is produced.
	Description string
}

// Catalogue returns every catalogued code in a stable order.
func Catalogue() []CodeInfo {
	return []CodeInfo{
		{CodeTokenInvalid, http.StatusUnauthorized, KindUnauthorized, "The credential did not verify; the detail says why."},
		{CodeTokenExpired, http.StatusUnauthorized, KindUnauthorized, "The token expired longer ago than the clock leeway (30 s by default); refresh the session."},
		{CodeTokenNotYetValid, http.StatusUnauthorized, KindUnauthorized, "The token's nbf or iat lies in the future beyond the clock leeway; check the clocks."},
		{CodeTokenIssuerMismatch, http.StatusUnauthorized, KindUnauthorized, "The token's issuer (iss) is not the expected one; the detail names both."},
		{CodeTokenAudienceMismatch, http.StatusUnauthorized, KindUnauthorized, "The token's audience (aud) lacks the expected one; the detail names both."},
		{CodeTokenUnknownKey, http.StatusUnauthorized, KindUnauthorized, "No key of the JWKS has the token's key id (kid): another project's or a retired key."},
		{CodeTokenSignatureInvalid, http.StatusUnauthorized, KindUnauthorized, "The token's signature does not verify with the key it names."},
		{CodeTokenAlgorithmNotAccepted, http.StatusUnauthorized, KindUnauthorized, "The token's alg is not ES256, RS256 or EdDSA (a legacy HS256 secret is never accepted)."},
		{CodeTokenMalformed, http.StatusUnauthorized, KindUnauthorized, "The credential is not a compact JWT."},
		{CodeKeysNotLoaded, http.StatusServiceUnavailable, KindUnavailable, "The signing keys have not loaded yet; retry after Retry-After."},
		{CodeClaimsInvalid, http.StatusUnauthorized, KindUnauthorized, "The verified claims failed the claims schema; errors name the failing paths."},
		{CodeActorInvalid, http.StatusUnauthorized, KindUnauthorized, "The token's act (actor) chain is malformed."},
		{CodeAuthRequired, http.StatusUnauthorized, KindUnauthorized, "The route requires a signed-in caller."},
		{CodeAnonymousUser, http.StatusForbidden, KindForbidden, "Anonymous sign-ins are not admitted here."},
		{CodeCallerNotAllowed, http.StatusForbidden, KindForbidden, "This kind of caller is not admitted here."},
		{CodeCrossSiteRequest, http.StatusForbidden, KindForbidden, "A cross-site request relied on the session cookie."},
		{CodePermissionDenied, http.StatusForbidden, KindForbidden, "The authorizer refused the permission named in 'permission'."},
		{CodeApprovalRequired, http.StatusForbidden, KindForbidden, "The permission needs an approval first; 'approval.id' names it."},
		{CodeTenantRequired, http.StatusForbidden, KindForbidden, "The caller has no active tenant; the tenant claim is missing or not a uuid."},
		{CodeTenantMismatch, http.StatusForbidden, KindForbidden, "The body names a tenant other than the caller's active tenant."},
	}
}

// Info returns the catalogue entry of c.
func (c Code) Info() (CodeInfo, bool) {
	for _, i := range Catalogue() {
		if i.Code == c {
			return i, true
		}
	}
	return CodeInfo{}, false
}

// WithCode returns a problem for a catalogued code with a detail message.
// An unknown code gives a 500 of kind unexpected carrying that code.
func WithCode(c Code, detail string) *Problem {
	info, ok := c.Info()
	if !ok {
		info = CodeInfo{Code: c, Kind: KindUnexpected, Status: http.StatusInternalServerError}
	}
	p := New(info.Kind, detail)
	p.Status = info.Status
	p.Code = c
	return p
}

// PermissionDenied returns the 403 PERMISSION_DENIED problem for a key.
func PermissionDenied(permission string) *Problem {
	p := WithCode(CodePermissionDenied, "The caller lacks permission "+permission+".")
	p.Permission = permission
	return p
}

// ApprovalRequired returns the 403 APPROVAL_REQUIRED problem for a key and
// the id of the approval the request waits for.
func ApprovalRequired(permission, approvalID string) *Problem {
	p := WithCode(CodeApprovalRequired, "Permission "+permission+" needs an approval first.")
	p.Permission = permission
	p.Approval = &Approval{ID: approvalID}
	return p
}
