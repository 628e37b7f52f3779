package events_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// asRole runs sql in a transaction as role (anon or authenticated, with
// the claims a Supabase client of that role would have) and returns the
// SQLSTATE of its error, "" when it succeeded (then it commits).
func asRole(b *bundle, role, claims, sql string, args ...any) string {
	b.t.Helper()
	ctx := b.t.Context()
	tx, err := b.pool.Begin(ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)`, role, claims); err != nil {
		b.t.Fatal(err)
	}
	var who string
	if err := tx.QueryRow(ctx, `select current_user`).Scan(&who); err != nil || who != role {
		b.t.Fatalf("running as %q (%v), want %q", who, err, role)
	}
	if _, err := tx.Exec(ctx, sql, args...); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			b.t.Fatal(err)
		}
		return pe.Code
	}
	if err := tx.Commit(ctx); err != nil {
		b.t.Fatal(err)
	}
	return ""
}

// TestForgedEventsRefused: a caller with a SQL path as anon or
// authenticated (a member of the subscribers' tenant included) can forge
// neither a table event (todos.deleted of a row that still exists) nor an
// action event with a made-up payload, by any function or table of the
// outbox; service_role cannot forge table events either. Legitimate table
// events (trigger) and action events (events.Emit as the caller) still
// arrive, with the caller's actor and tenant.
func TestForgedEventsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	sa := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	if sa.status != 200 {
		t.Fatalf("subscribe: %d %s", sa.status, sa.body)
	}
	id := b.create(bobTok, "bob's todo")
	key := strconv.FormatInt(id, 10)
	sa.expect("todos.created")

	callers := map[string]string{
		"anon":          `{"role":"anon"}`,
		"authenticated": fmt.Sprintf(`{"role":"authenticated","sub":%q,"tenant_id":%q,"is_anonymous":false}`, bob, tenantA),
	}
	forgeries := []struct {
		sql  string
		args []any
	}{
		{`select tablegate.emit_event('todos.deleted', 'public.todos', $1, null)`, []any{key}},
		{`select tablegate.emit_event('todos.created', 'todos', $1, null)`, []any{key}},
		{`select tablegate.emit_event('todo.completed', 'public.todos', $1, '{"forged":true}')`, []any{key}},
		{`select tablegate.emit_event('todo.announced', 'public.todos', null, '{"forged":true}')`, nil},
		{`select tablegate.insert_event('todos.deleted', 'public.todos', $1, null, null)`, []any{key}},
		{`insert into tablegate.events (name, tbl, key) values ('todos.deleted', 'public.todos', $1)`, []any{key}},
	}
	for role, claims := range callers {
		for _, f := range forgeries {
			if code := asRole(b, role, claims, f.sql, f.args...); code != "42501" {
				t.Errorf("as %s, %s: SQLSTATE %q, want 42501 (insufficient privilege)", role, f.sql, code)
			}
		}
	}
	// service_role (the trusted backend) may emit action events but no
	// table event of a table with events, however the name or table is
	// spelled.
	svc := `{"role":"service_role"}`
	for _, f := range []string{
		`select tablegate.emit_event('todos.deleted', 'public.todos', $1, null)`,
		`select tablegate.emit_event('todos.updated', 'public.todos', $1, '{}')`,
		`select tablegate.emit_event('todos.created', 'public.todos', $1::text || '0', null)`,
	} {
		if code := asRole(b, "service_role", svc, f, key); code != "42501" {
			t.Errorf("as service_role, %s: SQLSTATE %q, want 42501", f, code)
		}
	}
	if code := asRole(b, "service_role", svc, `select 1 where tablegate.emit_event('other.deleted', 'public.todos', $1, null) > 0`, key); code != "" {
		t.Errorf("as service_role, a name of no table: SQLSTATE %q", code)
	}

	// The row still exists, and legitimate events still arrive.
	if st, body := b.call("PATCH", "/api/todos/"+key, bobTok, `{"title":"renamed"}`); st != 200 {
		t.Fatalf("update: %d %s", st, body)
	}
	if st, body := b.call("POST", "/api/todos/"+key+"/complete", bobTok, ""); st != 200 {
		t.Fatalf("complete: %d %s", st, body)
	}
	if st, body := b.call("POST", "/api/todos/announce", bobTok, ""); st != 204 {
		t.Fatalf("announce: %d %s", st, body)
	}
	got := sa.expect("todos.updated", "todos.updated", "todo.completed", "todo.announced")
	for _, ev := range got {
		d := ev.Data
		if strings.Contains(ev.Raw, "forged") || d.Actor == nil || *d.Actor != bob || d.Tenant == nil || *d.Tenant != tenantA {
			t.Fatalf("%s: %s", ev.Name, ev.Raw)
		}
	}
	sa.quiet(500 * time.Millisecond)
}

// TestEmitReadsOnlyWhatServiceRoleMay: emit_event reads a row image with
// its owner's rights, and service_role (the one API role that may call it)
// could copy into the outbox, then read back, a row of any table with a
// one-column key, such as the migration table it has no grant on. It now
// refuses a table service_role may not read; a table it may read still
// gets its image, also for a key its type cannot hold (no image).
func TestEmitReadsOnlyWhatServiceRoleMay(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := t.Context()
	if _, err := b.pool.Exec(ctx, `create schema hidden;
create table hidden.keys (id int primary key, secret text);
insert into hidden.keys values (1, 'hunter2');
create table public.closed (id int primary key, secret text);
insert into public.closed values (1, 'hunter3');
revoke all on public.closed from service_role`); err != nil {
		t.Fatal(err)
	}
	svc := `{"role":"service_role"}`
	for _, tbl := range []string{"hidden.keys", "public.closed", "public.tablegate_migrations"} {
		if code := asRole(b, "service_role", svc, `select tablegate.emit_event('leak', $1, '1', null)`, tbl); code != "42501" {
			t.Errorf("emit with the image of %s: SQLSTATE %q, want 42501", tbl, code)
		}
	}
	var n int
	if err := b.pool.QueryRow(ctx, `select count(*) from tablegate.events where image::text like '%hunter%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("images of closed rows in the outbox: %d %v", n, err)
	}
	// A readable table still gets its image, found by its key's type.
	key := strconv.FormatInt(b.create(b.token(bob, tenantA, false), "imaged"), 10)
	for _, k := range []string{key, "not-a-number"} {
		if code := asRole(b, "service_role", svc, `select tablegate.emit_event('todo.noted', 'public.todos', $1, null)`, k); code != "" {
			t.Fatalf("emit on public.todos key %q: SQLSTATE %q", k, code)
		}
	}
	var img, none *string
	if err := b.pool.QueryRow(ctx, `select (select image::text from tablegate.events where name = 'todo.noted' and key = $1),
  (select image::text from tablegate.events where name = 'todo.noted' and key = 'not-a-number')`, key).Scan(&img, &none); err != nil {
		t.Fatal(err)
	}
	if img == nil || !strings.Contains(*img, "imaged") || none != nil {
		t.Errorf("images: %v %v", img, none)
	}

	// Keys of other types: the image is the row whose key is exactly the
	// one given (no rounding or cutting by a type modifier), a key a
	// domain refuses has none, and an extension type's equality (ltree, in
	// a schema of its own) is found.
	if _, err := b.pool.Exec(ctx, `create schema extensions;
create extension ltree schema extensions;
create domain public.even as int check (value % 2 = 0);
create table public.k_varchar (k varchar(5) primary key, v text);
create table public.k_numeric (k numeric(6,2) primary key, v text);
create table public.k_domain (k public.even primary key, v text);
create table public.k_ltree (k extensions.ltree primary key, v text);
insert into public.k_varchar values ('abcde', 'v-abcde');
insert into public.k_numeric values (1.01, 'v-1.01');
insert into public.k_domain values (2, 'v-2');
insert into public.k_ltree values ('a.b', 'v-a.b');
grant usage on schema extensions to service_role;
grant select on public.k_varchar, public.k_numeric, public.k_domain, public.k_ltree to service_role`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tbl, key, want string }{
		{"public.k_varchar", "abcde", "v-abcde"}, {"public.k_varchar", "abcdefgh", ""},
		{"public.k_numeric", "1.01", "v-1.01"}, {"public.k_numeric", "1.005", ""},
		{"public.k_domain", "2", "v-2"}, {"public.k_domain", "3", ""},
		{"public.k_ltree", "a.b", "v-a.b"}, {"public.k_ltree", "a..b", ""},
	} {
		name := "k.noted" + strconv.Itoa(len(c.key))
		if code := asRole(b, "service_role", svc, `select tablegate.emit_event($1, $2, $3, null)`, name, c.tbl, c.key); code != "" {
			t.Errorf("emit on %s key %q: SQLSTATE %q", c.tbl, c.key, code)
			continue
		}
		var got *string
		if err := b.pool.QueryRow(ctx, `select image->>'v' from tablegate.events where tbl = $1 and key = $2 order by id desc limit 1`,
			c.tbl, c.key).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (c.want == "") || got != nil && *got != c.want {
			t.Errorf("%s key %q: image %v, want %q", c.tbl, c.key, got, c.want)
		}
	}
}
