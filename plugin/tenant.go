package plugin

import (
	"maps"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// DefaultTenantColumn is the tenant column when none is configured.
const DefaultTenantColumn = "tenant_id"

// TenantConfig configures the tenant plugin: which claim holds the
// caller's tenant and which column stores it. The zero value reads claim tenant_id (falling back to
// app_metadata.tenant_id) into column tenant_id.
type TenantConfig struct {
	// Claim is the dotted path of the tenant claim, e.g.
	// "app_metadata.org_id". Default [DefaultTenantClaim]. It must pass
	// [ValidateClaimPath]. Mirror it into the database with
	// [SyncTenantClaim].
	Claim string
	// Column is the table's tenant column. Default [DefaultTenantColumn].
	Column string
}

// Tenant fills and checks the tenant column of create and update bodies.
// Build it with [NewTenant]. A Tenant is immutable and safe for concurrent
// use.
type Tenant struct {
	claim  string
	column string
}

// NewTenant validates cfg (nil for the defaults) and returns the plugin.
// An invalid claim path returns an error wrapping [ErrClaimPath]: the
// resource is never built with a claim the database would refuse.
func NewTenant(cfg *TenantConfig) (*Tenant, error) {
	if cfg == nil {
		cfg = &TenantConfig{}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	t := &Tenant{claim: cfg.Claim, column: cfg.Column}
	if t.claim == "" {
		t.claim = DefaultTenantClaim
	}
	if t.column == "" {
		t.column = DefaultTenantColumn
	}
	return t, nil
}

// validate checks the claim path (empty means [DefaultTenantClaim]).
func (c *TenantConfig) validate() error {
	if c.Claim == "" {
		return nil
	}
	return ValidateClaimPath(c.Claim)
}

// Claim returns the tenant claim path.
func (t *Tenant) Claim() string { return t.claim }

// Column returns the tenant column.
func (t *Tenant) Column() string { return t.column }

// Columns returns the column the plugin writes (the tenant column) and no
// read-only column: a body may name the tenant, as long as it is the
// caller's. It implements [Plugin].
func (t *Tenant) Columns() (write, readOnly []string) { return []string{t.column}, nil }

// ActiveTenant returns the caller's active tenant, read like
// tablegate.current_tenant_id() (see [TenantFromClaims]). Callers other than
// users have none.
func (t *Tenant) ActiveTenant(c authctx.Auth) (string, bool) {
	if c.Actor().Type != authctx.KindUser {
		return "", false
	}
	return TenantFromClaims(c.Claims(), t.claim)
}

// BeforeCreate returns the create body with the tenant column set to the
// caller's active tenant. A body naming the same tenant (in any letter
// case) is accepted; one naming another tenant, or a non-string, answers
// 403 TENANT_MISMATCH; a caller other than a service without an active
// tenant answers 403 TENANT_REQUIRED. A service caller's body is returned
// as is. data is not modified.
func (t *Tenant) BeforeCreate(c authctx.Auth, data rest.Row) (rest.Row, error) {
	if c.Actor().Type == authctx.KindService {
		return data, nil
	}
	active, ok := t.ActiveTenant(c)
	if !ok {
		return nil, t.required()
	}
	if v, named := data[t.column]; named && !sameTenant(v, active) {
		return nil, t.mismatch()
	}
	out := maps.Clone(data)
	if out == nil {
		out = rest.Row{}
	}
	out[t.column] = active
	return out, nil
}

// BeforeUpdate checks an update body: naming the caller's own tenant is
// accepted (normalized to lower case), naming another answers 403
// TENANT_MISMATCH (rows never move between tenants through the API), and a
// body that does not name the tenant is returned as is. Service callers
// are left alone. data is not modified.
func (t *Tenant) BeforeUpdate(c authctx.Auth, data rest.Row) (rest.Row, error) {
	v, named := data[t.column]
	if !named || c.Actor().Type == authctx.KindService {
		return data, nil
	}
	active, ok := t.ActiveTenant(c)
	if !ok {
		return nil, t.required()
	}
	if !sameTenant(v, active) {
		return nil, t.mismatch()
	}
	out := maps.Clone(data)
	out[t.column] = active
	return out, nil
}

func sameTenant(v any, active string) bool {
	s, ok := v.(string)
	return ok && strings.EqualFold(s, active)
}

func (t *Tenant) mismatch() *problem.Problem {
	p := problem.WithCode(problem.CodeTenantMismatch, "The body names a tenant other than the caller's active tenant.")
	p.Errors = []problem.FieldError{{Path: "/" + pointerEscape(t.column), Message: "is not the caller's active tenant"}}
	return p
}

func (t *Tenant) required() *problem.Problem {
	return problem.WithCode(problem.CodeTenantRequired,
		"The caller has no active tenant: claim "+t.claim+" is missing or not a uuid.")
}

// pointerEscape escapes a JSON Pointer segment (RFC 6901).
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
