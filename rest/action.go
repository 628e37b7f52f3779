package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
)

// None is the type parameter of an action without a body, without query
// parameters or without output. An action whose output is None answers
// 204 by default.
type None struct{}

// ActionInput is what an action handler receives besides the [Ctx]: the
// key of an item action, the decoded body and the decoded query.
type ActionInput[I, Q any] struct {
	// ID is the parsed key of an item action; nil for collection actions.
	ID any
	// Row is the row of an item action, fetched under RLS first.
	Row Row
	// Data is the body, validated against the input schema.
	Data I
	// Query holds the query parameters, validated against the query schema.
	Query Q
}

// ActionDef declares an action with typed input I, query Q and output O.
// Pass it to [DefineAction].
type ActionDef[I, Q, O any] struct {
	// Method is GET, POST, PUT, PATCH or DELETE.
	Method string
	// Path starts with "/". It may name one path parameter, the table's
	// key, written {key} or {<key column>} as the first segment ("/{id}/send"):
	// an item action. Without it the action is on the collection ("/export").
	// As in OpenAPI, a path with literal segments wins over a templated
	// one: /export is the action's path for every method (another method
	// answers 405), so a row whose text key is "export" is not reachable
	// through GET, PATCH or DELETE /{key}.
	Path string
	// Status is the success status; default 200 with an output, 204 without.
	Status int
	// Summary, Description and Deprecated document the operation.
	Summary, Description string
	Deprecated           bool
	// Permission is checked by the authorizer before the handler runs.
	Permission string
	// Emits lists event names, written into the description as x-service-emits.
	Emits []string
	// ReadOnly declares that the handler writes nothing: with read
	// replicas configured ([db.Config.Replicas]) the action's transaction
	// may run on a replica (when no Permission and no
	// Hooks.AuthorizeFunc run in it), and, like a get or list, it honours
	// the caller's Tablegate-Position. A ReadOnly action that writes
	// anyway is refused by the replica and runs again on the primary, so
	// its handler must be safe to run twice.
	ReadOnly bool
	// Input, Query and Output override the schemas inferred from I, Q and
	// O (None infers no schema).
	Input, Query, Output *jsonschema.Schema
	// Handler runs the action in the request's transaction. It returns the
	// output, an error (a *problem.Problem is sent as is), or a *Response
	// (as O or as its dynamic value) to send its own status, headers and body.
	Handler func(c *Ctx, in ActionInput[I, Q]) (O, error)
}

// Response is an action output sent exactly as given, after the
// transaction committed: the action's way to write its own response.
type Response struct {
	Status      int
	Header      http.Header
	ContentType string
	Body        []byte
}

// Action is a custom operation of a resource, built by [DefineAction] and
// named by its key in [Config.Actions]. An Action is immutable and may be
// shared between resources.
type Action struct {
	// Method, Path, Status, Summary, Description, Deprecated, Permission
	// and Emits are copied from the definition (Status defaulted).
	Method               string
	Path                 string
	Status               int
	Summary, Description string
	Deprecated           bool
	Permission           string
	Emits                []string
	// ReadOnly is copied from the definition (see [ActionDef].ReadOnly).
	ReadOnly bool
	// Input, Query and Output are the schemas of body, query parameters
	// and response; nil when the action has none. An action whose output
	// type is [RowJSON] or [Rows] has a nil Output here: each resource
	// serving it describes the output with its own row schema
	// ([OperationInfo].Output).
	Input, Query, Output *jsonschema.Schema

	err error
	run func(c *Ctx, in actionCall) (any, error)
	// rowOutput is RowJSON's or Rows' type when that is the output type
	// and no Output schema was given: each resource describes it with its
	// own row schema. Nil otherwise.
	rowOutput reflect.Type
}

// actionCall carries the already-validated input of one action call.
type actionCall struct {
	id    any
	row   Row
	body  []byte // JSON; nil when absent
	query any    // query parameters converted to JSON values, or nil
}

var noneType = reflect.TypeFor[None]()

// DefineAction builds an [Action]. Schemas are inferred from I, Q and O
// unless given; errors in the definition are reported when the resource
// is built (see [NewResource]).
func DefineAction[I, Q, O any](def ActionDef[I, Q, O]) *Action {
	a := &Action{
		Method: def.Method, Path: def.Path, Status: def.Status,
		Summary: def.Summary, Description: def.Description, Deprecated: def.Deprecated,
		Permission: def.Permission, Emits: append([]string(nil), def.Emits...),
		ReadOnly: def.ReadOnly,
		Input:    def.Input, Query: def.Query, Output: def.Output,
	}
	infer := func(dst **jsonschema.Schema, t reflect.Type, what string) {
		if *dst != nil || t == noneType || a.err != nil {
			return
		}
		if t == reflect.TypeFor[*Response]() || t.Kind() == reflect.Interface {
			return
		}
		s, err := inferSchema(t)
		if err != nil {
			a.err = fmt.Errorf("%s schema: %w", what, err)
			return
		}
		*dst = s
	}
	infer(&a.Input, reflect.TypeFor[I](), "input")
	infer(&a.Query, reflect.TypeFor[Q](), "query")
	switch reflect.TypeFor[O]() {
	case rowJSONType, rowsType:
		// Described per resource by its row schema (see describe).
		if a.Output == nil {
			a.rowOutput = reflect.TypeFor[O]()
		}
	default:
		infer(&a.Output, reflect.TypeFor[O](), "output")
	}
	if a.Status == 0 {
		if reflect.TypeFor[O]() == noneType {
			a.Status = http.StatusNoContent
		} else {
			a.Status = http.StatusOK
		}
	}
	if def.Handler == nil {
		a.err = fmt.Errorf("no handler")
		return a
	}
	h := def.Handler
	hasIn := reflect.TypeFor[I]() != noneType
	hasQuery := reflect.TypeFor[Q]() != noneType
	hasOut := reflect.TypeFor[O]() != noneType
	a.run = func(c *Ctx, in actionCall) (any, error) {
		var ai ActionInput[I, Q]
		ai.ID, ai.Row = in.id, in.row
		if len(in.body) > 0 && hasIn {
			if err := json.Unmarshal(in.body, &ai.Data); err != nil {
				return nil, badBody("the body does not match the action input")
			}
		}
		if in.query != nil && hasQuery {
			b, err := json.Marshal(in.query)
			if err == nil {
				err = json.Unmarshal(b, &ai.Query)
			}
			if err != nil {
				return nil, badQuery("query parameters do not match the action query")
			}
		}
		out, err := h(c, ai)
		if err != nil {
			return nil, err
		}
		if !hasOut {
			return nil, nil
		}
		return out, nil
	}
	return a
}
