package server_test

import (
	"context"
	"log"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// exampleDatabaseURL is a migrated database of the test run with the
// Example's table: public.notes, which row-level security shows to
// every caller.
func exampleDatabaseURL() string {
	u, err := pgtest.ExampleURL()
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `
		create table if not exists public.notes (id bigint generated always as identity primary key, body text not null);
		alter table public.notes enable row level security;
		drop policy if exists "notes are public" on public.notes;
		create policy "notes are public" on public.notes for select to anon, authenticated using (true);
		grant select on public.notes to anon, authenticated;
		truncate public.notes;
		insert into public.notes (body) values ('Served by tablegate'), ('Next to the program''s own routes');`); err != nil {
		log.Fatal(err)
	}
	return u
}
