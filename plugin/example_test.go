package plugin_test

import (
	"fmt"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/plugin"
	"github.com/tablegate/tablegate/problem"
)

func ExampleNewTenant() {
	tenant, err := plugin.NewTenant(&plugin.TenantConfig{Claim: "app_metadata.org_id"})
	if err != nil {
		panic(err)
	}
	caller := authctx.NewUser(authctx.Claims{
		"sub":          "a1a1a1a1-0000-4000-8000-0000000000a1",
		"app_metadata": map[string]any{"org_id": "aaaaaaaa-0000-4000-8000-000000000001"},
	}, "token", nil)

	body, _ := tenant.BeforeCreate(caller, map[string]any{"title": "Buy milk"})
	fmt.Println(body["tenant_id"])

	_, err = tenant.BeforeCreate(caller, map[string]any{"tenant_id": "bbbbbbbb-0000-4000-8000-000000000002"})
	p, _ := problem.As(err)
	fmt.Println(p.Status, p.Code)

	_, err = plugin.NewTenant(&plugin.TenantConfig{Claim: "user_metadata.org_id"})
	fmt.Println(err)
	// Output:
	// aaaaaaaa-0000-4000-8000-000000000001
	// 403 TENANT_MISMATCH
	// plugin: tenant claim must be a dotted path to a string claim: "user_metadata.org_id" is under user_metadata, which users can edit
}

func ExampleNewActor() {
	actor := plugin.NewActor(nil)
	caller := authctx.Service("billing")
	body, _ := actor.BeforeCreate(caller, map[string]any{"title": "Invoice", "created_by": "someone else"})
	fmt.Println(body["created_by"], body["updated_by"])
	// Output: billing billing
}
