package rest

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
)

// TestCutArray cuts JSON arrays whose strings and nested values hold
// commas, brackets, braces, escaped quotes and backslashes.
func TestCutArray(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
		ok   bool
	}{
		{`[{"a":1}, {"a":2}]`, 1, `[{"a":1}]`, true},
		{"[{\"a\":1}, \n {\"a\":2}, \n {\"a\":3}]", 2, "[{\"a\":1}, \n {\"a\":2}]", true},
		{`[{"s":"x,\"],}{y"}, {"s":"\\"}, {"s":"\\\",["}]`, 2, `[{"s":"x,\"],}{y"}, {"s":"\\"}]`, true},
		{`[{"j":[1,[2,{"k":","}],3],"o":{"p":[",",{}]}}, {"j":null}]`, 1, `[{"j":[1,[2,{"k":","}],3],"o":{"p":[",",{}]}}]`, true},
		{`[{"a":1}, {"a":2}]`, 2, "", false},
		{`[{"a":1}]`, 1, "", false},
		{`[]`, 1, "", false},
	}
	for _, c := range cases {
		got, ok := cutArray([]byte(c.in), c.n)
		if ok != c.ok || string(got) != c.want {
			t.Errorf("cutArray(%s, %d) = %q, %v; want %q, %v", c.in, c.n, got, ok, c.want, c.ok)
		}
		if ok {
			var v []any
			if err := json.Unmarshal(got, &v); err != nil || len(v) != c.n {
				t.Errorf("cutArray(%s, %d) = %s: not an array of %d values (%v)", c.in, c.n, got, c.n, err)
			}
		}
	}
}

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
		s := server(t, "odd", b.resource("odd", &Config{Select: sel}))
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
