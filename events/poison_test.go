package events_test

import (
	"testing"
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
