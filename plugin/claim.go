package plugin

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// DefaultTenantClaim is the tenant claim when none is configured. Being one
// segment, it also falls back to app_metadata.tenant_id.
const DefaultTenantClaim = "tenant_id"

// ErrClaimPath is returned (wrapped) by [ValidateClaimPath], [NewTenant] and
// [SyncTenantClaim] for a tenant claim that is not a dotted path to a string
// claim.
var ErrClaimPath = errors.New("plugin: tenant claim must be a dotted path to a string claim")

// ErrTenantClaimMismatch is returned (wrapped in a [*TenantClaimMismatchError])
// by [CheckTenantClaim] when the database reads another tenant claim than
// the Go configuration.
var ErrTenantClaimMismatch = errors.New("plugin: the database reads another tenant claim than the Go configuration")

var claimPathRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62}){0,7}$`)

// nonStringClaims are claims that are never strings (JWT registered times,
// Supabase's amr, aud, is_anonymous, app_metadata itself).
var nonStringClaims = map[string]bool{
	"exp": true, "iat": true, "nbf": true, "auth_time": true, "aud": true,
	"amr": true, "is_anonymous": true, "app_metadata": true,
}

// ValidateClaimPath reports whether path may name the tenant claim: a dotted
// path of identifiers (at most 8 segments of at most 63 characters) to a
// string claim, not under user_metadata (users edit it), not a claim that is
// never a string (exp, iat, nbf, auth_time, aud, amr, is_anonymous,
// app_metadata) and not ending in roles or memberships (arrays by
// convention). tablegate.set_tenant_claim applies the same rules.
func ValidateClaimPath(path string) error {
	if !claimPathRE.MatchString(path) {
		return fmt.Errorf("%w: %q is not a dotted path of identifiers", ErrClaimPath, path)
	}
	segs := strings.Split(path, ".")
	switch last := segs[len(segs)-1]; {
	case segs[0] == "user_metadata":
		return fmt.Errorf("%w: %q is under user_metadata, which users can edit", ErrClaimPath, path)
	case nonStringClaims[path], last == "roles", last == "memberships":
		return fmt.Errorf("%w: %q is not a string claim", ErrClaimPath, path)
	}
	return nil
}

// uuidRE is the uuid text form tablegate.current_tenant_id() accepts.
var uuidRE = regexp.MustCompile(`^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`)

// TenantFromClaims returns the active tenant in claims at the dotted claim
// path, exactly as tablegate.current_tenant_id() reads it: the value at the
// path, or for a one-segment path, when that claim is absent or null, the
// same key under app_metadata; it counts only when it is a string holding a
// uuid, and is returned in lower case. ok is false otherwise.
func TenantFromClaims(claims authctx.Claims, path string) (tenant string, ok bool) {
	segs := strings.Split(path, ".")
	v, found := lookup(map[string]any(claims), segs)
	if !found && len(segs) == 1 {
		v, found = lookup(map[string]any(claims), []string{"app_metadata", segs[0]})
	}
	s, isString := v.(string)
	if !found || !isString || !uuidRE.MatchString(s) {
		return "", false
	}
	return strings.ToLower(s), true
}

// lookup walks m along segs; found is false for a missing or null value.
func lookup(m map[string]any, segs []string) (v any, found bool) {
	var cur any = m
	for _, s := range segs {
		obj, ok := asObject(cur)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[s]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

func asObject(v any) (map[string]any, bool) {
	switch o := v.(type) {
	case map[string]any:
		return o, true
	case authctx.Claims:
		return o, true
	}
	return nil, false
}

// SyncTenantClaim validates claim (empty means [DefaultTenantClaim]) and
// writes it into the database with tablegate.set_tenant_claim, so that
// current_tenant_id() and the tenant, storage and realtime policies read
// the claim the Go configuration names. q must be a privileged connection
// (the migrating role, e.g. a *pgxpool.Pool on DATABASE_URL): the API roles
// may not rename the claim.
func SyncTenantClaim(ctx context.Context, q db.Querier, claim string) error {
	if claim == "" {
		claim = DefaultTenantClaim
	}
	if err := ValidateClaimPath(claim); err != nil {
		return err
	}
	if _, err := q.Exec(ctx, "select tablegate.set_tenant_claim($1)", claim); err != nil {
		return fmt.Errorf("plugin: set tenant claim: %w", err)
	}
	return nil
}

// TenantClaimMismatchError says which claims disagree. It wraps
// [ErrTenantClaimMismatch].
type TenantClaimMismatchError struct {
	// Config is the claim the Go configuration names.
	Config string
	// Database is the claim tablegate.tenant_claim() returns.
	Database string
}

// Error implements error and says how to bring the two in line.
func (e *TenantClaimMismatchError) Error() string {
	return fmt.Sprintf("plugin: tenant claim is %q in the Go configuration but %q in the database (run plugin.SyncTenantClaim or select tablegate.set_tenant_claim(%s))",
		e.Config, e.Database, quoteLiteral(e.Config))
}

// Unwrap returns [ErrTenantClaimMismatch].
func (e *TenantClaimMismatchError) Unwrap() error { return ErrTenantClaimMismatch }

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// CheckTenantClaim returns nil when the database reads the tenant claim
// that claim names (empty means [DefaultTenantClaim]), and a
// [*TenantClaimMismatchError] when it reads another. Any role may run it.
func CheckTenantClaim(ctx context.Context, q db.Querier, claim string) error {
	if claim == "" {
		claim = DefaultTenantClaim
	}
	var got string
	if err := q.QueryRow(ctx, "select tablegate.tenant_claim()").Scan(&got); err != nil {
		return fmt.Errorf("plugin: read tenant claim: %w", err)
	}
	if got != claim {
		return &TenantClaimMismatchError{Config: claim, Database: got}
	}
	return nil
}
