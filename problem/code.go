package problem

import "net/http"

// Code is a stable, machine-readable error code carried in a problem's
// "code" field. The catalogue below is the single list every package and the
// OpenAPI generator read.
type Code string

// The catalogue of codes.
const (
	// CodeTokenInvalid: a credential did not verify (invalid/token).
	CodeTokenInvalid Code = "TOKEN_INVALID"
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
		{CodeTokenInvalid, http.StatusUnauthorized, KindUnauthorized, "The credential did not verify."},
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
