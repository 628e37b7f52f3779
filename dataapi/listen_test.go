package dataapi

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestListenReloads: NOTIFY pgrst, 'reload schema' (or an empty
// payload) has a new table served; a reload that fails its checks (a
// table without row-level security) keeps the previous schema; ending
// the context ends Listen and closes its connection.
func TestListenReloads(t *testing.T) {
	b := setup(t, nil)
	listening := make(chan struct{}, 1)
	reloads := make(chan error, 4)
	b.api.listening = func() { listening <- struct{}{} }
	b.api.reloaded = func(err error) { reloads <- err }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.api.Listen(ctx) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Listen returned %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Listen did not end with its context")
		}
	}()
	wait := func(what string) error {
		t.Helper()
		select {
		case err := <-reloads:
			return err
		case <-time.After(10 * time.Second):
			t.Fatalf("no reload after %s", what)
		}
		return nil
	}
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("Listen did not start listening")
	}

	if r := b.do("GET", "/notes", alice, ""); r.status != 404 || errCode(t, r) != "PGRST205" {
		t.Fatalf("before the migration: %d %s", r.status, r.body)
	}
	b.exec(`create table notes (id int primary key, body text);
	        alter table notes enable row level security;
	        grant select on notes to authenticated;
	        create policy notes_read on notes for select to authenticated using (true);
	        insert into notes values (1, 'hi')`)
	// Other payloads reload nothing; the schema one does.
	b.exec(`notify pgrst, 'reload config'; notify pgrst, 'reload schema'`)
	if err := wait("reload schema"); err != nil {
		t.Fatalf("reload: %v", err)
	}
	if r := b.do("GET", "/notes?select=body", alice, ""); r.status != 200 || r.body != `[{"body":"hi"}]` {
		t.Errorf("after NOTIFY: %d %s", r.status, r.body)
	}
	// A table anon may read without RLS fails the reload's check: the
	// previous schema stays served. (Had 'reload config' reloaded too, its
	// nil would arrive here first: notifications are handled in order.)
	b.exec(`create table open_notes (id int primary key); grant select on open_notes to anon`)
	b.exec(`notify pgrst`)
	if err := wait("an empty payload"); !errors.Is(err, ErrUnprotected) {
		t.Errorf("reload with an unprotected table: %v", err)
	}
	if r := b.do("GET", "/open_notes", "", ""); r.status != 404 {
		t.Errorf("an unprotected table was served: %d %s", r.status, r.body)
	}
	if r := b.do("GET", "/notes?select=body", alice, ""); r.status != 200 {
		t.Errorf("the previous schema is not served: %d %s", r.status, r.body)
	}
}
