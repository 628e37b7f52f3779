// Package rest serves Postgres tables as caller-bound REST resources.
//
// A [Resource] is one table served as an [net/http.Handler] that can be
// mounted under any prefix of any router:
//
//	GET    /        list   → 200 {"items": [...], "next_cursor": "..."|null}
//	POST   /        create → 201 row, Location header
//	GET    /{key}   get    → 200 row, 404 when missing or hidden by RLS
//	PATCH  /{key}   update → 200 row
//	DELETE /{key}   delete → 204
//
// plus the custom [Action]s declared in [Config.Actions], each resource
// routed by an [http.ServeMux] of its own (r.PathValue("key") is the key).
// [NewRouter] serves many tables, described handlers and mounts under one
// base path, one path segment per table; package spec builds one with the
// API's description.
//
// Every statement runs bound to the caller (see package db): row-level
// security decides which rows exist.
//
// # Safe by default
//
// [NewResource] refuses a table or view that row-level security does not
// protect ([db.CheckRLS]): a table whose RLS is disabled, a view without
// security_invoker (it reads with its owner's rights), a security_invoker
// view over such a table, a materialized view, or a table a request role
// owns while its RLS is not forced. The error names the table and the SQL
// that fixes it:
//
//	alter table public.notes enable row level security;   -- then create policies
//	alter view public.note_list set (security_invoker = true);
//
// A table owned by another role (the one that migrates, as on Supabase)
// need not force RLS: requests never run as its owner (`tablegate doctor`
// still asks for FORCE, which also binds the owner). For the rare table
// every caller may read, [Config.AllowWithoutRLS] opts out: the resource
// logs a warning each time it is built, and its description
// ([Description.WithoutRLS]) marks its operations in the OpenAPI
// document (x-service-rls: false). Building also logs one warning per
// served operation whose privilege a role of [Config.GrantRoles] lacks
// (authenticated by default: every user's request would answer 403), with
// the grant that fixes it.
//
// A get or list without hooks or
// permissions costs one round trip to Postgres; a write runs in one
// transaction shared with the authorizer and every hook, so an error in an
// After hook rolls the write back.
//
// # Pipeline
//
// The HTTP handler only translates. [Resource.Do] is the single pipeline
// every adapter (HTTP, MCP) runs:
//
//	fetch row under RLS (get, update, delete, item actions) → 404 if hidden
//	→ permission check by the [Authorizer] → Hooks.AuthorizeFunc
//	→ Before* hook → [Repository] → After* hook → response
//
// # List queries
//
// List takes PostgREST-style filters on selected columns
// (col=eq.v, neq, gt, gte, lt, lte, in.(a,b), is.null|true|false|unknown,
// like, ilike, each negatable with not.), order=col.asc|desc[.nullsfirst|
// .nullslast] (comma separated), limit (default 50, capped by
// [Config.MaxLimit]), an opaque keyset cursor (sealed with AES-GCM: clients can neither read
// nor alter it; it opens only for the same caller — subject, role and
// tenant — and the same filters and order), and count=exact.
// Unknown columns or operators answer 400 naming the parameter.
//
// # Caching
//
// Every response varies on Authorization and Cookie; a response to a
// request with credentials is Cache-Control: private, no-store
// ([Config.CacheControl]), so no shared cache keeps one caller's rows.
//
// # Repositories
//
// The default table repository introspects columns, types and the primary
// key once and builds SQL from quoted identifiers and bound parameters
// only. Rows are rendered to JSON exactly as Postgres's to_json renders
// each value, compact and with keys in select order ({"id":1,"title":"a"}),
// the same bytes for get, list, create, update and action rows: the common
// types (integers, booleans, text, uuid, json, jsonb, timestamptz) are read
// in the driver's format and written in Go, any other column is selected as
// to_json(col). Timestamps carry the offset of the session's TimeZone (a
// zone Go's time zone database does not know renders in UTC).
// [Config.Repository] swaps in any [Repository], e.g. one over
// sqlc-generated queries (see examples/todos); routing, validation, RLS
// scoping, cursors, hooks and errors stay the same.
//
// # Bodies: writable columns and constraints
//
// A create or update body is a JSON object of column values. By default
// every column is writable except generated columns, identity columns
// declared GENERATED ALWAYS and, on update, the key column. A column with
// a default is writable too: created_by uuid default auth.uid() takes its
// default only when the body leaves it out, so a caller could send another
// user's id. Protect such columns with [Config.ReadOnly] (a body naming
// one answers 400, and the default always applies), and, where Postgres
// can say it, with the policy too (with check (created_by = auth.uid())).
//
// Without an input schema, each value must have a JSON type its column
// takes, array elements and composite fields included: "done": "yes" for
// a boolean column answers 400 naming /done
// (Postgres would read it as true); integers and numerics also take their
// value as a string, jsonb any JSON, and null passes to the database's
// NOT NULL. With [Config.Input] (create, update) or an action's input,
// the body is validated against that JSON Schema instead, before the
// repository is touched; failures answer 400 naming the path and the
// keyword, never the value. Build schemas from Go types with [SchemaFor]
// and constrain them with the [SchemaTag] keywords
// (`tablegate:"minLength=3,maxLength=80"`) or by changing the returned
// schema; the OpenAPI and MCP descriptions show the same keywords.
//
// What only the database knows it reports: a unique, foreign-key, check
// or not-null violation answers 409 or 422 naming the constraint and its
// columns ("A value violates check constraint \"todos_title_check\" on
// title.", with an errors entry per column), read from the catalog once
// per constraint and never the value.
//
// # Errors
//
// Every refusal is an application/problem+json body from package problem:
// 400 malformed key, body or query; 404 missing or hidden row; 405 with
// Allow; 413 body above [Config.MaxBodyBytes]; 415 non-JSON body; 403 for
// a policy refusal or a denied permission (an update or delete of a row
// the caller can read but a policy does not let them change is a 403, not
// a 404); 400 naming the parameter for a filter value no column can hold
// (a NUL byte, invalid UTF-8) or an order term naming an unknown column;
// 409 conflicts; 422 check and
// not-null violations; 503 with Retry-After when the database is down. A
// hook's error that is a *problem.Problem is sent as is; any other error or
// a panic becomes a 500 of kind unexpected carrying a request id, logged
// with log/slog. Panics are recovered in one place, the pipeline's run
// (pipeline.go), which both [Resource.Do] and [Resource.ServeHTTP] go
// through: the caller's resolution and the body's reading are inside it.
package rest
