package rest

import (
	"bytes"
	"encoding/json"
	"testing"
)

func compacted(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return out.String()
}

// TestActionRowOutputs: actions returning RowJSON and Rows answer rows
// rendered like GET and list (key order, value formats), and are described
// by the resource's own row schema without a hand-written one.
func TestActionRowOutputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	touch := DefineAction(ActionDef[None, None, RowJSON]{
		Method: "POST", Path: "/{id}/touch",
		Handler: func(c *Ctx, in ActionInput[None, None]) (RowJSON, error) {
			if _, err := c.DB.Exec(c, `update todos set priority = coalesce(priority, 0) + 1 where id = $1`, in.ID); err != nil {
				return nil, err
			}
			return c.Row(in.ID)
		},
	})
	mine := DefineAction(ActionDef[None, None, Rows]{
		Method: "GET", Path: "/mine",
		Handler: func(c *Ctx, in ActionInput[None, None]) (Rows, error) { return c.Rows("order=title&done=eq.false") },
	})
	broken := DefineAction(ActionDef[None, None, Rows]{
		Method: "GET", Path: "/broken",
		Handler: func(c *Ctx, in ActionInput[None, None]) (Rows, error) { return c.Rows("order=nope") },
	})
	r := b.resource("todos", &Config{Actions: map[string]*Action{"touch": touch, "mine": mine, "broken": broken}})
	s := server(t, "todos", r)
	var ids []string
	for _, title := range []string{"b", "a"} {
		ids = append(ids, decode(t, do(t, s, "POST", "/api/todos", alice, `{"title":"`+title+`"}`).body)["id"].(string))
	}

	got := do(t, s, "POST", "/api/todos/"+ids[0]+"/touch", alice, "")
	want := do(t, s, "GET", "/api/todos/"+ids[0], alice, "")
	if got.status != 200 || got.body != want.body {
		t.Fatalf("touch answered %s\nGET answers %s (byte for byte)", got, want)
	}
	isProblem(t, do(t, s, "POST", "/api/todos/"+ids[0]+"/touch", bob, ""), 404, "not_found")

	got = do(t, s, "GET", "/api/todos/mine", alice, "")
	want = do(t, s, "GET", "/api/todos?order=title&done=eq.false", alice, "")
	var g, w struct{ Items []json.RawMessage }
	if json.Unmarshal([]byte(got.body), &g) != nil || json.Unmarshal([]byte(want.body), &w) != nil || len(g.Items) != 2 || len(w.Items) != 2 {
		t.Fatalf("mine %s\nlist %s", got, want)
	}
	for i := range g.Items {
		if compacted(t, g.Items[i]) != compacted(t, w.Items[i]) {
			t.Errorf("item %d: %s, list has %s", i, g.Items[i], w.Items[i])
		}
	}
	isProblem(t, do(t, s, "GET", "/api/todos/broken", alice, ""), 400, "bad_request")

	d := r.Describe()
	if oi, _ := d.Operation("touch"); oi.Output != d.Row {
		t.Errorf("touch's output is not the row schema: %+v", oi.Output)
	}
	oi, _ := d.Operation("mine")
	if oi.Output == nil || oi.Output.Properties["items"] == nil || oi.Output.Properties["items"].Items != d.Row {
		t.Errorf("mine's output is not {items: [row]}: %+v", oi.Output)
	}
	if touch.Output != nil {
		t.Errorf("the shared Action must not carry one resource's row schema")
	}
}
