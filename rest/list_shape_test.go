package rest

import (
	"fmt"
	"net/url"
	"testing"
)

// TestListColumnNamedLikeAliases: columns named like the list statement's
// aliases (t, _tg_row) are listed as columns, an unselected key orders and
// pages without appearing in the items, and a walk sees every row once.
func TestListColumnNamedLikeAliases(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table odd (id int4 primary key, t text, _tg_row int4);
	grant all on odd to authenticated;
	insert into odd select g, 'v,"}' || g, g % 3 from generate_series(1, 7) g`)
	for _, sel := range [][]string{nil, {"t", "_tg_row"}} {
		s := server(t, "odd", b.resource("odd", &Config{Select: sel, AllowWithoutRLS: true}))
		q := "/api/odd?limit=2&order=_tg_row.desc,t"
		var got []string
		var cursor string
		for n := 0; n < 10; n++ {
			path := q
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			r := do(t, s, "GET", path, alice, "")
			if r.status != 200 {
				t.Fatalf("%v %s: %s", sel, path, r)
			}
			p := getPageBody(t, r.body)
			for _, it := range p.Items {
				if _, has := it["id"]; has != (sel == nil) {
					t.Fatalf("select %v: item %v", sel, it)
				}
				got = append(got, fmt.Sprintf("%v %v", it["_tg_row"], it["t"]))
			}
			if p.NextCursor == nil {
				break
			}
			cursor = *p.NextCursor
		}
		want := []string{`2 v,"}2`, `2 v,"}5`, `1 v,"}1`, `1 v,"}4`, `1 v,"}7`, `0 v,"}3`, `0 v,"}6`}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("select %v: walk %q, want %q", sel, got, want)
		}
	}
}
