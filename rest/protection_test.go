package rest

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/db"
)

// logTo returns a logger writing text lines into buf.
func logTo(buf *bytes.Buffer) *slog.Logger { return slog.New(slog.NewTextHandler(buf, nil)) }

// A table or view that row-level security does not protect is refused at
// build time with the SQL that fixes it; the opt-out builds it, logs a
// warning each time and describes it.
func TestResourceRefusesTablesWithoutRLS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`
create table public.open_notes (id int primary key, body text);
grant select, insert, update, delete on public.open_notes to authenticated;
create table public.owned (id int primary key);
alter table public.owned enable row level security;
alter table public.owned owner to authenticated;
create table public.owned_forced (id int primary key);
alter table public.owned_forced enable row level security;
alter table public.owned_forced force row level security;
alter table public.owned_forced owner to authenticated;
create view public.definer_view as select id, title from public.todos;
create view public.invoker_view with (security_invoker = true) as select id, title from public.todos;
create view public.invoker_open with (security_invoker = true) as select id, body from public.open_notes;
create materialized view public.snapshot as select id from public.items;
grant select on public.definer_view, public.invoker_view, public.invoker_open, public.snapshot, public.owned_forced to authenticated;`)
	ctx := context.Background()
	for table, want := range map[string]string{
		"open_notes":   "public.open_notes is not protected by row-level security: row-level security is disabled, so every caller with a grant reads and writes every row; fix: alter table public.open_notes enable row level security;",
		"owned":        "role authenticated owns it and row-level security is not forced; fix: alter table public.owned force row level security;",
		"definer_view": "fix: alter view public.definer_view set (security_invoker = true);",
		"invoker_open": "public.invoker_open is not protected by row-level security: it reads public.open_notes: row-level security is disabled",
		"snapshot":     "a materialized view cannot have row-level security",
	} {
		cfg := &Config{Key: "id", Operations: []Operation{OpList, OpGet}}
		_, err := NewResource(ctx, b.db, table, cfg)
		if !errors.Is(err, ErrBuild) || !errors.Is(err, db.ErrNoRLS) {
			t.Errorf("%s: err = %v, want ErrBuild and db.ErrNoRLS", table, err)
			continue
		}
		if msg := strings.ReplaceAll(err.Error(), ", so its requests bypass the policies", ""); !strings.Contains(msg, want) {
			t.Errorf("%s:\n got %v\nwant it to contain %q", table, err, want)
		}
		if !strings.Contains(err.Error(), "Config.AllowWithoutRLS") {
			t.Errorf("%s: the error does not name the opt-out: %v", table, err)
		}
	}
	for _, table := range []string{"todos", "invoker_view", "owned_forced"} {
		if _, err := NewResource(ctx, b.db, table, &Config{Key: "id", Operations: []Operation{OpList}}); err != nil {
			t.Errorf("%s is protected, yet: %v", table, err)
		}
	}

	// The opt-out: built, logged at every build, described.
	for range 2 {
		var logs bytes.Buffer
		r, err := NewResource(ctx, b.db, "open_notes", &Config{AllowWithoutRLS: true, Logger: logTo(&logs)})
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(logs.String(), "served WITHOUT row-level security"); n != 1 {
			t.Errorf("%d warnings, want 1:\n%s", n, logs.String())
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "alter table public.open_notes enable row level security") {
			t.Errorf("warning: %s", logs.String())
		}
		if d := r.Describe(); !d.WithoutRLS || !strings.Contains(d.WithoutRLSReason, "disabled") {
			t.Errorf("description: WithoutRLS %v %q", d.WithoutRLS, d.WithoutRLSReason)
		}
	}
	// The opt-out on a protected table changes nothing.
	if r, err := NewResource(ctx, b.db, "todos", &Config{AllowWithoutRLS: true}); err != nil || r.Describe().WithoutRLS {
		t.Errorf("todos with the opt-out: %v", err)
	}

	// The refusal works: served anyway, one user would read another's rows.
	b.exec(`insert into public.open_notes values (1, 'alice''s')`)
	if _, err := NewResource(ctx, b.db, "public.open_notes", nil); err == nil {
		t.Fatal("served a table without RLS")
	}
}

