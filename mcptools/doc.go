// Package mcptools is the MCP adapter of tablegate: it serves the
// operations and actions of [rest.Resource]s as Model Context Protocol
// tools, with the official Go SDK (github.com/modelcontextprotocol/go-sdk).
//
// # Tools
//
// [New] builds one tool per served operation and action of every resource,
// from the resource's [rest.Description] — the very objects that serve the
// REST routes and feed the OpenAPI description. A tool is named by the
// operation id the OpenAPI description uses ([rest.OperationID]: listTodos,
// getTodo, createTodo, updateTodo, deleteTodo, completeTodos, …), so the two
// descriptions agree. Operations a resource does not serve are not tools.
//
// Tool arguments mirror the REST request:
//
//	list            {"filters": {"done": "eq.false", "priority": ["gte.1", "lte.3"]},
//	                 "order": "created_at.desc", "limit": 20, "cursor": "…", "count": true}
//	get, delete     {"<key column>": …}
//	create          {"data": {…}}
//	update          {"<key column>": …, "data": {…}}
//	action          {"<key column>": … (item actions), "data": {…}, "query": {…}}
//
// The key argument is named after the key column ("id"), or "key" when the
// column is called data or query. Filters use the REST list grammar
// (col=[not.]op.value) with the column as the property name.
//
// Input schemas come from the key type, the list parameters and the
// operation's input and query schemas; output schemas from the select list
// (or Options.Output) and the action's output; descriptions from the
// action's summary and description. Annotations follow the HTTP method:
// readOnlyHint for list, get and GET actions; destructiveHint true for
// update, delete and PATCH/DELETE actions, false for create (POST and PUT
// actions keep the MCP default, true); idempotentHint for list, get,
// update, delete and GET/PUT/DELETE actions; openWorldHint false (the tools
// reach one database).
//
// # One pipeline
//
// A tool call is translated into a [rest.Call] and run by [rest.Resource.Do]:
// fetch under row-level security, authorizer, hooks and repository, in one
// caller-bound transaction — the same code the HTTP handler runs. This
// package holds no copy of it. A success is returned as the JSON body (text
// content and structured content); a refusal or failure is a tool error
// (isError) whose text content is the same application/problem+json body
// the HTTP route would send, with the HTTP status also in _meta.
//
// # Callers
//
// Over Streamable HTTP ([Server.Handler]) every HTTP request is resolved by
// the configured caller function — normally an [authctx.Resolver], so the
// same custom resolvers, Bearer verification and claims schema apply as on
// the REST routes — with cookies removed (MCP clients authenticate with
// Bearer tokens; there is no cookie path here), then admitted by the guard.
// A refused request is answered with the guard's Problem Details over HTTP
// (401 with WWW-Authenticate, optionally naming the RFC 9728 protected
// resource metadata). Each tool call runs as the caller of the HTTP request
// that carried it.
//
// Sessions are bounded: one caller (a user, a service key; callers without
// a subject by client address) holds at most [DefaultMaxSessionsPerCaller]
// at once ([HTTPConfig.MaxSessionsPerCaller]; past it an initialize gets
// 429 with Retry-After), a session idle for [DefaultSessionTimeout] is
// closed (its next request gets 404, and the client starts a new one), and
// a session's GET stream ends when its caller's token expires (a token
// already past exp, inside the clock-skew leeway, gets 401). The transport's own refusals (a malformed
// message, a wrong method or media type, an unknown session) are Problem
// Details too; an unknown session and another caller's get the same 404.
// A JSON-RPC batch (a body that is a JSON array) is refused with 400 before
// any of it runs: MCP 2025-06-18 removed batching, and one HTTP request
// carries one message, so that it costs at most one pooled connection at a
// time. A GET (the session's stream) with a body is refused too: its
// stream would not notice the client go.
//
// Over stdio ([ServeStdio]) and other transports ([Server.Connect]) the
// session has one caller, fixed when it is connected — for the CLI, the
// caller of a token or secret key read from the environment
// ([CallerFromEnv]) — and admitted by the same guard ([AllowList]). A user
// whose token expires during the session is refused from then on.
package mcptools
