package rest

import (
	"net/http"
	"testing"
)

// TestActionQueryPointerFields: a query field typed *bool infers the schema
// type ["null", "boolean"]; ?done=true must decode as a boolean, and an
// absent parameter must leave the pointer nil.
func TestActionQueryPointerFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	type q struct {
		Done  *bool `json:"done,omitempty"`
		Limit *int  `json:"limit,omitempty"`
	}
	res := b.resource("todos", &Config{Actions: map[string]*Action{
		"probe": DefineAction(ActionDef[None, q, map[string]any]{
			Method: "GET", Path: "/probe",
			Handler: func(c *Ctx, in ActionInput[None, q]) (map[string]any, error) {
				out := map[string]any{"done": nil, "limit": nil}
				if in.Query.Done != nil {
					out["done"] = *in.Query.Done
				}
				if in.Query.Limit != nil {
					out["limit"] = *in.Query.Limit
				}
				return out, nil
			},
		}),
	}})
	s := server(t, "todos", res)
	for _, tc := range []struct {
		query, want string
		status      int
	}{
		{"?done=true&limit=3", `{"done":true,"limit":3}`, http.StatusOK},
		{"?done=false", `{"done":false,"limit":null}`, http.StatusOK},
		{"", `{"done":null,"limit":null}`, http.StatusOK},
		{"?done=maybe", "", http.StatusBadRequest},
	} {
		r := do(t, s, http.MethodGet, "/api/todos/probe"+tc.query, alice, "")
		if r.status != tc.status || (tc.want != "" && r.body != tc.want && r.body != tc.want+"\n") {
			t.Errorf("probe%s: %s, want %d %s", tc.query, r, tc.status, tc.want)
		}
	}
}
