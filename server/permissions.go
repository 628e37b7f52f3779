package server

import (
	"context"
	"slices"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/rest"
)

// permissions is the authorizer of the config's "permissions": each key
// granted by authz.Role to callers whose roles claim holds one of the
// listed roles, and to service callers when the list holds "service". A
// key the config does not list denies every caller. It is safe for
// concurrent use.
type permissions struct {
	roles   map[string][]string
	claims  *authz.Authorizer
	service map[string]bool
}

// newPermissions builds the authorizer of the permissions section.
func newPermissions(grants map[string][]string) (*permissions, error) {
	rules := authz.Rules{}
	p := &permissions{roles: grants, service: map[string]bool{}}
	for key, roles := range grants {
		if len(roles) > 0 {
			rules[key] = authz.Role(roles...)
		}
		p.service[key] = slices.Contains(roles, "service")
	}
	// Service callers hold no claims: they are decided here, by the
	// "service" entry, never by a rule.
	claims, err := authz.Claims(rules, &authz.Config{DenyServices: true})
	if err != nil {
		return nil, err
	}
	p.claims = claims
	return p, nil
}

// Authorize implements rest.Authorizer.
func (p *permissions) Authorize(ctx context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	if req.Caller.Kind == authctx.KindService {
		return p.serviceDecision(req.Permission), nil
	}
	return p.claims.Authorize(ctx, req)
}

// AuthorizeRows implements rest.Authorizer.
func (p *permissions) AuthorizeRows(ctx context.Context, req *rest.AuthzRequest, rows []rest.Row) ([]rest.Decision, error) {
	if req.Caller.Kind == authctx.KindService {
		out := make([]rest.Decision, len(rows))
		for i := range out {
			out[i] = p.serviceDecision(req.Permission)
		}
		return out, nil
	}
	return p.claims.AuthorizeRows(ctx, req, rows)
}

func (p *permissions) serviceDecision(key string) rest.Decision {
	if p.service[key] {
		return rest.Allowed()
	}
	return rest.Denied()
}

// DescribePermission implements spec.PermissionDescriber.
func (p *permissions) DescribePermission(key string) string {
	roles := p.roles[key]
	if len(roles) == 0 {
		return "Granted to nobody (no roles listed in the config)."
	}
	return "Granted to callers whose roles claim holds " + strings.Join(roles, " or ") + "."
}
