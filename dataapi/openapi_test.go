package dataapi

import (
	"testing"
)

// TestDescription: GET / describes what the caller's role may reach.
func TestDescription(t *testing.T) {
	b := setup(t, nil)
	b.exec(`revoke execute on function add(int, int) from public, anon`)
	doc := func(user string) map[string]any {
		t.Helper()
		r := b.do("GET", "/", user, "", "Accept: application/openapi+json")
		if r.status != 200 || r.header.Get("Content-Type") != "application/openapi+json; charset=utf-8" {
			t.Fatalf("%s: %d %s", user, r.status, r.body)
		}
		m := r.json(t).(map[string]any)
		if m["openapi"] != "3.1.0" {
			t.Fatalf("openapi %v", m["openapi"])
		}
		return m["paths"].(map[string]any)
	}
	anon := doc("")
	todos, ok := anon["/todos"].(map[string]any)
	if !ok || todos["get"] == nil || todos["post"] != nil || todos["delete"] != nil {
		t.Errorf("anon /todos: %v", todos)
	}
	if anon["/things"] == nil || anon["/rpc/hello"] == nil || anon["/rpc/add"] != nil {
		t.Errorf("anon paths: %v", keys(anon))
	}
	user := doc(alice)
	todos = user["/todos"].(map[string]any)
	for _, m := range []string{"get", "post", "patch", "delete"} {
		if todos[m] == nil {
			t.Errorf("alice /todos lacks %s", m)
		}
	}
	if user["/rpc/add"] == nil {
		t.Errorf("alice may execute add: %v", keys(user))
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
