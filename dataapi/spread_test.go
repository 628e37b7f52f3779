package dataapi

import (
	"context"
	"strings"
	"testing"
)

// TestSpreadAggregates: an aggregate in a to-one spread is applied by
// the parent over its rows, grouped by its other columns (PostgREST's
// hoisting); in a to-many spread it is PostgREST's PGRST127.
func TestSpreadAggregates(t *testing.T) {
	b := joinViewsBundle(t, &Config{Aggregates: true})
	cases := []struct{ user, path, want string }{
		// books per author name ('secret' stays hidden by books' RLS)
		{"", "/books?select=...authors!author_id(name,n:id.count())&author_id=eq.1", `[{"name":"Ann","n":2}]`},
		// grouped by the parent's own column; an output cast
		{"", "/books?select=author_id,...authors!author_id(total:id.sum())&author_id=eq.1", `[{"author_id":1,"total":2}]`},
		{"", "/books?select=...authors!author_id(s:id.sum()::text)&author_id=eq.2", `[{"s":"2"}]`},
		// count() counts the parent rows a related row exists for
		{"", "/books?select=...authors!editor_id(n:count())", `[{"n":2}]`},
		// lifted through two to-one spreads to the root
		{"", "/book_labels?select=...books(...authors!author_id(name,n:id.count()))&book_id=eq.1", `[{"name":"Ann","n":2}]`},
		// lifted to a to-many embed, applied per parent there
		{"", "/authors?select=name,books!author_id(...authors!editor_id(n:count()))&id=eq.1",
			`[{"name":"Ann","books":[{"n":1}]}]`},
		// row-level security decides the rows counted
		{alice, "/notes?select=...books(n:count())", `[{"n":1}]`},
		{bob, "/notes?select=...books(n:count())", `[{"n":2}]`},
		{"anon", "/notes?select=...books(n:count())", `[{"n":0}]`},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, c.user, "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s as %q:\n got %d %s\nwant %s", c.path, c.user, r.status, r.body, c.want)
		}
	}
	for _, path := range []string{
		"/authors?select=name,...books!author_id(total:id.sum())",
		"/authors?select=name,...books!author_id(title,n:count())",
		// a to-one spread's aggregate lifted into a to-many spread
		"/authors?select=name,...books!author_id(...authors!editor_id(n:count()))",
	} {
		r := b.do("GET", path, "", "")
		m, _ := r.json(t).(map[string]any)
		if r.status != 400 || m["code"] != "PGRST127" || m["details"] != "Aggregates are not implemented for one-to-many or many-to-many spreads." {
			t.Errorf("%s: %d %s, want 400 PGRST127", path, r.status, r.body)
		}
	}

	off := joinViewsBundle(t, nil)
	for _, path := range []string{
		"/books?select=...authors!author_id(n:count())",
		"/authors?select=name,...books!author_id(total:id.sum())",
		"/book_labels?select=...books(...authors!author_id(name.max()))",
	} {
		r := off.do("GET", path, "", "")
		if m, _ := r.json(t).(map[string]any); r.status != 400 || m["code"] != "PGRST123" {
			t.Errorf("aggregates off, %s: %d %s, want 400 PGRST123", path, r.status, r.body)
		}
	}
}

