package events_test

import (
	"strings"
	"testing"
	"time"
)

// TestMalformedKeyDoesNotEndStreams: an action event whose key is not a
// value of the key column (written here by service_role, the only API role
// that may execute tablegate.emit_event) is delivered to nobody
// and ends no stream. Before, its visibility check failed on the cast
// ("invalid input syntax for type bigint"), which ended every stream it
// was checked for, and every resume from before it failed the same way for
// as long as the outbox kept it.
func TestMalformedKeyDoesNotEndStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	live := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	first := b.create(bobTok, "before")
	ev := live.expect("todos.created")[0]
	if _, err := b.pool.Exec(t.Context(), `begin; set local role service_role;
select tablegate.emit_event('todo.completed', 'public.todos', 'abc', null); commit`); err != nil {
		t.Fatal(err)
	}
	b.create(bobTok, "after")
	if got := live.expect("todos.created")[0]; got.Data.ID <= ev.Data.ID {
		t.Fatalf("after the malformed key: %s", got.Raw)
	}
	resumed := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok, "Last-Event-ID", ev.ID)
	if resumed.status != 200 {
		t.Fatalf("resume: %d %s", resumed.status, resumed.body)
	}
	resumed.expect("todos.created")
	_ = first
}

// TestStaleImageDoesNotEndResumes: an event whose recorded row no longer
// fits the table (a column's type changed since) is not replayed, and the
// others of its batch are; before, the whole check failed and every
// resume from before it ended at once, for every tenant, until the event
// was pruned.
func TestStaleImageDoesNotEndResumes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	aliceTok, bobTok, carolTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false), b.token(carol, tenantB, false)
	live := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok)
	b.create(bobTok, "short")
	first := live.expect("todos.created")[0]
	b.create(bobTok, "a title longer than ten")
	b.create(bobTok, "tiny")
	live.expect("todos.created", "todos.created")
	live.close()
	if _, err := b.pool.Exec(t.Context(), `alter table public.todos alter column title type varchar(10) using left(title, 10)`); err != nil {
		t.Fatal(err)
	}
	resumed := b.subscribe("/api/todos/events", "Authorization", "Bearer "+aliceTok, "Last-Event-ID", "0")
	if resumed.status != 200 {
		t.Fatalf("resume: %d %s", resumed.status, resumed.body)
	}
	evs := resumed.expect("todos.created", "todos.created")
	if evs[0].Data.ID != first.Data.ID {
		t.Errorf("first replayed %s, want the event %s", evs[0].Raw, first.ID)
	}
	if !strings.Contains(evs[1].Raw, "tiny") {
		t.Errorf("second replayed %s, want the row titled tiny", evs[1].Raw)
	}
	other := b.subscribe("/api/todos/events", "Authorization", "Bearer "+carolTok, "Last-Event-ID", "0")
	if other.status != 200 {
		t.Fatalf("other tenant's resume: %d %s", other.status, other.body)
	}
	// The stream is still open and live (written directly: the API's
	// statements were prepared for the table before its change).
	if _, err := b.pool.Exec(t.Context(), `insert into public.todos (tenant_id, owner_id, title) values ($1, $2, 'b''s row')`, tenantB, carol); err != nil {
		t.Fatal(err)
	}
	if got := other.expect("todos.created")[0]; !strings.Contains(got.Raw, "b's row") {
		t.Errorf("other tenant got %s", got.Raw)
	}
}

// TestKeylessEventsNeedMembership: an action event about no row reaches
// the subscribers of the writer's tenant that are members of it: a user
// whose tenant claim names the tenant without a membership (removed
// since the token was issued) receives none.
func TestKeylessEventsNeedMembership(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	const removed = "66666666-6666-4666-8666-666666666666"
	aliceTok, bobTok := b.token(alice, tenantA, false), b.token(bob, tenantA, false)
	member := b.subscribe("/api/todos/events?event=todo.announced", "Authorization", "Bearer "+aliceTok)
	outsider := b.subscribe("/api/todos/events?event=todo.announced", "Authorization", "Bearer "+b.token(removed, tenantA, false))
	if member.status != 200 || outsider.status != 200 {
		t.Fatalf("subscribe: %d / %d %s", member.status, outsider.status, outsider.body)
	}
	if st, body := b.call("POST", "/api/todos/announce", bobTok, ""); st != 204 {
		t.Fatalf("announce: %d %s", st, body)
	}
	member.expect("todo.announced")
	outsider.quiet(time.Second)
}
