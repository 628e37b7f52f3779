package dataapi

import (
	"context"
	"testing"
)

// TestAggregateInputCasts: a cast before an aggregate applies to its
// input (amount::int.sum()), also with an output cast and on a JSON
// path, as Postgres computes it.
func TestAggregateInputCasts(t *testing.T) {
	b := setup(t, &Config{Aggregates: true})
	for _, tc := range []struct{ sel, sql string }{
		{"score::text.max()", "select json_agg(json_build_object('max', m))::text from (select max(score::text) m from things) _"},
		{"total:score::numeric.sum()::int", "select json_agg(json_build_object('total', s))::text from (select sum(score::numeric)::int s from things) _"},
		{"data->>n::int.sum()", "select json_agg(json_build_object('sum', s))::text from (select sum((data->>'n')::int) s from things) _"},
		{"name,score::numeric.avg()::int&order=name", "select json_agg(json_build_object('name', name, 'avg', a) order by name)::text from (select name, avg(score::numeric)::int a from things group by name) _"},
	} {
		var want string
		if err := b.pool.QueryRow(context.Background(), tc.sql).Scan(&want); err != nil {
			t.Fatal(err)
		}
		r := b.do("GET", "/things?select="+tc.sel, "", "")
		if r.status != 200 || !sameJSON(t, r.body, want) {
			t.Errorf("select=%s: %d %s, want %s", tc.sel, r.status, r.body, want)
		}
	}
}
