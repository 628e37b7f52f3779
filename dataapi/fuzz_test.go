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

// FuzzViewOrigins: no rewrite action text makes the node tree reader
// panic or loop.
func FuzzViewOrigins(f *testing.F) {
	for _, s := range []string{
		"({QUERY :targetList ({TARGETENTRY :expr {VAR :varno 1} :resno 1 :resname id :resorigtbl 16385 :resorigcol 1 :resjunk false})})",
		`({QUERY :targetList ({TARGETENTRY :expr {CONST :constvalue 4 [ 1 0 0 0 ]} :resno 1 :resname \:x\ y :resorigtbl 0 :resorigcol 0 :resjunk false})})`,
		"((((", "{}", `\`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for resno, o := range viewOrigins(s) {
			if o.rel == 0 || o.attnum <= 0 || resno == 0 && o.attnum == 0 {
				t.Fatalf("origin %d: %+v", resno, o)
			}
		}
	})
}
