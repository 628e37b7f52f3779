// Package spec generates the OpenAPI 3.1 description of a set of
// [rest.Resource] objects and serves it beside them.
//
// [DefineAPI] reads the same resource objects that
// serve the routes — their [rest.Description]: key, selected columns with
// their Postgres types, served operations and actions with ids, paths,
// statuses, permissions and schemas — so the routes and their description
// cannot differ. The [API] it returns serves, below the base path:
//
//	/<segment>/...     every resource, under its key in Config.Resources
//	/openapi.json      the document
//	/openapi.yaml      the same document as YAML
//	/docs              a self-contained HTML reference (no scripts, no CDN)
//
// # What the document holds
//
// One path per served route and one operation per served method, with the
// operation id shared with the MCP adapter (listTodos, getTodo,
// completeTodos, …), parameters (the key with its type; list filters,
// order, limit, cursor and count; an action's query schema), request
// bodies (input schemas, else the writable columns), success responses
// (rows typed from their Postgres columns as the repository serves them,
// output schemas where hooks reshape, list pages with items, next_cursor
// and count), and every error status the operation can answer with as an
// application/problem+json Problem. The shared 403 response,
// components.responses.PermissionDenied, carries one example per refusal
// code. Operations carry x-service-permission (the permission key),
// x-service-emits (an action's events) and x-service-allow (the guard's
// allow list); the operations of a table served without row-level
// security (rest.Config.AllowWithoutRLS) carry x-service-rls: false and
// say so in their description and their tag's.
//
// # Security
//
// Three schemes: bearerAuth (a JWT in Authorization), sessionCookie (the
// Supabase SSR session cookie, sb-<ref>-auth-token by default) and apikey
// (the secret key in the apikey header, for service callers). Each
// operation's requirements follow the allow list of the guard in front of
// its resource (Config.Allow, default [DefaultAllow] = user): user or
// anonymous → bearerAuth or sessionCookie; service → apikey; anon → no
// credential. With Config.Guard = [authctx.Guard], the handler installs
// the guard with the same list.
//
// HEAD is served wherever GET is and is not listed separately; any other
// method not in the document answers 405 with an Allow header.
package spec
