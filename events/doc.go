// Package events delivers what actions declare in their Emits and live
// table changes as Server-Sent Events, each event filtered by the
// subscriber's own row-level security — on plain Postgres, without logical
// replication, with Postgres as the only broker between instances.
//
// # Emitting, transactionally
//
// Events are rows of the outbox table tablegate.events (sql/migrations),
// written in the request's own transaction: a rolled-back request emits
// nothing, a committed one can never lose its events.
//
//   - An action emits a declared event with [Emit] from its handler:
//
//     events.Emit(c, "todo.completed", payload, &events.EmitOpts{Key: in.ID})
//
//     A name the action does not list in rest.ActionDef.Emits is an error
//     at the call ([ErrUndeclared]), never a silent drop.
//
//   - A table opted in with select tablegate.enable_events('todos') (in a
//     migration) gets todos.created, todos.updated and todos.deleted for
//     every row written, from an AFTER row trigger inside the writing
//     statement: no extra round trip, and writes made by actions, hooks or
//     other tools are seen too. [StreamOpts.Table] delivers them.
//
// Callers with only a SQL path as anon or authenticated cannot forge
// events: only service_role may execute tablegate.emit_event (Emit switches
// the request's transaction to service_role for its one statement and back,
// so the connecting role must be a member of service_role), table events
// are written only by the trigger, and emit_event refuses table-event names
// of a table with events (tablegate.emit_event, docs/events.md).
//
// Every event carries an increasing id, its name, table, key, the writer's
// active tenant (tablegate.current_tenant_id()) and actor (sub claim), the
// time and a payload (see [Event]). Writers take no lock: the id is drawn
// after commit by tablegate.sequence_events, which the hubs run in turns,
// so ids become visible in id order and Last-Event-ID resumes without gaps.
//
// # Delivery
//
// A [Hub] per instance listens on the Postgres channel tablegate_events
// (NOTIFY is issued by the emitting transaction and delivered only at its
// commit) with one connection, numbers and reads new outbox rows as
// service_role, and hands them to the [Stream]s it serves. Where write
// throughput matters more than latency, the writers' NOTIFY can be turned
// off (alter database app set tablegate.events_notify = 'off'): Postgres
// serialises the commits of notifying transactions; the hubs then poll. Every wait is bounded
// ([Config.PollInterval], default 1s): the outbox is also polled, so a lost
// notification or a dropped listening connection delays delivery by at
// most that long; the connection is re-established with jittered backoff
// after a Postgres restart, and each failing operation is logged once per
// outage. A write on instance A reaches subscribers on instance
// B through Postgres alone.
//
// A Stream serves one resource's events: mount it beside the resource,
//
//	mux.Handle("GET /api/todos/events", stream)
//
// behind the same authctx middleware as the resource (Bearer or cookie
// session; a cookie-session stream from another site answers 403
// CROSS_SITE_REQUEST). Query parameters: event=<name>[,...] and list-style
// column filters (done=eq.false, id=in.(1,2), title=not.is.null) on
// table events. Messages are "id: <id>", "event: <name>", "data: <Event
// JSON>"; a comment line is sent every [Config.Heartbeat].
//
// # Who receives what
//
// An event about a row reaches a subscriber only if that subscriber may
// read that row: the hub decides it in Postgres as the subscriber (role and
// claims set exactly as for a GET), batched so that one batch of events
// costs one statement per distinct caller identity, not one per stream.
// The row is the version the event recorded (the trigger's new row, the
// old row for deletes, the current row when an action emits with a key):
// the subscriber's SELECT policies on the table, as Postgres stores them,
// are evaluated on it — so a created-then-deleted row is judged on what it
// was, a delete reaches exactly the subscribers that could read the row
// just before it was deleted (its key and selected columns), and policies
// that call membership or tenant helpers are evaluated at delivery time:
// a subscriber whose membership is removed stops receiving. A subscriber
// without SELECT on the table receives no row events. Action events
// without a key reach the subscribers of the writer's active tenant.
//
// Anonymous sign-ins and callers without a session are refused (403/401)
// unless [StreamOpts.Allow] admits them; their events are then still
// filtered by their own RLS.
//
// # Resuming, slow subscribers, limits
//
// A client that reconnects with Last-Event-ID (EventSource does this by
// itself) receives every event after that id from the outbox, in order,
// without gaps or duplicates, on any instance (one that has read less than
// the client received skips what the client has), as long as the id is
// within [Config.Retention] (default one hour) and [Config.MaxReplay]
// events (default 10000) of the hub's position; otherwise a
// "tablegate.gap" event comes first. A replay reads and checks the outbox
// in windows of [Config.Batch] ids on the caller's own share of the pool
// (db.Config.MaxConnsPerCaller), and streams of one identity replaying
// together share each window. Each
// subscriber has a bounded queue ([Config.Buffer]); a subscriber that falls
// behind, or whose write does not finish within [Config.WriteTimeout], is
// cut off and resumes from the outbox. Streams end after [Config.MaxStream]
// or when the caller's token expires, so credentials are re-checked.
// [Config.MaxSubscribers] and [Config.MaxPerCaller] bound open streams.
//
// # Scale
//
// Each instance holds one listening connection and reads each batch of
// events once, then runs one statement per distinct subscriber identity
// per batch; throughput therefore scales with distinct callers, not with
// streams. Numbering is one UPDATE per batch, run by one hub at a time.
// Figures and limits: docs/events.md and bench/BENCHMARKS.md.
package events
