package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// dataAPIUnprotectedSQL holds a table only authenticated callers may
// read (notes) and a declared one (guarded), both under row-level
// security.
const dataAPIUnprotectedSQL = `
create table notes (id bigint primary key, owner_id uuid not null default auth.uid(), title text not null);
alter table notes enable row level security;
grant select on notes to authenticated;
create policy notes_own on notes for all to authenticated using (owner_id = (select auth.uid()));
create table guarded (id bigint primary key, owner_id uuid not null default auth.uid(), title text not null);
alter table guarded enable row level security;
grant select, insert on guarded to authenticated;
create policy guarded_own on guarded for all to authenticated using (owner_id = (select auth.uid()));
`

// TestServeDataAPIUnprotected: serve refuses to start while a table of an
// exposed schema that anon or authenticated may reach has no row-level
// security, naming it and the fix; allow_without_rls lets grants decide.
func TestServeDataAPIUnprotected(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if _, err := pool.Exec(context.Background(), dataAPIUnprotectedSQL+`
	  create table open_notes (id int primary key, title text); grant select on open_notes to anon;
	  insert into open_notes values (1, 'visible by grant');`); err != nil {
		t.Fatal(err)
	}
	tables := map[string]any{"guarded": map[string]any{"table": "public.guarded"}}
	cfgPath, _ := serveFixtureKeys(t, map[string]any{"tables": tables, "data_api": map[string]any{}})
	r := runCLI(t, map[string]string{"DATABASE_URL": url}, "serve", "--config", cfgPath, "--addr", freeAddr(t))
	if r.code == 0 || !strings.Contains(r.stderr, "public.open_notes") || !strings.Contains(r.stderr, "allow_without_rls") {
		t.Fatalf("unprotected table: exit %d: %s", r.code, r.stderr)
	}
	cfgPath, _ = serveFixtureKeys(t, map[string]any{"tables": tables, "data_api": map[string]any{"allow_without_rls": true, "max_rows": 10}})
	addr := freeAddr(t)
	_, cancel, _ := launchServe(t, url, "--config", cfgPath, "--addr", addr)
	defer cancel()
	code, h, body := getURL(t, "http://"+addr+"/rest/v1/open_notes?select=title", nil)
	if code != 200 || body != `[{"title":"visible by grant"}]` || h.Get("Content-Range") != "0-0/*" {
		t.Errorf("anon read by grant: %d %s %v", code, body, h)
	}
	code, _, body = getURL(t, "http://"+addr+"/rest/v1/notes", nil)
	if code != 401 || !strings.Contains(body, `"42501"`) {
		t.Errorf("anon without a grant: %d %s", code, body)
	}
	code, _, body = getURL(t, "http://"+addr+"/rest/v1/notes", map[string]string{"Authorization": "Bearer not-a-token"})
	if code != 401 || !strings.Contains(body, `"PGRST301"`) {
		t.Errorf("bad token: %d %s", code, body)
	}
	// A migration ending with NOTIFY pgrst is served without a restart.
	// (The notification is sent again until seen: the listener may start
	// after the server answers.)
	if _, err := pool.Exec(context.Background(), `create table later_notes (id int primary key, title text);
	  grant select on later_notes to anon; insert into later_notes values (1, 'later')`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := pool.Exec(context.Background(), `notify pgrst, 'reload schema'`); err != nil {
			t.Fatal(err)
		}
		code, _, body = getURL(t, "http://"+addr+"/rest/v1/later_notes?select=title", nil)
		if code == 200 && body == `[{"title":"later"}]` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a table created and announced with NOTIFY pgrst is not served: %d %s", code, body)
		}
		// sleep: the poll step of the bounded wait for the reloaded schema to serve the table
		time.Sleep(20 * time.Millisecond)
	}
}
