package rest

import (
	"net/url"

	"github.com/google/jsonschema-go/jsonschema"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/problem"
)

// FuzzListQuery: any query string either parses into a list query whose
// SQL builds, or is refused with a 400 problem; never a panic. Bound
// values never reach the SQL text. Seed corpus: testdata/fuzz/FuzzListQuery.
func FuzzListQuery(f *testing.F) {
	r, err := fakeResource(f, &Config{MaxLimit: 100, CursorKey: []byte("fuzz")})
	if err != nil {
		f.Fatal(err)
	}
	tr := r.repo.(*tableRepository)
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := r.parseList(q)
		if err != nil {
			if p, ok := problem.As(err); !ok || p.Status != 400 {
				t.Fatalf("error %v is not a 400 problem", err)
			}
			return
		}
		// Pretend a cursor was given, to exercise the keyset SQL.
		lq.After = make([]any, len(lq.Order))
		for i := range lq.After {
			if i%2 == 0 {
				lq.After[i] = "v"
			}
		}
		var b strings.Builder
		args := &sqlArgs{}
		if err := tr.where(&b, args, lq, true); err != nil {
			t.Fatal(err)
		}
		sql := b.String()
		for _, f := range lq.Filters {
			if len(f.Value) > 3 && strings.Contains(sql, f.Value) && !strings.Contains("t.\"id\" \"title\" \"score\" IS NULL IS TRUE IS FALSE IS UNKNOWN", f.Value) {
				t.Fatalf("value %q reached the SQL text: %s", f.Value, sql)
			}
		}
	})
}

// FuzzParseBody: any create or update body either decodes into a row that
// names only writable columns, or is refused with a 400 problem; never a
// panic, never another status. Seed corpus: testdata/fuzz/FuzzParseBody.
func FuzzParseBody(f *testing.F) {
	type in struct {
		Title string `json:"title"`
		Score *int   `json:"score,omitempty"`
	}
	r, err := fakeResource(f, &Config{
		ReadOnly: []string{"secret"},
		Input:    map[Operation]*jsonschema.Schema{OpCreate: MustSchemaFor[in]()},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, update bool, body []byte) {
		op := OpCreate
		if update {
			op = OpUpdate
		}
		row, err := r.parseBody(op, body)
		if err != nil {
			if p, ok := problem.As(err); !ok || p.Status != 400 {
				t.Fatalf("error %v is not a 400 problem", err)
			}
			return
		}
		for k := range row {
			c, ok := r.byName[k]
			if !ok || c.ReadOnly || (update && c == r.key) {
				t.Fatalf("body column %q accepted", k)
			}
		}
	})
}
