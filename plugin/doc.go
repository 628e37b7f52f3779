// Package plugin holds resource plugins that fill columns from the verified
// caller instead of the request body: [Tenant] (the caller's active tenant)
// and [Actor] (created-by and updated-by).
//
// # With package rest
//
// [NewResource] builds a [rest.Resource] with plugins and refuses to build it when the
// table lacks a column a plugin writes; [With] applies plugins to
// [rest.Config] for [rest.NewResources]. Plugins compose with the
// application's hooks: they run before its BeforeCreateFunc and
// BeforeUpdateFunc (which see the filled values) and again after them.
//
//	tenant, err := plugin.NewTenant(&plugin.TenantConfig{Claim: "app_metadata.org_id"})
//	todos, err := plugin.NewResource(ctx, d, "todos", &rest.Config{Hooks: hooks},
//		tenant, plugin.NewActor(nil))
//
// # One tenant claim
//
// The active tenant is read from one configurable claim, a dotted path such
// as tenant_id (the default; it falls back to app_metadata.tenant_id) or
// app_metadata.org_id. The database reads the same claim in
// tablegate.current_tenant_id(), which the tenant, storage and realtime
// policies call. [SyncTenantClaim] writes the Go setting into the database
// and [CheckTenantClaim] tells when the two disagree, so one setting renames
// the claim for the plugin and every policy together:
//
//	cfg := &plugin.TenantConfig{Claim: "app_metadata.org_id"}
//	if err := plugin.SyncTenantClaim(ctx, pool, cfg.Claim); err != nil { … }
//	tenant, err := plugin.NewTenant(cfg)
//
// # Rules
//
// [Tenant] fills the tenant column on create from the caller's active tenant
// and refuses a body that names another tenant with 403 TENANT_MISMATCH; a
// user without an active tenant gets 403 TENANT_REQUIRED. Service callers
// (no claims) are left alone: they name the tenant in the body. Row-level
// security stays the rule that decides; the plugin saves the client from
// sending the tenant and turns a cross-tenant body into a clear error.
//
// [Actor] stamps the created-by and updated-by columns with the actor: the
// user id (also for anonymous sign-ins), the service key name, or NULL for a
// caller without a session. The body can never set them.
package plugin