// TestSpreadNestedAndInner: embeds and spreads inside a spread, and
// !inner on a spread filtering the parents.
func TestSpreadNestedAndInner(t *testing.T) {
	b := joinViewsBundle(t, nil)
	cases := []struct{ user, path, want string }{
		// an embed inside a to-one spread becomes the parent's key
		{"", "/books?select=title,...authors!author_id(name,books!author_id(title))&id=eq.3",
			`[{"title":"b3","name":"Ben","books":[{"title":"b3"}]}]`},
		// inside a to-many spread, an array of its values
		{"", "/labels?select=label,...books(titles:title,author:authors!author_id(name))&id=eq.2&books.order=title",
			`[{"label":"blue","titles":["b1", "b3"],"author":[{"name":"Ann"}, {"name":"Ben"}]}]`},
		// a spread inside a spread
		{"", "/book_labels?select=label_id,...books(title,...authors!author_id(author:name))&book_id=eq.1&order=label_id",
			`[{"label_id":1,"title":"b1","author":"Ann"}, ` + "\n" + ` {"label_id":2,"title":"b1","author":"Ann"}]`},
		{"", "/books?select=title,...authors!author_id(*)&id=eq.2", `[{"title":"b2","id":1,"name":"Ann"}]`},
		// !inner: only parents with a related row the filters keep
		{"", "/authors?select=name,...books!author_id!inner(titles:title)&books.title=eq.b3",
			`[{"name":"Ben","titles":["b3"]}]`},
		{"", "/books?select=title,...authors!editor_id!inner(editor:name)&order=id",
			`[{"title":"b1","editor":"Ben"}, ` + "\n" + ` {"title":"b3","editor":"Ann"}]`},
		{"", "/books?select=title,...authors!editor_id!inner()&order=id",
			`[{"title":"b1"}, ` + "\n" + ` {"title":"b3"}]`},
		// !inner through a nested spread's own !inner
		{"", "/labels?select=label,...books!inner(title,...authors!editor_id!inner(editor:name))&order=id",
			`[{"label":"red","title":["b1"],"editor":["Ben"]}, ` + "\n" + ` {"label":"blue","title":["b1", "b3"],"editor":["Ben", "Ann"]}]`},
		// row-level security through a spread and !inner: only the
		// caller's notes, and only books with one of them
		{alice, "/books?select=title,...notes!inner(body)&order=id", `[{"title":"b1","body":["alice on b1"]}]`},
		{bob, "/books?select=title,...notes!inner(body)&order=id&notes.order=body",
			`[{"title":"b1","body":["bob on b1"]}, ` + "\n" + ` {"title":"b3","body":["bob on b3"]}]`},
		{"anon", "/books?select=title,...notes!inner(body)", `[]`},
		{alice, "/notes?select=body,...books(title,...authors!author_id(author:name))", `[{"body":"alice on b1","title":"b1","author":"Ann"}]`},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, c.user, "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s as %q:\n got %d %s\nwant %s", c.path, c.user, r.status, r.body, c.want)
		}
	}
	// Spreads shape a write's representation and a function's rows.
	b.exec(`grant insert on books to anon; create policy books_insert on books for insert with check (true);`)
	r := b.do("POST", "/books?select=title,...authors!author_id(author:name)", "", `{"id":9,"title":"new","author_id":2}`,
		"Prefer: return=representation", "Prefer: tx=rollback")
	if r.status != 201 || r.body != `[{"title":"new","author":"Ben"}]` {
		t.Errorf("insert representation with a spread: %d %s", r.status, r.body)
	}
	b.exec(`create function books_by(a int) returns setof books language sql stable as 'select * from books where author_id = a';`)
	if err := b.api.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	r = b.do("GET", "/rpc/books_by?a=2&select=title,...authors!author_id(author:name,books!author_id(title))", "", "")
	if r.status != 200 || r.body != `[{"title":"b3","author":"Ben","books":[{"title":"b3"}]}]` {
		t.Errorf("function rows with a spread: %d %s", r.status, r.body)
	}
	// Filters inside a spread that is not embedded answer PGRST108.
	r = b.do("GET", "/books?select=title,...authors!author_id(name)&labels.label=eq.red", "", "")
	if m, _ := r.json(t).(map[string]any); r.status != 400 || m["code"] != "PGRST108" {
		t.Errorf("filter on a missing embed: %d %s", r.status, r.body)
	}
}

// TestSpreadDeepNesting: spreads nested deep and wide answer; past the
// grammar's nesting bound, PGRST100.
func TestSpreadDeepNesting(t *testing.T) {
	b := joinViewsBundle(t, nil)
	// books → authors (to-one) → books (to-many) → …, 14 levels.
	sel, end := "title", ""
	for i := range 14 {
		if i%2 == 0 {
			sel += ",...authors!author_id(name"
		} else {
			sel += ",...books!author_id(title"
		}
		end += ")"
	}
	r := b.do("GET", "/books?select="+sel+end+"&id=eq.3", "", "")
	if r.status != 200 || !strings.HasPrefix(r.body, `[{"title":"b3","name":"Ben"`) {
		t.Errorf("14 nested spreads: %d %.300s", r.status, r.body)
	}
	// Wide columns at every level: each spread's subquery is joined
	// once, so the statement grows with the select, not with its
	// product.
	cols := strings.Repeat("name,", 20) + "name"
	sel, end = "title", ""
	for i := range 10 {
		if i%2 == 0 {
			sel += ",...authors!author_id(" + strings.ReplaceAll(cols, "name", "n"+string(rune('a'+i))+":name")
		} else {
			sel += ",...books!author_id(" + strings.ReplaceAll(cols, "name", "t"+string(rune('a'+i))+":title")
		}
		end += ")"
	}
	r = b.do("GET", "/books?select="+sel+end+"&id=eq.1", "", "")
	if r.status != 200 || !strings.HasPrefix(r.body, `[{"title":"b1","na":"Ann","na":"Ann"`) {
		t.Errorf("wide nested spreads: %d %.300s", r.status, r.body)
	}
	// Past the nesting bound: PGRST100.
	sel, end = "title", ""
	for range 40 {
		sel += ",...authors!author_id(name,...books!author_id(title"
		end += "))"
	}
	r = b.do("GET", "/books?select="+sel+end, "", "")
	if m, _ := r.json(t).(map[string]any); r.status != 400 || m["code"] != "PGRST100" {
		t.Errorf("40 nested spreads: %d %.300s", r.status, r.body)
	}
}
