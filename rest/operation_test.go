package rest

import (
	"testing"
)

func TestOperationID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		table string
		op    Operation
		want  string
	}{
		{"todos", OpList, "listTodos"},
		{"todos", OpGet, "getTodo"},
		{"todos", OpCreate, "createTodo"},
		{"todos", OpUpdate, "updateTodo"},
		{"todos", OpDelete, "deleteTodo"},
		{"todos", "complete", "completeTodos"},
		{"todo_items", OpGet, "getTodoItem"},
		{"public.addresses", OpList, "listAddresses"},
		{"address", OpGet, "getAddress"},
	}
	for _, c := range cases {
		if got := OperationID(c.table, c.op); got != c.want {
			t.Errorf("OperationID(%q, %q) = %q, want %q", c.table, c.op, got, c.want)
		}
	}
}
