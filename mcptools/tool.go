package mcptools

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// Argument names of the tools (besides the key argument).
const (
	argData    = "data"
	argQuery   = "query"
	argFilters = "filters"
	argOrder   = "order"
	argLimit   = "limit"
	argCursor  = "cursor"
	argCount   = "count"
)

// tool is one operation of one resource served as an MCP tool.
type tool struct {
	res *rest.Resource
	op  rest.OperationInfo
	def *mcp.Tool
	// keyArg names the key argument of an item operation ("" otherwise).
	keyArg string
	// keyInt reports an integer key column (the argument may be a number).
	keyInt bool
	// takesData and takesQuery report the data and query arguments.
	takesData, takesQuery bool
	// maxBody caps the JSON of the data argument.
	maxBody int64
	// guard is the resource's guard (Config.Guards), or nil.
	guard func(authctx.Auth) *problem.Problem
}

func newTool(r *rest.Resource, d *rest.Description, op rest.OperationInfo) (*tool, error) {
	t := &tool{res: r, op: op, maxBody: d.MaxBodyBytes}
	in := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	defs := map[string]*jsonschema.Schema{}
	add := func(name string, s *jsonschema.Schema, required bool) error {
		s, err := hoist(s, defs)
		if err != nil {
			return fmt.Errorf("argument %s: %v", name, err)
		}
		in.Properties[name] = s
		in.PropertyOrder = append(in.PropertyOrder, name)
		if required {
			in.Required = append(in.Required, name)
		}
		return nil
	}

	if op.Item {
		t.keyArg = d.Key.Name
		if t.keyArg == argData || t.keyArg == argQuery {
			t.keyArg = "key"
		}
		ks := keySchema(d)
		t.keyInt = ks.Type == "integer"
		if err := add(t.keyArg, ks, true); err != nil {
			return nil, err
		}
	}
	switch {
	case op.Operation == rest.OpList:
		for _, p := range listParams(d) {
			if err := add(p.name, p.schema, false); err != nil {
				return nil, err
			}
		}
	case op.Input != nil:
		t.takesData = true
		required := op.Operation == rest.OpCreate || op.Operation == rest.OpUpdate || op.Action != nil
		s := op.Input
		if op.Action == nil {
			s = describe(s, "The values to write, as a JSON object of column values.")
		}
		if err := add(argData, s, required); err != nil {
			return nil, err
		}
	case op.Action != nil && op.Method != http.MethodGet:
		// An action without an input schema still takes an optional body.
		t.takesData = true
		if err := add(argData, &jsonschema.Schema{Description: "The request body (any JSON value), if the action reads one."}, false); err != nil {
			return nil, err
		}
	}
	if op.Query != nil && op.Operation != rest.OpList {
		t.takesQuery = true
		if err := add(argQuery, describe(op.Query, "The query parameters of the action."), false); err != nil {
			return nil, err
		}
	}
	in.AdditionalProperties = falseSchema()
	if len(defs) > 0 {
		in.Defs = defs
	}

	def := &mcp.Tool{
		Name:        op.ID,
		Title:       title(d, op),
		Description: description(d, op),
		InputSchema: in,
		Annotations: annotations(op),
	}
	if out := outputSchema(d, op); out != nil {
		def.OutputSchema = out
	}
	t.def = def
	return t, nil
}

// keySchema is the schema of the key argument: the key column's row schema
// when it is selected, else one from its Postgres type.
func keySchema(d *rest.Description) *jsonschema.Schema {
	var s *jsonschema.Schema
	switch d.Key.TypeName {
	case "int2", "int4", "int8":
		s = &jsonschema.Schema{Type: "integer"}
	case "uuid":
		s = &jsonschema.Schema{Type: "string", Format: "uuid"}
	default:
		s = &jsonschema.Schema{Type: "string"}
	}
	s.Description = fmt.Sprintf("The %s (%s) of the %s row.", d.Key.Name, d.Key.Type, d.Table)
	return s
}

type param struct {
	name   string
	schema *jsonschema.Schema
}

