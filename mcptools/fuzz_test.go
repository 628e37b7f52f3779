package mcptools

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// fuzzTools builds list, update and action tools from a hand-made
// description (no database: the argument decoder never touches one).
func fuzzTools(tb testing.TB) []*tool {
	tb.Helper()
	d := &rest.Description{
		Table: "todos", Schema: "public",
		Key:          rest.Column{Name: "id", Type: "bigint", TypeName: "int8", NotNull: true},
		Columns:      []rest.Column{{Name: "id", TypeName: "int8"}, {Name: "title", TypeName: "text"}},
		DefaultLimit: 50, MaxLimit: 1000, MaxBodyBytes: 1 << 10,
	}
	obj := rest.MustSchemaFor[map[string]any]()
	var out []*tool
	for _, op := range []rest.OperationInfo{
		{Operation: rest.OpList, ID: "listTodos", Method: http.MethodGet, Path: "/"},
		{Operation: rest.OpUpdate, ID: "updateTodo", Method: http.MethodPatch, Path: "/{id}", Item: true, Input: obj},
		{Operation: "send", ID: "sendTodos", Method: http.MethodPost, Path: "/{id}/send", Item: true, Input: obj, Query: obj,
			Action: &rest.Action{Method: http.MethodPost, Path: "/{id}/send"}},
	} {
		t, err := newTool(nil, d, op)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, t)
	}
	return out
}

// FuzzToolArguments: any arguments give either a call or a 400/413 problem
// that never echoes the input; never a panic.
func FuzzToolArguments(f *testing.F) {
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"filters":{"title":"eq.x"},"limit":5,"order":"id.desc","count":true,"cursor":"c"}`,
		`{"filters":{"title":["like.*a*","neq.b"]}}`, `{"id":7,"data":{"title":"x"}}`, `{"id":"7","data":null}`,
		`{"id":7,"data":{},"query":{"n":[1,true,"s"],"m":null}}`, `{"id":1e3}`, `{"id":{"x":1}}`, `{"query":{"a":{"b":1}}}`,
		`{"filters":{"limit":"eq.1"}}`, `{"limit":"1"}`, `{"count":1}`, "{\"id\":\"\u0000\"}",
	} {
		f.Add([]byte(s))
	}
	tools := fuzzTools(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, tl := range tools {
			c, p := tl.call(json.RawMessage(raw))
			if p != nil {
				if c != nil {
					t.Fatal("both a call and a problem")
				}
				if p.Kind != problem.KindBadRequest && p.Kind != problem.KindPayloadTooLarge {
					t.Fatalf("%s: kind %s", tl.def.Name, p.Kind)
				}
				b, _ := json.Marshal(p)
				if len(raw) >= 8 && strings.Contains(string(b), string(raw)) {
					t.Fatalf("%s: problem echoes the input: %s", tl.def.Name, b)
				}
				continue
			}
			if c == nil || c.Operation != tl.op.Operation {
				t.Fatalf("%s: call %+v", tl.def.Name, c)
			}
			if tl.keyArg != "" && c.Key == "" {
				t.Fatalf("%s: no key", tl.def.Name)
			}
			if int64(len(c.Body)) > tl.maxBody {
				t.Fatalf("%s: body above the limit", tl.def.Name)
			}
		}
	})
}
