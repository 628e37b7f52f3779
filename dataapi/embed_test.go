package dataapi

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

const embedSQL = `
create table authors (id int primary key, name text);
create table books (id int primary key, title text, author_id int references authors(id), editor_id int references authors(id));
create table labels (id int primary key, label text);
create table book_labels (book_id int references books(id), label_id int references labels(id), primary key (book_id, label_id));
create table profiles (author_id int primary key references authors(id), bio text);
do $$ declare t text; begin
  foreach t in array array['authors','books','labels','book_labels','profiles'] loop
    execute format('alter table %I enable row level security; grant select on %I to anon, authenticated', t, t);
    execute format('create policy read_all on %I for select using (true)', t);
  end loop;
end $$;
-- books hide 'secret' from everybody: an embed reads as the caller too
drop policy read_all on books;
create policy books_read on books for select using (title <> 'secret');
insert into authors values (1, 'Ann'), (2, 'Ben'), (3, 'Cy');
insert into books values (1, 'b1', 1, 2), (2, 'b2', 1, null), (3, 'b3', 2, 1), (4, 'secret', 1, null);
insert into labels values (1, 'red'), (2, 'blue');
insert into book_labels values (1, 1), (1, 2), (3, 2), (4, 1);
insert into profiles values (1, 'writes');
create function author_label(authors) returns text language sql stable as $$select upper($1.name)$$;
`

func embedBundle(t *testing.T) *bundle {
	b := newBundle(t)
	b.exec(embedSQL)
	return b.serve(nil)
}

func TestEmbedding(t *testing.T) {
	b := embedBundle(t)
	cases := []struct{ path, want string }{
		// to-one, disambiguated by the foreign key column
		{"/books?select=title,author:authors!author_id(name)&order=id&id=lt.3",
			`[{"title":"b1","author":{"name":"Ann"}}, ` + "\n" + ` {"title":"b2","author":{"name":"Ann"}}]`},
		// by constraint name; a null key embeds null
		{"/books?select=title,editor:authors!books_editor_id_fkey(name)&id=in.(1,2)&order=id",
			`[{"title":"b1","editor":{"name":"Ben"}}, ` + "\n" + ` {"title":"b2","editor":null}]`},
		// to-many, with the child's own RLS ('secret' hidden), order and limit
		{"/authors?select=name,books!author_id(title)&id=eq.1&books.order=title.desc",
			`[{"name":"Ann","books":[{"title":"b2"}, ` + "\n" + ` {"title":"b1"}]}]`},
		{"/authors?select=name,books!author_id(title)&id=eq.1&books.order=title&books.limit=1",
			`[{"name":"Ann","books":[{"title":"b1"}]}]`},
		{"/authors?select=name,books!author_id(title)&id=eq.3", `[{"name":"Cy","books":[]}]`},
		// embedded filter without !inner filters the children only
		{"/authors?select=name,books!author_id(title)&books.title=eq.b3&order=id",
			`[{"name":"Ann","books":[]}, ` + "\n" + ` {"name":"Ben","books":[{"title":"b3"}]}, ` + "\n" + ` {"name":"Cy","books":[]}]`},
		// !inner filters the parents
		{"/authors?select=name,books!author_id!inner(title)&books.title=eq.b3", `[{"name":"Ben","books":[{"title":"b3"}]}]`},
		{"/authors?select=name,books!author_id!inner()&order=id", `[{"name":"Ann"}, ` + "\n" + ` {"name":"Ben"}]`},
		// one-to-one: an object
		{"/authors?select=name,profiles(bio)&order=id&id=lt.3", `[{"name":"Ann","profiles":{"bio":"writes"}}, ` + "\n" + ` {"name":"Ben","profiles":null}]`},
		// many-to-many through the junction table
		{"/books?select=title,labels(label)&id=eq.1&labels.order=label", `[{"title":"b1","labels":[{"label":"blue"}, ` + "\n" + ` {"label":"red"}]}]`},
		{"/labels?select=label,books(title)&id=eq.1", `[{"label":"red","books":[{"title":"b1"}]}]`},
		// nested, and or= inside an embedded resource
		{"/authors?select=name,books!author_id(title,labels(label))&id=eq.2", `[{"name":"Ben","books":[{"title":"b3","labels":[{"label":"blue"}]}]}]`},
		{"/authors?select=name,books!author_id(title)&id=eq.1&books.or=(title.eq.b2,title.eq.secret)", `[{"name":"Ann","books":[{"title":"b2"}]}]`},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, "", "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s:\n got %d %s\nwant %s", c.path, r.status, r.body, c.want)
		}
	}
	more := []struct{ path, want string }{
		// computed columns: functions of the row type, selected, filtered, ordered
		{"/authors?select=id,author_label&id=eq.1", `[{"id":1,"author_label":"ANN"}]`},
		{"/authors?select=id&author_label=eq.BEN", `[{"id":2}]`},
		{"/authors?select=author_label&order=author_label.desc&limit=1", `[{"author_label":"CY"}]`},
		{"/books?select=title,author:authors!author_id(author_label)&id=eq.3", `[{"title":"b3","author":{"author_label":"BEN"}}]`},
		// spread: to-one columns join the parent; to-many become arrays
		{"/books?select=title,...authors!author_id(author:name)&id=eq.1", `[{"title":"b1","author":"Ann"}]`},
		{"/authors?select=name,...books!author_id(titles:title)&id=eq.1&books.order=title", `[{"name":"Ann","titles":["b1", "b2"]}]`},
	}
	for _, c := range more {
		r := b.do("GET", c.path, "", "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s:\n got %d %s\nwant %s", c.path, r.status, r.body, c.want)
		}
	}
	errs := []struct {
		path   string
		status int
		code   string
	}{
		{"/books?select=title,authors(name)", 300, "PGRST201"},
		{"/books?select=title,nope(name)", 400, "PGRST200"},
		{"/authors?select=name&books.title=eq.b1", 400, "PGRST108"},
		// aggregates, also in a spread, need the aggregates switch
		{"/books?select=title,...authors!author_id(count())", 400, "PGRST123"},
	}
	for _, c := range errs {
		r := b.do("GET", c.path, "", "")
		if m, _ := r.json(t).(map[string]any); r.status != c.status || m["code"] != c.code {
			t.Errorf("%s: %d %s, want %d %s", c.path, r.status, r.body, c.status, c.code)
		}
	}
}

