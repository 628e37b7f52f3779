package dataapi

import (
	"net/url"
	"slices"
	"testing"
)

// TestFilterOperators checks every filter operator against the SQL it
// stands for, evaluated directly by Postgres.
func TestFilterOperators(t *testing.T) {
	b := setup(t, nil)
	cases := []struct{ query, where string }{
		{"id=eq.2", "id = 2"},
		{"id=neq.2", "id <> 2"},
		{"score=gt.20", "score > 20"},
		{"score=gte.20", "score >= 20"},
		{"score=lt.20", "score < 20"},
		{"score=lte.20", "score <= 20"},
		{"name=like.*an*", "name like '%an%'"},
		{"name=ilike.c*", "name ilike 'c%'"},
		{"name=match.^[a-c]", "name ~ '^[a-c]'"},
		{"name=imatch.^C", "name ~* '^C'"},
		{"id=in.(1,3,5)", "id in (1,3,5)"},
		{"name=in.(apple,\"date\")", "name in ('apple','date')"},
		{"id=in.()", "false"},
		{"score=is.null", "score is null"},
		{"score=not.is.null", "score is not null"},
		{"score=is.not_null", "score is not null"},
		{"score=isdistinct.10", "score is distinct from 10"},
		{"tags=cs.{fruit}", "tags @> '{fruit}'"},
		{"tags=cd.{red,fruit,green}", "tags <@ '{red,fruit,green}'"},
		{"tags=ov.{yellow,green}", "tags && '{yellow,green}'"},
		{"data=cs." + url.QueryEscape(`{"color":"red"}`), `data @> '{"color":"red"}'`},
		{"data=cd." + url.QueryEscape(`{"color":"green","n":5,"x":1}`), `data <@ '{"color":"green","n":5,"x":1}'`},
		{"span=sl.[20,30)", "span << '[20,30)'"},
		{"span=sr.[5,8)", "span >> '[5,8)'"},
		{"span=nxr.[6,8)", "span &< '[6,8)'"},
		{"span=nxl.[6,8)", "span &> '[6,8)'"},
		{"span=adj.[20,30)", "span -|- '[20,30)'"},
		{"span=ov.[4,6)", "span && '[4,6)'"},
		{"doc=fts.quick", "doc @@ to_tsquery('quick')"},
		{"doc=fts(english).cats", "doc @@ to_tsquery('english', 'cats')"},
		{"doc=plfts.quick%20fox", "doc @@ plainto_tsquery('quick fox')"},
		{"doc=phfts(english).lazy%20dog", "doc @@ phraseto_tsquery('english', 'lazy dog')"},
		{"doc=wfts.quick%20-fox", "doc @@ websearch_to_tsquery('quick -fox')"},
		{"body=fts(english).cat", "to_tsvector('english', body) @@ to_tsquery('english', 'cat')"},
		{"name=like(any).{a*,*y}", "name like any('{a%,%y}')"},
		{"name=ilike(all).{*e*,*r*}", "name ilike all('{%e%,%r%}')"},
		{"id=eq(any).{1,2}", "id = any('{1,2}')"},
		{"score=gt(all).{5,15}", "score > all('{5,15}')"},
		{"id=not.eq.2", "not (id = 2)"},
		{"id=not.in.(1,2)", "not (id in (1,2))"},
		{"data->>color=eq.red", "data->>'color' = 'red'"},
		{"data->size->>w=eq.5", "data->'size'->>'w' = '5'"},
		{"data->n=gt.2", "(data->'n') > '2'"},
		{"or=(id.eq.1,score.gt.30)", "id = 1 or score > 30"},
		{"or=(id.eq.1,and(score.gte.20,score.lte.40))", "id = 1 or (score >= 20 and score <= 40)"},
		{"and=(score.gt.5,or(name.eq.apple,name.eq.elder))", "score > 5 and (name = 'apple' or name = 'elder')"},
		{"not.or=(id.eq.1,id.eq.2)", "not (id = 1 or id = 2)"},
		{"or=(id.eq.1,not.and(id.gt.2,id.lt.5))", "id = 1 or not (id > 2 and id < 5)"},
		{"or=(name.in.(apple,\"Cherry\"),score.is.null)", "name in ('apple','Cherry') or score is null"},
		{"or=(name.eq.\"a,b\",id.eq.4)", "name = 'a,b' or id = 4"},
		{"score=gte.10&score=lte.40", "score between 10 and 40"},
		{"id=gt.1&or=(score.is.null,score.gt.45)", "id > 1 and (score is null or score > 45)"},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			r := b.do("GET", "/things?select=id&order=id&"+c.query, "", "")
			if r.status != 200 {
				t.Fatalf("status %d %s", r.status, r.body)
			}
			if got, want := ids(t, r), b.sqlIDs(c.where); !slices.Equal(got, want) {
				t.Errorf("%s: got %v, SQL %q gives %v", c.query, got, c.where, want)
			}
		})
	}
}

// TestFilterRefusals: malformed filters answer 400 PGRST100 (or the
// SQLSTATE of a value the column cannot hold), never a 500.
func TestFilterRefusals(t *testing.T) {
	b := setup(t, nil)
	for _, q := range []string{"id=eq", "id=zz.1", "id=in.1,2", "id=is.maybe", "or=id.eq.1", "or=(id.eq.1", "id=eq(any).1",
		"order=id.desc,(", "select=a(", "limit=-1", "offset=x", "select=id::text;drop", "id=fts(eng%27).x"} {
		r := b.do("GET", "/things?"+q, "", "")
		if r.status != 400 {
			t.Errorf("%s: status %d %s", q, r.status, r.body)
		}
	}
	r := b.do("GET", "/things?id=eq.abc", "", "")
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "22P02" {
		t.Errorf("bad int: %d %s", r.status, r.body)
	}
	// Identifiers are quoted: a hostile column name is just a missing column.
	r = b.do("GET", "/things?select="+url.QueryEscape(`id,"x"" from pg_authid --"`), "", "")
	if r.status != 400 {
		t.Errorf("hostile column: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/things?select="+url.QueryEscape(`id,"x; drop table things"`), "", "")
	if r.status != 400 || r.json(t).(map[string]any)["code"] != "42703" {
		t.Errorf("quoted missing column: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/things?select=id&"+url.QueryEscape(`data->>x'; drop table things; --`)+"=eq.1", "", "")
	if r.status != 200 || r.body != "[]" {
		t.Errorf("hostile JSON key: %d %s", r.status, r.body)
	}
	if got := b.sqlIDs("true"); len(got) != 5 {
		t.Fatal("table changed")
	}
}
