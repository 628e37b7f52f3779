package dataapi

import (
	"net/url"
	"testing"
)

// FuzzGrammar: no query string makes the parsers or the SQL builder
// panic.
func FuzzGrammar(f *testing.F) {
	for _, s := range []string{
		"select=id,alias:data->a->>b::text,books!inner(title,labels(*))",
		"or=(a.eq.1,and(b.gt.2,not.or(c.is.null,d.in.(\"x,y\",z))))",
		"order=a.desc.nullslast,data->>x&limit=3&offset=2",
		"name=like(any).{a*,b*}&doc=fts(english).cat&id=not.in.()",
		"books.title=eq.x&books.order=id&books.limit=1&books.not.or=(id.eq.1)",
		"select=\"a\"\"b\",x:\"c d\"&\"e\"=eq.\"f\"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		items, e := parseSelect(q.Get("select"))
		if e != nil {
			return
		}
		cond, e := parseConditions(q)
		if e != nil {
			return
		}
		b := &builder{rel: &relation{name: "t", colIndex: map[string]int{}}, cond: cond}
		_, _, _ = b.selectListSQL("_t", nil, items, nil, cond)
		_ = b.whereSQL(cond)
		_ = b.orderSQL("_t", cond.order)
	})
}
