package rest

import (
	"testing"
)

// count=exact counts only the rows RLS lets the caller see (the count
// runs in the caller's statement), with and without filters and cursor.
func TestCountExactCountsOnlyVisibleRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name) select i, 1, i, 'v' from generate_series(1, 5) i`)
	b.exec(`insert into items (id, grp, score, name) select i, 13, i, 'hidden' from generate_series(6, 9) i`)
	s := server(t, "items", b.resource("items", nil))
	for q, want := range map[string]int64{
		"count=exact":                       5,
		"count=exact&name=eq.hidden":        0,
		"count=exact&score=gte.3":           3,
		"count=exact&grp=eq.13":             0,
		"count=exact&name=not.eq.v&limit=1": 0,
		"count=exact&grp=in.(1,13)&limit=2": 5,
	} {
		p := getPage(t, s, "/api/items?"+q, alice)
		if p.Count == nil || *p.Count != want {
			t.Errorf("%s: count %v, want %d", q, p.Count, want)
		}
		for _, it := range p.Items {
			if it["name"] == "hidden" {
				t.Errorf("%s: hidden row listed", q)
			}
		}
	}
}
