package plugin_test

import (
	"errors"
	"maps"
	"net/http"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/plugin"
	"github.com/tablegate/tablegate/problem"
)

const (
	tenantA = "aaaaaaaa-0000-4000-8000-000000000001"
	tenantB = "bbbbbbbb-0000-4000-8000-000000000002"
	userA1  = "a1a1a1a1-0000-4000-8000-0000000000a1"
	guestA  = "9a9a9a9a-0000-4000-8000-00000000009a"
)

func userCtx(claims authctx.Claims) authctx.Auth {
	return authctx.NewUser(claims, "tok", nil)
}

var (
	noSession = authctx.Anon(authctx.ReasonNone)
	service   = authctx.Service("svc")
)

func TestNewTenant(t *testing.T) {
	t.Parallel()
	tp, err := plugin.NewTenant(nil)
	if err != nil || tp.Claim() != "tenant_id" || tp.Column() != "tenant_id" {
		t.Fatalf("defaults: %v %v", tp, err)
	}
	tp, err = plugin.NewTenant(&plugin.TenantConfig{Claim: "app_metadata.org_id", Column: "org"})
	if err != nil || tp.Claim() != "app_metadata.org_id" || tp.Column() != "org" {
		t.Fatalf("configured: %v %v", tp, err)
	}
	for _, bad := range []string{"user_metadata.org", "app_metadata..org", "exp", "roles"} {
		if _, err := plugin.NewTenant(&plugin.TenantConfig{Claim: bad}); !errors.Is(err, plugin.ErrClaimPath) {
			t.Errorf("claim %q: %v", bad, err)
		}
	}
}

// wantProblem checks err is a problem with status and code, naming no value.
func wantProblem(t *testing.T, err error, status int, code problem.Code) {
	t.Helper()
	p, ok := problem.As(err)
	if !ok || p.Status != status || p.Code != code {
		t.Fatalf("error %v, want %d %s", err, status, code)
	}
	for _, s := range []string{tenantA, tenantB} {
		if containsString(p.Detail, s) || (len(p.Errors) > 0 && containsString(p.Errors[0].Message, s)) {
			t.Fatalf("problem leaks a tenant id: %+v", p)
		}
	}
}

func containsString(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestTenantCreate(t *testing.T) {
	t.Parallel()
	tp, _ := plugin.NewTenant(nil)
	full := userCtx(authctx.Claims{"sub": userA1, "tenant_id": tenantA})
	viaMeta := userCtx(authctx.Claims{"sub": userA1, "app_metadata": map[string]any{"tenant_id": tenantA}})
	guest := userCtx(authctx.Claims{"sub": guestA, "tenant_id": tenantA, "is_anonymous": true})

	for _, tc := range []struct {
		name string
		c    authctx.Auth
		body map[string]any
		want map[string]any
	}{
		{"fills", full, map[string]any{"title": "x"}, map[string]any{"title": "x", "tenant_id": tenantA}},
		{"fills from app_metadata", viaMeta, map[string]any{"title": "x"}, map[string]any{"title": "x", "tenant_id": tenantA}},
		{"same tenant named", full, map[string]any{"tenant_id": tenantA}, map[string]any{"tenant_id": tenantA}},
		{"same tenant in upper case", full, map[string]any{"tenant_id": "AAAAAAAA-0000-4000-8000-000000000001"}, map[string]any{"tenant_id": tenantA}},
		{"nil body", full, nil, map[string]any{"tenant_id": tenantA}},
		{"anonymous sign-in is filled too (policies refuse its write)", guest, map[string]any{}, map[string]any{"tenant_id": tenantA}},
		{"service names the tenant", service, map[string]any{"tenant_id": tenantB}, map[string]any{"tenant_id": tenantB}},
		{"service without tenant", service, map[string]any{"title": "x"}, map[string]any{"title": "x"}},
	} {
		in := maps.Clone(tc.body)
		got, err := tp.BeforeCreate(tc.c, tc.body)
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
		if !maps.Equal(in, tc.body) {
			t.Errorf("%s: input modified", tc.name)
		}
	}

	for _, tc := range []struct {
		name string
		c    authctx.Auth
		body map[string]any
		code problem.Code
	}{
		{"other tenant", full, map[string]any{"tenant_id": tenantB}, problem.CodeTenantMismatch},
		{"non-string tenant", full, map[string]any{"tenant_id": 1}, problem.CodeTenantMismatch},
		{"null tenant", full, map[string]any{"tenant_id": nil}, problem.CodeTenantMismatch},
		{"user without tenant", userCtx(authctx.Claims{"sub": userA1}), map[string]any{}, problem.CodeTenantRequired},
		{"user with a non-uuid tenant", userCtx(authctx.Claims{"sub": userA1, "tenant_id": "acme"}), map[string]any{"tenant_id": "acme"}, problem.CodeTenantRequired},
		{"no session", noSession, map[string]any{}, problem.CodeTenantRequired},
	} {
		_, err := tp.BeforeCreate(tc.c, tc.body)
		t.Run(tc.name, func(t *testing.T) { wantProblem(t, err, http.StatusForbidden, tc.code) })
	}
	_, err := tp.BeforeCreate(full, map[string]any{"tenant_id": tenantB})
	p, _ := problem.As(err)
	if len(p.Errors) != 1 || p.Errors[0].Path != "/tenant_id" {
		t.Fatalf("mismatch names path: %+v", p.Errors)
	}
}

func TestTenantUpdate(t *testing.T) {
	t.Parallel()
	tp, _ := plugin.NewTenant(&plugin.TenantConfig{Claim: "app_metadata.org_id", Column: "org_id"})
	full := userCtx(authctx.Claims{"sub": userA1, "tenant_id": tenantB, "app_metadata": map[string]any{"org_id": tenantA}})
	got, err := tp.BeforeUpdate(full, map[string]any{"title": "y"})
	if err != nil || !maps.Equal(got, map[string]any{"title": "y"}) {
		t.Fatalf("body without tenant: %v %v", got, err)
	}
	got, err = tp.BeforeUpdate(full, map[string]any{"org_id": "AAAAAAAA-0000-4000-8000-000000000001"})
	if err != nil || got["org_id"] != tenantA {
		t.Fatalf("own tenant: %v %v", got, err)
	}
	_, err = tp.BeforeUpdate(full, map[string]any{"org_id": tenantB})
	wantProblem(t, err, http.StatusForbidden, problem.CodeTenantMismatch)
	_, err = tp.BeforeUpdate(userCtx(authctx.Claims{"sub": userA1}), map[string]any{"org_id": tenantA})
	wantProblem(t, err, http.StatusForbidden, problem.CodeTenantRequired)
	if got, err := tp.BeforeUpdate(service, map[string]any{"org_id": tenantB}); err != nil || got["org_id"] != tenantB {
		t.Fatalf("service: %v %v", got, err)
	}
}

func TestProblemCodesCatalogued(t *testing.T) {
	t.Parallel()
	for _, c := range []problem.Code{problem.CodeTenantMismatch, problem.CodeTenantRequired} {
		info, ok := c.Info()
		if !ok || info.Status != http.StatusForbidden || info.Kind != problem.KindForbidden {
			t.Errorf("%s: %+v %v", c, info, ok)
		}
	}
}
