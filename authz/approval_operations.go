package authz

import (
	"net/http"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/rest"
)

// ApprovalOperations describes the routes of [Approvals.Handler] for the
// OpenAPI and MCP adapters: pair them with rest.DescribeHandler and pass
// the result in spec.Options.Handlers and mcptools.Config.Handlers, so that
// generated clients and agents can finish an approval-gated call (request,
// 403 APPROVAL_REQUIRED with approval.id, approve, call again).
func ApprovalOperations() []rest.HandlerOperation {
	approval := approvalSchema()
	id := &jsonschema.Schema{Type: "object", Required: []string{"id"}, Properties: map[string]*jsonschema.Schema{
		"id": {Type: "string", Format: "uuid", Description: "The approval's id (approval.id of an APPROVAL_REQUIRED problem)."},
	}}
	page := &jsonschema.Schema{
		Type: "object", Required: []string{"items", "next_cursor"},
		Properties: map[string]*jsonschema.Schema{
			"items":       {Type: "array", Items: approval},
			"next_cursor": {Types: []string{"string", "null"}, Description: "Pass as cursor for the next page; null on the last page."},
		},
		PropertyOrder: []string{"items", "next_cursor"},
	}
	query := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"state":  {Type: "string", Enum: []any{"pending", "approved", "denied", "expired"}, Description: "Only approvals in this state."},
		"actor":  {Type: "string", Format: "uuid", Description: "Only approvals requested by this user."},
		"limit":  {Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(500.0), Default: []byte("50"), Description: "Page size."},
		"cursor": {Type: "string", Description: "The next_cursor of the previous page."},
	}, PropertyOrder: []string{"state", "actor", "limit", "cursor"}}
	return []rest.HandlerOperation{
		{ID: "listApprovals", Method: http.MethodGet, Path: "/", Summary: "List approvals",
			Description: "Approvals of the caller's active tenant the caller may see, newest first: requesters see their own, approvers of the tenant every one.",
			Query:       query, Output: page, Errors: []int{400, 401, 500, 503}, ReadOnly: true},
		{ID: "getApproval", Method: http.MethodGet, Path: "/{id}", Summary: "Get one approval",
			Description: "One approval; 404 when it does not exist or the caller may not see it.",
			Params:      id, Output: approval, Errors: []int{400, 401, 404, 500, 503}, ReadOnly: true},
		{ID: "approveApproval", Method: http.MethodPost, Path: "/{id}/approve", Summary: "Approve a pending approval",
			Description: "An approver of the approval's tenant approves another user's pending request (403 PERMISSION_DENIED otherwise, 409 when no longer pending); the requester's next identical call is admitted once.",
			Params:      id, Output: approval, Errors: []int{400, 401, 403, 404, 409, 500, 503}},
		{ID: "denyApproval", Method: http.MethodPost, Path: "/{id}/deny", Summary: "Deny a pending approval",
			Description: "An approver of the approval's tenant denies another user's pending request (403 PERMISSION_DENIED otherwise, 409 when no longer pending).",
			Params:      id, Output: approval, Errors: []int{400, 401, 403, 404, 409, 500, 503}},
	}
}

// approvalSchema is the JSON Schema of an [Approval] as the handler
// renders it.
func approvalSchema() *jsonschema.Schema {
	s, err := jsonschema.For[Approval](nil)
	if err != nil {
		panic("authz: approval schema: " + err.Error())
	}
	return s
}
