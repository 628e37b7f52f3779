package dataapi

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// joinViewsSQL adds, over embedSQL, views joining several tables and a
// view in public over a table of a schema that is not exposed, whose
// rows belong to users.
const joinViewsSQL = `
create view book_details with (security_invoker = true) as
  select b.id as book_id, b.title, b.author_id as writer, a.name as author_name
  from books b join authors a on a.id = b.author_id;
create view book_people with (security_invoker = true) as
  select b.id, b.title, b.author_id, b.editor_id, a.name as author_name
  from books b left join authors a on a.id = b.author_id;
create view detail_names with (security_invoker = true) as
  select book_id, title as heading, writer from book_details;
create view writers with (security_invoker = true) as select id as writer_id, name from authors;
create view union_view with (security_invoker = true) as
  select id, author_id from books union all select id, author_id from books;
create schema private;
create table private.notes (id int primary key, book_id int references books(id), body text, owner uuid not null);
alter table private.notes enable row level security;
create policy own_notes on private.notes for select using (owner = auth.uid());
grant usage on schema private to anon, authenticated;
grant select on private.notes to anon, authenticated;
create view notes with (security_invoker = true) as select id, book_id as book, body from private.notes;
insert into private.notes values
  (1, 1, 'alice on b1', '11111111-1111-1111-1111-111111111111'),
  (2, 1, 'bob on b1', '22222222-2222-2222-2222-222222222222'),
  (3, 3, 'bob on b3', '22222222-2222-2222-2222-222222222222');
grant select on book_details, book_people, detail_names, writers, union_view, notes to anon, authenticated;
`

func joinViewsBundle(t *testing.T, cfg *Config) *bundle {
	b := newBundle(t)
	b.exec(embedSQL + joinViewsSQL)
	return b.serve(cfg)
}

// TestEmbedThroughJoinViews: a view joining two tables carries the
// foreign keys of each table whose columns it shows, under the view's
// names, both ways and through a junction; a view over it carries them
// on; a union carries none.
func TestEmbedThroughJoinViews(t *testing.T) {
	b := joinViewsBundle(t, nil)
	cases := []struct{ path, want string }{
		// the view embeds a table (books.author_id shown as writer)
		{"/book_details?select=title,author_name,authors(name)&book_id=eq.3",
			`[{"title":"b3","author_name":"Ben","authors":{"name":"Ben"}}]`},
		// a table embeds the view (its own RLS: 'secret' stays hidden)
		{"/authors?select=name,book_details(title)&id=eq.1&book_details.order=title",
			`[{"name":"Ann","book_details":[{"title":"b1"}, ` + "\n" + ` {"title":"b2"}]}]`},
		// many-to-many through the junction table, from the view
		{"/book_details?select=title,labels(label)&book_id=eq.1&labels.order=label",
			`[{"title":"b1","labels":[{"label":"blue"}, ` + "\n" + ` {"label":"red"}]}]`},
		// hints name the key or the view's column
		{"/book_people?select=title,editor:authors!editor_id(name)&id=eq.1",
			`[{"title":"b1","editor":{"name":"Ben"}}]`},
		{"/book_people?select=title,writer:authors!books_author_id_fkey(name)&id=eq.1",
			`[{"title":"b1","writer":{"name":"Ann"}}]`},
		// a view over the view
		{"/detail_names?select=heading,authors(name)&book_id=eq.2",
			`[{"heading":"b2","authors":{"name":"Ann"}}]`},
		{"/authors?select=name,detail_names!inner(heading)&detail_names.heading=eq.b3",
			`[{"name":"Ben","detail_names":[{"heading":"b3"}]}]`},
		// view to view
		{"/detail_names?select=heading,writers(name)&book_id=eq.2",
			`[{"heading":"b2","writers":{"name":"Ann"}}]`},
		{"/writers?select=name,book_people!author_id(id)&writer_id=eq.2",
			`[{"name":"Ben","book_people":[{"id":3}]}]`},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, "", "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s:\n got %d %s\nwant %s", c.path, r.status, r.body, c.want)
		}
	}

	// Two keys of the view to authors: PostgREST's PGRST201, its hint
	// and its details.
	r := b.do("GET", "/book_people?select=title,authors(name)", "", "")
	m, _ := r.json(t).(map[string]any)
	wantHint := "Try changing 'authors' to one of the following: 'authors!books_author_id_fkey', 'authors!books_editor_id_fkey'. Find the desired relationship in the 'details' key."
	if r.status != 300 || m["code"] != "PGRST201" || m["hint"] != wantHint {
		t.Errorf("ambiguous: %d %s", r.status, r.body)
	}
	details, _ := m["details"].([]any)
	if len(details) != 2 {
		t.Fatalf("ambiguous details: %s", r.body)
	}
	d0, _ := details[0].(map[string]any)
	if d0["cardinality"] != "many-to-one" || d0["embedding"] != "book_people with authors" ||
		d0["relationship"] != "books_author_id_fkey using book_people(author_id) and authors(id)" {
		t.Errorf("ambiguous details[0]: %v", d0)
	}

	errs := []struct {
		path, wantDetail string
		status           int
		code             string
	}{
		// a hint naming nothing, a column the view does not show, a base
		// table's column under its hidden name
		{"/book_details?select=title,authors!nope(name)", "using the hint 'nope'", 400, "PGRST200"},
		{"/book_details?select=title,authors!editor_id(name)", "using the hint 'editor_id'", 400, "PGRST200"},
		{"/book_details?select=title,authors!author_id(name)", "using the hint 'author_id'", 400, "PGRST200"},
		// a union traces no column: no relationship
		{"/union_view?select=id,authors(name)", "between 'union_view' and 'authors'", 400, "PGRST200"},
		// a hint naming the junction picks it; a table that is no junction does not
		{"/book_details?select=title,labels!authors(label)", "using the hint 'authors'", 400, "PGRST200"},
		// two views over the same table share a junction's one key, which
		// is no many-to-many relationship between them
		{"/detail_names?select=heading,book_people(id)", "between 'detail_names' and 'book_people'", 400, "PGRST200"},
	}
	for _, c := range errs {
		r := b.do("GET", c.path, "", "")
		m, _ := r.json(t).(map[string]any)
		if d, _ := m["details"].(string); r.status != c.status || m["code"] != c.code || !strings.Contains(d, c.wantDetail) {
			t.Errorf("%s: %d %s, want %d %s with %q", c.path, r.status, r.body, c.status, c.code, c.wantDetail)
		}
	}
	r = b.do("GET", "/book_details?select=title,labels!book_labels(label)&book_id=eq.3", "", "")
	if r.status != 200 || r.body != `[{"title":"b3","labels":[{"label":"blue"}]}]` {
		t.Errorf("junction hint: %d %s", r.status, r.body)
	}
}