// listParams are the arguments of a list tool: the REST list parameters.
func listParams(d *rest.Description) []param {
	cond := &jsonschema.Schema{
		Type:    "string",
		Pattern: `^(not\.)?(eq|neq|gt|gte|lt|lte|in|is|like|ilike)\.`,
	}
	conds := &jsonschema.Schema{OneOf: []*jsonschema.Schema{
		cond,
		{Type: "array", Items: cond, MinItems: jsonschema.Ptr(1)},
	}}
	var cols, sortable []string
	for _, c := range d.Filterable() {
		cols = append(cols, c.Name)
		if c.Sortable {
			sortable = append(sortable, c.Name)
		}
	}
	colNames := make([]any, len(cols))
	for i, c := range cols {
		colNames[i] = c
	}
	filters := &jsonschema.Schema{
		Type: "object",
		Description: "Filters, ANDed, by selected column (" + strings.Join(cols, ", ") + "): \"[not.]op.value\" with op one of eq, neq, gt, gte, lt, lte, " +
			"in (\"in.(a,b)\"), is (null, true, false, unknown), like, ilike (* is the wildcard); an array gives several conditions on one column.",
		PropertyNames:        &jsonschema.Schema{Enum: colNames},
		AdditionalProperties: conds,
	}
	return []param{
		{argFilters, filters},
		{argOrder, &jsonschema.Schema{Type: "string",
			Description: "Order: comma-separated col.asc|desc[.nullsfirst|.nullslast] over the columns " + strings.Join(sortable, ", ") + "."}},
		{argLimit, &jsonschema.Schema{Type: "integer", Minimum: jsonschema.Ptr(1.0), Maximum: jsonschema.Ptr(float64(d.MaxLimit)),
			Description: fmt.Sprintf("Page size (default %d).", d.DefaultLimit)}},
		{argCursor, &jsonschema.Schema{Type: "string", Description: "The next_cursor of the previous page, to continue the list."}},
		{argCount, &jsonschema.Schema{Type: "boolean", Description: "Also return count, the number of rows matching the filters."}},
	}
}

// outputSchema is the schema of a tool's structured content: the page of
// a list, the row (or Options.Output) of get, create and update, the
// output of an action; nil for operations answering 204.
func outputSchema(d *rest.Description, op rest.OperationInfo) *jsonschema.Schema {
	if op.Output == nil {
		return nil
	}
	if op.Operation != rest.OpList {
		return op.Output
	}
	item := op.Output
	var defs map[string]*jsonschema.Schema
	if len(item.Defs) > 0 {
		item = item.CloneSchemas()
		defs = item.Defs
		item.Defs = nil
	}
	return &jsonschema.Schema{
		Type: "object",
		Defs: defs,
		Properties: map[string]*jsonschema.Schema{
			"items":       {Type: "array", Items: item},
			"next_cursor": {Types: []string{"string", "null"}, Description: "Pass as cursor to get the next page; null on the last page."},
			"count":       {Type: "integer", Description: "Rows matching the filters (with count)."},
		},
		PropertyOrder: []string{"items", "next_cursor", "count"},
		Required:      []string{"items", "next_cursor"},
	}
}

// hoist returns s ready to sit under a property of the tool's input
// schema: its $defs move to the root (refs to #/$defs/… keep working).
func hoist(s *jsonschema.Schema, defs map[string]*jsonschema.Schema) (*jsonschema.Schema, error) {
	if s == nil || len(s.Defs) == 0 {
		return s, nil
	}
	if s.ID != "" {
		return nil, fmt.Errorf("a schema with $id cannot be embedded")
	}
	c := s.CloneSchemas()
	for name, def := range c.Defs {
		if prev, ok := defs[name]; ok && !jsonschema.Equal(prev, def) {
			return nil, fmt.Errorf("$defs/%s differs between schemas", name)
		}
		defs[name] = def
	}
	c.Defs = nil
	return c, nil
}

// describe returns s with a description when it has none (a shallow copy:
// the resource's schema is shared).
func describe(s *jsonschema.Schema, text string) *jsonschema.Schema {
	if s.Description != "" {
		return s
	}
	c := *s
	c.Description = text
	return &c
}

