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
