// Package dataapi serves PostgREST's wire format — what supabase-js,
// supabase-py, supabase-flutter, supabase-swift, supabase-kt and the other
// Supabase clients speak — as a second front on tablegate's pipeline: the
// same caller resolution (authctx middleware), the same caller-bound
// database work (package db: role and claims set in the transaction,
// statement timeout, per-caller share of the pool), so row-level security
// decides every row, and the same permissions and hooks for tables
// declared as rest resources. Only the grammar and the response shape
// differ from the native routes.
//
// Mount an [API] under /rest/v1 (where supabase-js looks) behind the
// resolver's middleware:
//
//	api, err := dataapi.New(ctx, &dataapi.Config{DB: d, Tables: map[string]*dataapi.Table{
//		"public.todos": {Resource: todos, Allow: []authctx.Allow{authctx.AllowUser}},
//	}})
//	mux.Handle("/rest/v1/", http.StripPrefix("/rest/v1", rv.Middleware(rv.CrossSite(api))))
//
// tablegate serve does the same with the config key "data_api".
//
// # Reads
//
// GET and HEAD /{table} take select= (columns, alias:column, casts such
// as ::text, JSON paths -> and ->>, quoted names, *, embedded resources),
// every PostgREST filter operator (eq neq gt gte lt lte like ilike match
// imatch in is isdistinct cs cd ov sl sr nxl nxr adj fts plfts phfts wfts,
// the (any)/(all) modifiers, not.), or=/and= trees, order=, limit=,
// offset=, the Range header, Prefer: count=exact|planned|estimated with
// Content-Range (206 for part of a counted set) and Accept:
// application/vnd.pgrst.object+json. A read is one SQL statement sent with
// the caller's settings in one round trip (count=planned, and estimated
// above Config.MaxRows, add the planner's estimate as a second one).
//
// # Embedding
//
// Embedded resources follow the foreign keys between tables of the
// exposed schemas: to-one, to-many, one-to-one, many-to-many through a
// junction table, disambiguated with !hint (constraint, column or
// junction name), !inner, empty embeds and filters, order and limit on
// embedded resources. They are subqueries of the one statement, read as
// the caller, so each embedded table's row-level security applies.
//
// # Writes
//
// POST inserts one object, an array or the lines of a text/csv body in
// one statement; Prefer:
// return=minimal|headers-only|representation, missing=default,
// resolution=merge-duplicates|ignore-duplicates with on_conflict=,
// count=exact, tx=rollback and handling=strict with max-affected apply,
// and Preference-Applied names the ones applied. PATCH and DELETE take
// filters; the caller's row-level security bounds them.
//
// A declared table (Config.Tables) keeps its resource's select columns,
// guard and served operations; an insert checks the create permission and
// runs Hooks.AuthorizeFunc and Hooks.BeforeCreateFunc for every row
// inside the insert's transaction; a filtered update or delete reads the
// matched rows under RLS and runs the permission, AuthorizeFunc and the
// Before hook for each before writing exactly those rows. After hooks
// run in the same transaction: AfterCreateFunc and AfterUpdateFunc on
// every written row, AfterListFunc on the page read (AfterGetFunc on each
// row of a table serving get only); what they return is answered. PUT on
// such a table is an update of the row the caller sees, else a create,
// each with its permission and hooks. A decision needing an approval
// answers APPROVAL_REQUIRED; Decision.Then runs after the transaction, as
// on the native routes.
//
// # Read replicas
//
// With read replicas (db.Config.Replicas) reads run on a replica, and
// writes answer the Tablegate-Position header (and cookie, for a cookie
// session) that the caller's next reads carry to see them, as on the
// native routes.
//
// # Functions
//
// /rpc/{function} by POST (JSON arguments by name, or a single unnamed
// json/jsonb parameter) and GET (query arguments) calls functions of the
// exposed schemas: scalar, composite, SETOF and void (204); select,
// filters, order and paging apply to set results. Postgres checks
// EXECUTE as the caller's role. GET and HEAD, and POST to a STABLE or
// IMMUTABLE function, run read-only (a write answers 405, 25006); Prefer:
// params=single-object passes the whole body as the function's one
// json/jsonb parameter.
//
// # Schema reloads
//
// [API.Listen] reloads the catalogue on NOTIFY pgrst, 'reload schema',
// as PostgREST does; [API.Reload] does it on demand.
//
// # Description
//
// GET / answers an OpenAPI 3.1 outline of the tables, views and functions
// the caller's role may reach.
//
// # Errors
//
// Errors have PostgREST's shape {code, message, details, hint} ([Error]):
// PGRST codes for the API's own refusals and Postgres's SQLSTATE, message,
// detail and hint for database errors, with PostgREST's statuses (23505
// and 23503 409, 42501 401 for anon and 403 otherwise, 42P01 and 42883
// 404, P0001 400, ...). The statement is never sent.
package dataapi