func falseSchema() *jsonschema.Schema { return &jsonschema.Schema{Not: &jsonschema.Schema{}} }

// title is the human title of a tool: the summary the OpenAPI description
// gives the operation (the action's summary; for CRUD operations the same
// generated text as package spec).
func title(d *rest.Description, op rest.OperationInfo) string {
	if op.Action != nil {
		if op.Action.Summary != "" {
			return op.Action.Summary
		}
		return fmt.Sprintf("%s (action on %s)", op.Operation, d.Table)
	}
	switch op.Operation {
	case rest.OpList:
		return "List " + d.Table
	case rest.OpGet:
		return "Get one row of " + d.Table
	case rest.OpCreate:
		return "Create a row in " + d.Table
	case rest.OpUpdate:
		return "Update a row of " + d.Table
	case rest.OpDelete:
		return "Delete a row of " + d.Table
	}
	return string(op.Operation)
}

// description explains a tool to the model: what it does, the REST route
// it mirrors, and the refusals it may answer.
func description(d *rest.Description, op rest.OperationInfo) string {
	var b strings.Builder
	if op.Action != nil {
		switch {
		case op.Action.Summary != "" && op.Action.Description != "":
			b.WriteString(op.Action.Summary + ". " + op.Action.Description)
		case op.Action.Description != "":
			b.WriteString(op.Action.Description)
		case op.Action.Summary != "":
			b.WriteString(op.Action.Summary + ".")
		default:
			fmt.Fprintf(&b, "Run the %s action of %s.", op.Operation, d.Table)
		}
		if op.Action.Deprecated {
			b.WriteString(" Deprecated.")
		}
	} else {
		switch op.Operation {
		case rest.OpList:
			fmt.Fprintf(&b, "List the %s rows visible to the caller, one page at a time (filters, order, limit, cursor).", d.Table)
		case rest.OpGet:
			fmt.Fprintf(&b, "Get one %s row by %s.", d.Table, d.Key.Name)
		case rest.OpCreate:
			fmt.Fprintf(&b, "Create a %s row from data and return it.", d.Table)
		case rest.OpUpdate:
			fmt.Fprintf(&b, "Update the columns given in data of one %s row by %s and return the row.", d.Table, d.Key.Name)
		case rest.OpDelete:
			fmt.Fprintf(&b, "Delete one %s row by %s.", d.Table, d.Key.Name)
		}
	}
	fmt.Fprintf(&b, " Same as %s %s on the %s REST resource.", op.Method, op.Path, d.Table)
	if op.Item {
		b.WriteString(" A row that does not exist or is hidden from the caller is not_found.")
	}
	if op.Permission != "" {
		fmt.Fprintf(&b, " Requires permission %s (PERMISSION_DENIED or APPROVAL_REQUIRED otherwise).", op.Permission)
	}
	if d.WithoutRLS {
		fmt.Fprintf(&b, " Row-level security does not protect %s: every caller admitted sees every row.", d.Table)
	}
	b.WriteString(" Errors are RFC 9457 Problem Details JSON.")
	return b.String()
}

// annotations derives the behaviour hints of a tool from its method.
func annotations(op rest.OperationInfo) *mcp.ToolAnnotations {
	a := &mcp.ToolAnnotations{Title: "", OpenWorldHint: jsonschema.Ptr(false)}
	switch op.Method {
	case http.MethodGet:
		a.ReadOnlyHint = true
		a.IdempotentHint = true
	case http.MethodDelete:
		a.DestructiveHint = jsonschema.Ptr(true)
		a.IdempotentHint = true
	case http.MethodPut:
		a.IdempotentHint = true
	case http.MethodPatch:
		a.DestructiveHint = jsonschema.Ptr(true)
		a.IdempotentHint = op.Operation == rest.OpUpdate
	case http.MethodPost:
		if op.Operation == rest.OpCreate {
			a.DestructiveHint = jsonschema.Ptr(false)
		}
	}
	return a
}
