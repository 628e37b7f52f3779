package rest

import (
	"net/url"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/inlist"
	"github.com/tablegate/tablegate/problem"
)

func TestParseListValid(t *testing.T) {
	t.Parallel()
	r := mustFake(t, &Config{MaxLimit: 100})
	lq, err := r.parseList(url.Values{
		"title": {"like.*a*", "not.eq.x"},
		"score": {"in.(1,2,\"3,4\")", "is.null"},
		"order": {"score.desc.nullslast,title"},
		"limit": {"10"},
		"count": {"exact"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if lq.Limit != 10 || !lq.Count {
		t.Errorf("limit/count = %d/%v", lq.Limit, lq.Count)
	}
	want := []OrderTerm{{Column: "score", Desc: true, Nulls: NullsLast}, {Column: "title"}, {Column: "id"}}
	if len(lq.Order) != 3 || lq.Order[0] != want[0] || lq.Order[1] != want[1] || lq.Order[2] != want[2] {
		t.Errorf("order = %+v", lq.Order)
	}
	if len(lq.Filters) != 4 {
		t.Fatalf("filters = %+v", lq.Filters)
	}
	// Sorted by column then raw value: score in, score is, title like, title not.eq.
	f := lq.Filters
	if f[0].Op != FilterIn || strings.Join(f[0].Values, "|") != "1|2|3,4" {
		t.Errorf("in filter = %+v", f[0])
	}
	if f[1].Op != FilterIs || f[1].Value != "null" {
		t.Errorf("is filter = %+v", f[1])
	}
	if f[2].Op != FilterLike || f[2].Value != "%a%" {
		t.Errorf("like filter = %+v", f[2])
	}
	if f[3].Op != FilterEq || !f[3].Not || f[3].Value != "x" {
		t.Errorf("not.eq filter = %+v", f[3])
	}
	// Default limit.
	lq, err = r.parseList(url.Values{})
	if err != nil || lq.Limit != DefaultLimit || len(lq.Order) != 1 || lq.Order[0].Column != "id" {
		t.Errorf("defaults: %+v %v", lq, err)
	}
}

// TestPatternAtTheCap: a pattern of MaxPatternBytes is taken; one byte
// more is refused (TestParseListErrors).
func TestPatternAtTheCap(t *testing.T) {
	t.Parallel()
	r := mustFake(t, nil)
	if _, err := r.parseList(url.Values{"title": {"ilike." + strings.Repeat("b", MaxPatternBytes)}}); err != nil {
		t.Fatal(err)
	}
}

func TestParseListErrors(t *testing.T) {
	t.Parallel()
	r := mustFake(t, &Config{MaxLimit: 100})
	cases := []struct {
		name  string
		q     url.Values
		param string
	}{
		{"unknown column", url.Values{"nope": {"eq.1"}}, "nope"},
		{"unselected column", url.Values{"secret": {"eq.1"}}, "secret"},
		{"unknown operator", url.Values{"title": {"regex.x"}}, "title"},
		{"no operator", url.Values{"title": {"x"}}, "title"},
		{"bad is", url.Values{"score": {"is.maybe"}}, "score"},
		{"like pattern too long", url.Values{"title": {"like." + strings.Repeat("a", MaxPatternBytes+1)}}, "title"},
		{"ilike pattern too long", url.Values{"title": {"not.ilike.*" + strings.Repeat("é", MaxPatternBytes/2)}}, "title"},
		{"bad in", url.Values{"score": {"in.1,2"}}, "score"},
		{"unterminated in quote", url.Values{"score": {`in.("1,2)`}}, "score"},
		{"limit zero", url.Values{"limit": {"0"}}, "limit"},
		{"limit text", url.Values{"limit": {"ten"}}, "limit"},
		{"limit above max", url.Values{"limit": {"101"}}, "limit"},
		{"limit twice", url.Values{"limit": {"1", "2"}}, "limit"},
		{"order unknown column", url.Values{"order": {"nope.asc"}}, "order"},
		{"order unselected", url.Values{"order": {"secret"}}, "order"},
		{"order bad modifier", url.Values{"order": {"title.up"}}, "order"},
		{"order twice same column", url.Values{"order": {"title,title.desc"}}, "order"},
		{"order empty", url.Values{"order": {""}}, "order"},
		{"count planned", url.Values{"count": {"planned"}}, "count"},
		{"cursor garbage", url.Values{"cursor": {"abc"}}, "cursor"},
		{"cursor injection", url.Values{"cursor": {"'; drop table items; --.x"}}, "cursor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.parseList(c.q)
			p, ok := problem.As(err)
			if !ok || p.Status != 400 {
				t.Fatalf("err = %v, want 400 problem", err)
			}
			if !strings.Contains(p.Detail, `"`+c.param+`"`) {
				t.Errorf("detail %q does not name %q", p.Detail, c.param)
			}
		})
	}
}

func TestInList(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"()":                {},
		"(a)":               {"a"},
		"(a,b)":             {"a", "b"},
		`("a,b",c)`:         {"a,b", "c"},
		`("a\"b",c)`:        {`a"b`, "c"},
		`("(x)")`:           {"(x)"},
		"(,)":               {"", ""},
		`(a"b)`:             {`a"b`},
		`("it's",'x')`:      {"it's", "'x'"},
		`("1);drop table")`: {"1);drop table"},
	}
	for in, want := range cases {
		got, ok := inlist.Parse(in)
		if !ok || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("inlist.Parse(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a", "(a", `("a)`, `("a"b)`} {
		if _, ok := inlist.Parse(bad); ok {
			t.Errorf("inlist.Parse(%q) accepted", bad)
		}
	}
}
