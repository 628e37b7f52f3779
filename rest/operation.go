package rest

import (
	"net/http"
	"strings"
	"unicode"
)

// Operation names a CRUD operation of a resource, or — for a custom
// action — the action's name.
type Operation string

// The five CRUD operations: list and create on the collection, get,
// update and delete on one row.
const (
	OpList   Operation = "list"
	OpGet    Operation = "get"
	OpCreate Operation = "create"
	OpUpdate Operation = "update"
	OpDelete Operation = "delete"
)

// CRUD returns the five CRUD operations in route order (a new slice on
// every call).
func CRUD() []Operation { return append([]Operation(nil), crud...) }

// crud lists the five CRUD operations in route order.
var crud = []Operation{OpList, OpGet, OpCreate, OpUpdate, OpDelete}

// IsCRUD reports whether o is one of the five CRUD operations.
func (o Operation) IsCRUD() bool {
	switch o {
	case OpList, OpGet, OpCreate, OpUpdate, OpDelete:
		return true
	}
	return false
}

// Method returns the HTTP method of a CRUD operation ("" for others).
func (o Operation) Method() string {
	switch o {
	case OpList, OpGet:
		return http.MethodGet
	case OpCreate:
		return http.MethodPost
	case OpUpdate:
		return http.MethodPatch
	case OpDelete:
		return http.MethodDelete
	}
	return ""
}

// Item reports whether a CRUD operation addresses one row by key.
func (o Operation) Item() bool {
	return o == OpGet || o == OpUpdate || o == OpDelete
}

// OperationID returns the operation id the OpenAPI description and the MCP
// adapter share for an operation of table: listTodos, getTodo, createTodo,
// updateTodo, deleteTodo for the CRUD operations (the table name in
// PascalCase, singularized by stripping one trailing "s" for item
// operations and create), and <action><Table> for an action, e.g.
// completeTodos.
func OperationID(table string, op Operation) string {
	t := pascal(table)
	switch op {
	case OpList:
		return "list" + t
	case OpGet, OpCreate, OpUpdate, OpDelete:
		return string(op) + singular(t)
	}
	return string(op) + t
}

// pascal turns a table name (snake_case, kebab-case or schema.table) into
// PascalCase: todo_items → TodoItems.
func pascal(s string) string {
	if i := strings.LastIndexByte(s, '.'); i >= 0 {
		s = s[i+1:]
	}
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' || r == '-' || r == ' ' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// singular strips one trailing "s" (not "ss"): Todos → Todo.
func singular(s string) string {
	if len(s) > 1 && strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss") {
		return s[:len(s)-1]
	}
	return s
}