// Each served operation whose privilege the authenticated role lacks logs
// one warning at build time, naming the grant; granted ones log nothing.
func TestResourceWarnsOfMissingGrants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`
create table public.secrets (id int primary key, body text);
alter table public.secrets enable row level security;
create policy s on public.secrets using (true);
grant select, delete on public.secrets to authenticated;
create schema hidden;
create table hidden.t (id int primary key);
alter table hidden.t enable row level security;`)
	var logs bytes.Buffer
	if _, err := NewResource(context.Background(), b.db, "secrets", &Config{Logger: logTo(&logs)}); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	for _, want := range []string{
		"secrets create: role authenticated lacks the INSERT privilege, so every request as authenticated answers 403; fix: grant insert on public.secrets to authenticated",
		"secrets update: role authenticated lacks the UPDATE privilege, so every request as authenticated answers 403; fix: grant update on public.secrets to authenticated",
	} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want one line %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "level=WARN"); n != 2 {
		t.Errorf("%d warnings, want 2 (create, update):\n%s", n, out)
	}
	logs.Reset()
	if _, err := NewResource(context.Background(), b.db, "todos", &Config{Logger: logTo(&logs)}); err != nil || logs.Len() != 0 {
		t.Errorf("todos is granted: %v %s", err, logs.String())
	}
	logs.Reset()
	if _, err := NewResource(context.Background(), b.db, "hidden.t", &Config{Logger: logTo(&logs), Operations: []Operation{OpList}}); err != nil ||
		!strings.Contains(logs.String(), "role authenticated lacks USAGE on schema hidden, so every request to hidden.t as authenticated fails") || strings.Count(logs.String(), "level=WARN") != 1 {
		t.Errorf("schema without usage: %v %s", err, logs.String())
	}
}

// A missing table, schema or column is explained with what exists.
func TestResourceExplainsMissingNames(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	for table, want := range map[string]string{
		"todo":        `no such table or view in schema public (did you mean "todos"?); apply your migrations ("tablegate migrate up --dir <dir>"), or check the name`,
		"nowhere.x":   `schema "nowhere" does not exist`,
		"public.zzzz": "no such table or view in schema public; apply your migrations",
	} {
		_, err := NewResource(ctx, b.db, table, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", table, err, want)
		}
	}
	_, err := NewResource(ctx, b.db, "todos", &Config{Select: []string{"id", "titel"}})
	if err == nil || !strings.Contains(err.Error(), `select column "titel" does not exist (did you mean "title"?); the columns are id, owner_id, title, slug, done, priority, secret, created_at, seq`) {
		t.Errorf("select: %v", err)
	}
	_, err = NewResource(ctx, b.db, "todos", &Config{Select: []string{"id", "title"}, FilterColumns: []string{"titl"}})
	if err == nil || !strings.Contains(err.Error(), `(did you mean "title"?); the selected columns are id, title`) {
		t.Errorf("filter: %v", err)
	}

	// A database tablegate never migrated says so.
	b.exec(`drop schema tablegate cascade`)
	_, err = NewResource(ctx, b.db, "todos_missing", nil)
	if err == nil || !strings.Contains(err.Error(), `the database has no tablegate schema either: it is not migrated; run "tablegate migrate up"`) {
		t.Errorf("unmigrated: %v", err)
	}
}

// GrantRoles checks the roles the callers run as: anon here, whose
// missing grant warns; an empty list checks none; another role is refused.
func TestResourceGrantRoles(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs bytes.Buffer
	ctx := context.Background()
	if _, err := NewResource(ctx, b.db, "items", &Config{GrantRoles: []string{"anon", "authenticated"}, Operations: []Operation{OpList, OpDelete}, Logger: logTo(&logs)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"items delete: role anon lacks the DELETE privilege", "items delete: role authenticated lacks the DELETE privilege"} {
		if strings.Count(logs.String(), want) != 1 {
			t.Errorf("want one %q in\n%s", want, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 {
		t.Errorf("%d warnings, want 2:\n%s", n, logs.String())
	}
	logs.Reset()
	if _, err := NewResource(ctx, b.db, "items", &Config{GrantRoles: []string{}, Logger: logTo(&logs)}); err != nil || logs.Len() != 0 {
		t.Errorf("no roles: %v %s", err, logs.String())
	}
	if _, err := NewResource(ctx, b.db, "items", &Config{GrantRoles: []string{"service_role"}}); !errors.Is(err, ErrBuild) || !strings.Contains(err.Error(), "GrantRoles") {
		t.Errorf("service_role: %v", err)
	}
}
