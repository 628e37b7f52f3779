// Package migrations embeds tablegate's SQL migrations: the database half of
// the toolkit (roles, auth.* compatibility functions, the tablegate schema
// with current_tenant_id(), tenants, memberships and their helpers).
//
// The files are goose migrations. Apply them with db.Migrate, with the
// tablegate CLI (tablegate migrate up), or with the goose CLI directly:
//
//	goose -dir sql/migrations postgres "$DATABASE_URL" up
package migrations

import "embed"

// FS holds every migration file (NNNNN_verb_noun.sql).
//
//go:embed *.sql
var FS embed.FS