// TestReadRoundTrips: a read — filters, count and embeds included — is
// one statement sent with the caller's settings in one round trip.
func TestReadRoundTrips(t *testing.T) {
	b := newBundle(t)
	b.exec(embedSQL)
	cfg, err := pgxpool.ParseConfig(b.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	tr := &pgtest.RoundTrips{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b.db = db.New(pool, nil)
	b.serve(nil)
	for _, path := range []string{
		"/books?select=id,title,author:authors!author_id(name),labels(label)&id=lt.3&order=id",
		"/authors?select=name,books!author_id!inner(title)&books.title=eq.b3",
		"/books?select=title,...authors!author_id!inner(name,books!author_id(title),...profiles(bio))&order=id",
	} {
		for i := 0; i < 2; i++ { // the first run prepares the statement
			tr.Reset()
			r := b.do("GET", path, "", "", "Prefer: count=exact")
			if r.status != 200 {
				t.Fatalf("%s: %d %s", path, r.status, r.body)
			}
		}
		if n := tr.Total(); n != 1 {
			t.Errorf("%s: %d round trips, want 1", path, n)
		}
	}
}

// TestEmbedOnFunctionResults: rows of a function returning a table's type
// embed along that table's foreign keys.
func TestEmbedOnFunctionResults(t *testing.T) {
	b := newBundle(t)
	b.exec(embedSQL + `create function books_of(a int) returns setof books language sql stable as 'select * from books where author_id = a';`)
	b.serve(nil)
	r := b.do("POST", "/rpc/books_of?select=title,writer:authors!author_id(name),labels(label)&order=title&labels.order=label", "", `{"a":1}`)
	want := `[{"title":"b1","writer":{"name":"Ann"},"labels":[{"label":"blue"}, ` + "\n" + ` {"label":"red"}]}, ` + "\n" + ` {"title":"b2","writer":{"name":"Ann"},"labels":[]}]`
	if r.status != 200 || r.body != want {
		t.Errorf("embed on rpc: %d %s\nwant %s", r.status, r.body, want)
	}
}

// TestEmbedThroughViews: a view over one table keeps the foreign keys of
// the columns it keeps, both ways.
func TestEmbedThroughViews(t *testing.T) {
	b := newBundle(t)
	b.exec(embedSQL + `
	  create view book_titles with (security_invoker = true) as select id, title, author_id from books;
	  create view writers with (security_invoker = true) as select id, name as display from authors;
	  grant select on book_titles, writers to anon;`)
	b.serve(nil)
	cases := []struct{ path, want string }{
		{"/book_titles?select=title,authors(name)&id=eq.1", `[{"title":"b1","authors":{"name":"Ann"}}]`},
		{"/authors?select=name,book_titles(title)&id=eq.2", `[{"name":"Ben","book_titles":[{"title":"b3"}]}]`},
		{"/book_titles?select=title,writers(display)&id=eq.3", `[{"title":"b3","writers":{"display":"Ben"}}]`},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, "", "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s: %d %s, want %s", c.path, r.status, r.body, c.want)
		}
	}
}

// TestAggregatesInEmbeds: aggregates of embedded resources are grouped
// per parent row.
func TestAggregatesInEmbeds(t *testing.T) {
	b := newBundle(t)
	b.exec(embedSQL)
	b.serve(&Config{Aggregates: true})
	r := b.do("GET", "/authors?select=name,books!author_id(count())&order=id", "", "")
	want := `[{"name":"Ann","books":[{"count":2}]}, ` + "\n" + ` {"name":"Ben","books":[{"count":1}]}, ` + "\n" + ` {"name":"Cy","books":[{"count":0}]}]`
	if r.status != 200 || r.body != want {
		t.Errorf("count per author: %d %s\nwant %s", r.status, r.body, want)
	}
	r = b.do("GET", "/labels?select=label,books(title,n:id.count())&id=eq.2&books.order=title", "", "")
	want = `[{"label":"blue","books":[{"title":"b1","n":1}, ` + "\n" + ` {"title":"b3","n":1}]}]`
	if r.status != 200 || r.body != want {
		t.Errorf("grouped in an embed: %d %s\nwant %s", r.status, r.body, want)
	}
}
