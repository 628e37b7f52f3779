package spec

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
)

// PathEvents is the path of a resource's event stream, below the
// resource's segment: {BasePath}/{segment}/events.
const PathEvents = "/events"

// EventStream is a Server-Sent Events endpoint served beside a resource
// (package events' *Stream is one). The document describes it as
// GET {BasePath}/{segment}/events answering text/event-stream, with the
// schema of each event; the handler serves it there. The stream admits
// callers itself, so its own allow list decides the security requirement.
type EventStream interface {
	http.Handler
	// Names returns the event names the stream delivers.
	Names() []string
	// EventPayload returns the JSON Schema of an event's payload; row is
	// true when the payload is a row of the resource (its row schema).
	EventPayload(name string) (schema *jsonschema.Schema, row bool)
	// Allow returns the callers the stream admits.
	Allow() []authctx.Allow
}

// stream documents the event stream of one resource.
func (b *builder) stream(name string, r *rest.Resource, es EventStream) error {
	d := r.Describe()
	entity := componentName(strings.TrimPrefix(rest.OperationID(d.Table, rest.OpGet), "get"))
	names := es.Names()
	sort.Strings(names)
	events := newMap()
	var refs []any
	for _, n := range names {
		var payload any = newMap()
		s, row := es.EventPayload(n)
		switch {
		case row:
			payload = ref("schemas", entity)
		case s != nil:
			v, err := b.embedSchema(s, entity+" event "+n)
			if err != nil {
				return err
			}
			payload = v
		}
		comp := componentName(entity + "Event_" + n)
		if err := b.addSchema(comp, eventSchema(n, payload)); err != nil {
			return err
		}
		events.set(n, ref("schemas", comp))
		refs = append(refs, ref("schemas", comp))
	}
	no := ptr(false)
	params := []*parameter{
		{Name: "event", In: "query", Required: no,
			Description: "Keep only these events (comma separated): " + strings.Join(names, ", ") + ".",
			Schema:      newMap().set("type", "string")},
		{Name: "last_event_id", In: "query", Required: no,
			Description: "Resume after this event id (as the Last-Event-ID header, which wins).",
			Schema:      newMap().set("type", "integer").set("minimum", 0)},
		{Name: "Last-Event-ID", In: "header", Required: no,
			Description: "Resume after this event id: every later event within the retention window is sent first, in order.",
			Schema:      newMap().set("type", "string").set("pattern", "^[0-9]+$")},
	}
	for _, c := range d.Columns {
		params = append(params, &parameter{Name: c.Name, In: "query", Required: no,
			Description: "Filter table events on " + codeSpan(c.Name) + " like a list: `<operator>.<value>` with `eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `in.(a,b)`, `is.null`, `is.true`, `is.false`, optionally after `not.`.",
			Schema:      newMap().set("type", "string")})
	}
	media := &mediaType{
		Schema: newMap().set("type", "string").
			set("description", "Server-Sent Events: each message has id (the event id), event (the name) and one data line holding the event as JSON; comment lines are heartbeats."),
		Extensions: newMap().set("x-service-events", events).
			set("x-service-event-schema", newMap().set("oneOf", refs)),
	}
	responses := newOrdered[any]().set("200", &response{Description: "The event stream.",
		Content: newOrdered[*mediaType]().set("text/event-stream", media)})
	for _, st := range []int{400, 401, 403, 503} {
		responses.set(fmt.Sprint(st), ref("responses", errorResponseName[st]))
		b.responses[st] = true
	}
	allow := es.Allow()
	id := "stream" + entity + "Events"
	op := &operation{ID: id, Tags: []string{name},
		Summary: "Watch " + name + " events (Server-Sent Events)",
		Description: "Events about rows reach the caller only when its own row-level security lets it read the row; " +
			"action events without a key reach the callers of the writer's tenant. Reconnect with Last-Event-ID to resume.",
		Parameters: params,
		Responses:  responses,
		Security:   securityFor(allow),
		Allow:      allowStrings(allow),
	}
	path := "/" + name + PathEvents
	b.streamIDs[name] = id
	return b.addOperation(path, http.MethodGet, id, "GET "+path, op)
}

func eventSchema(name string, payload any) *omap {
	nullable := func(t string) *omap { return newMap().set("type", []any{t, "null"}) }
	props := newMap().
		set("id", newMap().set("type", "integer").set("description", "Increasing event id; the SSE id.")).
		set("name", newMap().set("const", name)).
		set("table", newMap().set("type", "string")).
		set("key", nullable("string").set("description", "The row's key as text; null for keyless action events.")).
		set("tenant", nullable("string").set("description", "The writer's active tenant.")).
		set("actor", nullable("string").set("description", "The writer's user id.")).
		set("time", newMap().set("type", "string").set("format", "date-time")).
		set("payload", payload)
	return newMap().set("type", "object").
		set("required", []any{"id", "name", "table", "key", "tenant", "actor", "time", "payload"}).
		set("properties", props)
}
