// Package migrations embeds tablegate's SQL migrations: the database half of
// the toolkit, one goose migration per module, each the final definition of
// every object it creates:
//
//	00001_roles.sql              anon, authenticated, service_role; goose's table closed to them
//	00002_auth_functions.sql     auth.uid(), auth.role(), auth.jwt() where missing
//	00003_claims.sql             schema tablegate, settings, claim helpers, anonymous sign-ins
//	00004_tenants.sql            tenants, memberships, tablegate.member_tenant and the
//	                             membership checks, enable_tenant_policies
//	00005_approvals.sql          approvals and their SECURITY DEFINER functions
//	00006_storage.sql            storage bucket policies (Supabase Storage)
//	00007_realtime.sql           tenant topics and change signals (Supabase Realtime)
//	00008_events.sql             the events outbox (tablegate.emit_event)
//	00009_access_token_hook.sql  tablegate.access_token_hook
//
// sql/schema.sql is what they create, as pg_dump prints it; make schema
// regenerates it and a test fails when it is stale, so every change to the
// SQL shows up in review as a diff of that file.
//
// From the first release on, migrations are only added, never edited: a
// database that applied a file never applies it again, so a change to a
// released file reaches no one who migrated before it. A change is a new
// file (00010_...) that alters or replaces what it must, with a Down that
// restores the previous definition.
//
// Apply them with db.Migrate, with the tablegate CLI (tablegate migrate up),
// or with the goose CLI directly:
//
//	goose -dir sql/migrations -table tablegate_migrations postgres "$DATABASE_URL" up
package migrations

import "embed"

// FS holds every migration file (NNNNN_module.sql).
//
//go:embed *.sql
var FS embed.FS