// TestEmbedThroughViewRLS: the rows of a view over a private table are
// the caller's own, embedded from a table, embedding a table, spread or
// filtered with !inner; anon sees none.
func TestEmbedThroughViewRLS(t *testing.T) {
	b := joinViewsBundle(t, nil)
	cases := []struct{ user, path, want string }{
		{alice, "/books?select=title,notes(body)&order=id&id=in.(1,3)",
			`[{"title":"b1","notes":[{"body":"alice on b1"}]}, ` + "\n" + ` {"title":"b3","notes":[]}]`},
		{bob, "/books?select=title,notes(body)&order=id&id=in.(1,3)&notes.order=body",
			`[{"title":"b1","notes":[{"body":"bob on b1"}]}, ` + "\n" + ` {"title":"b3","notes":[{"body":"bob on b3"}]}]`},
		{alice, "/notes?select=body,books(title)", `[{"body":"alice on b1","books":{"title":"b1"}}]`},
		{alice, "/books?select=title,...notes(bodies:body)&id=eq.1", `[{"title":"b1","bodies":["alice on b1"]}]`},
		{alice, "/books?select=title,notes!inner(body)", `[{"title":"b1","notes":[{"body":"alice on b1"}]}]`},
		{"anon", "/books?select=title,notes!inner(body)", `[]`},
		{alice, "/notes?select=body&book=eq.3", `[]`},
	}
	for _, c := range cases {
		r := b.do("GET", c.path, c.user, "")
		if r.status != 200 || r.body != c.want {
			t.Errorf("%s as %s:\n got %d %s\nwant %s", c.path, c.user, r.status, r.body, c.want)
		}
	}
}

// TestJoinViewsMustBeProtected: a view joining a table row-level
// security does not protect, or a view that is not a security invoker,
// stops the start, as any exposed view does.
func TestJoinViewsMustBeProtected(t *testing.T) {
	for name, sql := range map[string]string{
		"open table": `create table open_t (id int primary key, author_id int references authors(id));
		  grant select on open_t to anon;
		  create view open_join with (security_invoker = true) as
		    select o.id, a.name from open_t o join authors a on a.id = o.author_id;
		  grant select on open_join to anon;
		  revoke all on open_t from anon;`,
		"definer view": `create view definer_join as
		    select b.id, b.title, a.name from books b join authors a on a.id = b.author_id;
		  grant select on definer_join to anon;`,
	} {
		t.Run(name, func(t *testing.T) {
			b := newBundle(t)
			b.exec(embedSQL + sql)
			_, err := New(context.Background(), &Config{DB: b.db, Caller: testCaller})
			if !errors.Is(err, ErrUnprotected) {
				t.Fatalf("New: %v, want ErrUnprotected", err)
			}
		})
	}
}

func TestViewOriginsMalformed(t *testing.T) {
	for _, s := range []string{"", "(", "({QUERY :targetList (", "({QUERY :targetList ({TARGETENTRY :resno 1 :resorigtbl 5 :resorigcol 1 :resjunk false})})",
		strings.Repeat("(", 5000), "({QUERY} {QUERY})", "}{", "({QUERY :targetList ({TARGETENTRY :resno x :resorigtbl 5 :resorigcol 1 :resjunk false})})"} {
		got := viewOrigins(s)
		if strings.HasPrefix(s, "({QUERY :targetList ({TARGETENTRY :resno 1") {
			if got[1] != (columnOrigin{5, 1}) || len(got) != 1 {
				t.Errorf("%q: %v", s, got)
			}
			continue
		}
		if len(got) != 0 {
			t.Errorf("%q: %v, want nothing", s, got)
		}
	}
}
