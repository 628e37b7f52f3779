package dataapi

import "testing"

// TestAdversarialAggregates: with aggregates on, counts, sums and filters
// on embedded resources see only the caller's rows.
func TestAdversarialAggregates(t *testing.T) {
	b := attackBundle(t)
	b.serve(&Config{AllowWithoutRLS: true, MaxRows: 50, Aggregates: true})
	cases := []struct{ path, user, body, cr string }{
		{"/secrets?select=count()", alice, `[{"count":1}]`, ""},
		{"/secrets?select=x:owner_id.count()", alice, `[{"x":1}]`, "0-0/1"},
		{"/secrets?select=id.sum()", bob, `[{"sum":5}]`, "0-0/2"}, // counts bob's 2 source rows
		{"/todos?select=id,notes(count())", alice, `[{"id":100,"notes":[{"count":1}]}]`, ""},
		{"/todos?select=id,notes(id)&notes.or=(id.eq.3,id.eq.2)", alice, `[{"id":100,"notes":[]}]`, ""},
		{"/todos?select=id,notes!inner(id)&notes.id=eq.3", alice, `[]`, "*/0"},
		{"/notes?select=id,todos!inner(id)&todos.id=eq.100", bob, `[]`, "*/0"},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, c.user, "", "Prefer: count=exact")
		if r.status/100 != 2 || r.body != c.body || c.cr != "" && r.header.Get("Content-Range") != c.cr {
			t.Errorf("%s as %.4s: %d %q %s", c.path, c.user, r.status, r.header.Get("Content-Range"), r.body)
		}
	}
}
