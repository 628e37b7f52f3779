package rest

import (
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"
)

// HandlerOperation describes one operation of an http.Handler that is not
// a [Resource] (package authz's approvals endpoint, for one), so that the
// OpenAPI and MCP adapters describe and serve it beside the resources.
type HandlerOperation struct {
	// ID is the operation id and the MCP tool name ("listApprovals").
	ID string
	// Method is the HTTP method. Path is relative to the handler's mount
	// point, path parameters in braces: "/", "/{id}", "/{id}/approve".
	Method, Path string
	// Summary and Description document the operation.
	Summary, Description string
	// Status is the success status (default 200).
	Status int
	// Params is an object schema of the path parameters: one string
	// property per name in braces in Path, all required.
	Params *jsonschema.Schema
	// Query is an object schema of the query parameters, or nil.
	Query *jsonschema.Schema
	// Input is the schema of the JSON body, or nil for none.
	Input *jsonschema.Schema
	// Output is the schema of the JSON response, or nil for none.
	Output *jsonschema.Schema
	// Errors lists the statuses of the problem responses the operation
	// may answer (400, 401, 403, 404, 409, ...).
	Errors []int
	// ReadOnly reports an operation without side effects.
	ReadOnly bool
}

// DescribedHandler is an http.Handler that describes its operations, for
// spec.Options.Handlers and mcptools.Config.Handlers.
type DescribedHandler interface {
	http.Handler
	// Operations lists the operations, in the order to document them.
	Operations() []HandlerOperation
}

// DescribeHandler pairs a handler with the description of its operations.
func DescribeHandler(h http.Handler, ops []HandlerOperation) DescribedHandler {
	return describedHandler{Handler: h, ops: append([]HandlerOperation(nil), ops...)}
}

type describedHandler struct {
	http.Handler
	ops []HandlerOperation
}

func (d describedHandler) Operations() []HandlerOperation {
	return append([]HandlerOperation(nil), d.ops...)
}
