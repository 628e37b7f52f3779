package db_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// CheckRLS tells protected relations from unprotected ones, with the SQL
// that fixes each; ReadTableProtection reads grants (column grants count),
// schema usage and what a view reads.
func TestCheckRLS(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `
create table public.closed (id int primary key, body text);
alter table public.closed enable row level security;
grant select (id), insert on public.closed to authenticated;
create table public.open (id int primary key);
create table "Mixed Case" (id int primary key);
create view public.definer as select id from public.closed;
create view public.invoker with (security_invoker = on) as select id from public.closed;
create view public.invoker_open with (security_invoker) as select c.id from public.closed c join public.open o using (id);
create view public.nested with (security_invoker = true) as select id from public.invoker_open;
create schema private;
create table private.t (id int primary key);
alter table private.t enable row level security;`); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]string{
		"public.closed":  "",
		"public.invoker": "",
		"private.t":      "",
		"public.open":    "alter table public.open enable row level security;",
		`"Mixed Case"`:   `alter table public."Mixed Case" enable row level security;`,
		"public.definer": "alter view public.definer set (security_invoker = true);",
		"public.nested":  "public.nested is not protected by row-level security: it reads public.open: row-level security is disabled",
	} {
		p, err := db.CheckRLS(ctx, pool, table)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", table, err)
		case want != "" && (!errors.Is(err, db.ErrNoRLS) || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want %q", table, err, want)
		case p == nil:
			t.Errorf("%s: no protection read", table)
		}
	}
	p, err := db.ReadTableProtection(ctx, pool, "public.closed")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Has("authenticated", "SELECT") || !p.Has("authenticated", "INSERT") || p.Has("authenticated", "DELETE") || p.Has("anon", "SELECT") {
		t.Errorf("privileges %v", p.Privileges)
	}
	if !slices.Contains(p.SchemaUsage, "authenticated") || p.Schema != "public" || p.Kind != "table" || !p.RLS || p.ForceRLS {
		t.Errorf("%+v", p)
	}
	if q, _ := db.ReadTableProtection(ctx, pool, "private.t"); q == nil || slices.Contains(q.SchemaUsage, "authenticated") {
		t.Errorf("private.t: %+v", q)
	}
	if v, _ := db.ReadTableProtection(ctx, pool, "public.invoker_open"); v == nil || !v.SecurityInvoker || !slices.Equal(v.Reads, []string{"public.closed", "public.open"}) {
		t.Errorf("invoker_open: %+v", v)
	}
	if _, err := db.ReadTableProtection(ctx, pool, "public.ghost"); !errors.Is(err, db.ErrNoRelation) {
		t.Errorf("ghost: %v", err)
	}
}
