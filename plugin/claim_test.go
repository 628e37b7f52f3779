package plugin_test

import (
	"errors"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/plugin"
)

func TestValidateClaimPath(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"tenant_id", "app_metadata.org_id", "org", "a.b.c.d.e.f.g.h", "_x.y1", "sub", "app_metadata.tenant_id",
		"app_metadata.roles_id"} {
		if err := plugin.ValidateClaimPath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "a.", ".a", "a..b", "1a", "a-b", "a b", "a.b.c.d.e.f.g.h.i", "app_metadata['x']",
		"user_metadata.tenant_id", "user_metadata", "exp", "iat", "nbf", "aud", "amr", "is_anonymous", "app_metadata",
		"roles", "app_metadata.roles", "memberships", "auth_time", "ä", string(make([]byte, 64))} {
		err := plugin.ValidateClaimPath(bad)
		if !errors.Is(err, plugin.ErrClaimPath) {
			t.Errorf("%q: %v, want ErrClaimPath", bad, err)
		}
	}
	long := "a"
	for len(long) < 63 {
		long += "b"
	}
	if err := plugin.ValidateClaimPath(long); err != nil {
		t.Errorf("63-character segment: %v", err)
	}
	if err := plugin.ValidateClaimPath(long + "c"); err == nil {
		t.Error("64-character segment accepted")
	}
}

func TestTenantFromClaims(t *testing.T) {
	t.Parallel()
	const a = "aaaaaaaa-0000-4000-8000-000000000001"
	const b = "bbbbbbbb-0000-4000-8000-000000000002"
	for _, tc := range []struct {
		name   string
		claims authctx.Claims
		path   string
		want   string
	}{
		{"top level", authctx.Claims{"tenant_id": a}, "tenant_id", a},
		{"app_metadata fallback", authctx.Claims{"app_metadata": map[string]any{"tenant_id": b}}, "tenant_id", b},
		{"top level wins", authctx.Claims{"tenant_id": a, "app_metadata": map[string]any{"tenant_id": b}}, "tenant_id", a},
		{"null top level falls back", authctx.Claims{"tenant_id": nil, "app_metadata": map[string]any{"tenant_id": b}}, "tenant_id", b},
		{"non-string top level does not fall back", authctx.Claims{"tenant_id": 7, "app_metadata": map[string]any{"tenant_id": b}}, "tenant_id", ""},
		{"not a uuid", authctx.Claims{"tenant_id": "acme"}, "tenant_id", ""},
		{"upper case is lowered", authctx.Claims{"tenant_id": "AAAAAAAA-0000-4000-8000-000000000001"}, "tenant_id", a},
		{"never user_metadata", authctx.Claims{"user_metadata": map[string]any{"tenant_id": a}}, "tenant_id", ""},
		{"nested path", authctx.Claims{"app_metadata": map[string]any{"org_id": b}, "tenant_id": a}, "app_metadata.org_id", b},
		{"nested path, no fallback to top", authctx.Claims{"tenant_id": a}, "app_metadata.org_id", ""},
		{"nested path through a non-object", authctx.Claims{"app_metadata": "x"}, "app_metadata.org_id", ""},
		{"nested Claims map", authctx.Claims{"app_metadata": authctx.Claims{"org_id": b}}, "app_metadata.org_id", b},
		{"two-segment path does not fall back", authctx.Claims{"app_metadata": map[string]any{"x": map[string]any{"org": a}}}, "x.org", ""},
		{"nil claims", nil, "tenant_id", ""},
	} {
		got, ok := plugin.TenantFromClaims(tc.claims, tc.path)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("%s: %q %v, want %q", tc.name, got, ok, tc.want)
		}
	}
}

func TestTenantClaimMismatchError(t *testing.T) {
	t.Parallel()
	err := error(&plugin.TenantClaimMismatchError{Config: "app_metadata.org_id", Database: "tenant_id"})
	if !errors.Is(err, plugin.ErrTenantClaimMismatch) {
		t.Fatal("does not wrap ErrTenantClaimMismatch")
	}
	want := `plugin: tenant claim is "app_metadata.org_id" in the Go configuration but "tenant_id" in the database (run plugin.SyncTenantClaim or select tablegate.set_tenant_claim('app_metadata.org_id'))`
	if err.Error() != want {
		t.Fatalf("message:\n%s", err)
	}
}
