package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestPerRowCalls reads deparsed policy expressions as pg_get_expr prints
// them.
func TestPerRowCalls(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr string
		want []string // substrings of the findings, in order
	}{
		{`(owner_id = ( SELECT auth.uid() AS uid))`, nil},
		{`(owner_id = auth.uid())`, []string{"auth.uid() per row"}},
		{`((tenant_id = tablegate.current_tenant_id()) AND tablegate.is_member('tenant'::text, (tenant_id)::text, NULL::text))`,
			[]string{"tablegate.current_tenant_id() per row", "tablegate.is_member('tenant', …) per row"}},
		{`((tenant_id = ( SELECT tablegate.current_tenant_id() AS current_tenant_id)) AND tablegate.is_member('tenant'::text, (tenant_id)::text, NULL::text))`,
			[]string{"tablegate.is_member('tenant', …) per row"}},
		{`(tenant_id = ( SELECT tablegate.member_tenant_id(NULL::text) AS member_tenant_id))`, nil},
		{`(tenant_id = tablegate.member_tenant_id('admin'::text))`, []string{"tablegate.member_tenant_id('admin'::text) per row"}},
		{`(tenant_id = ( SELECT tablegate.full_member_tenant_id() AS full_member_tenant_id))`, nil},
		{`(tenant_id = tablegate.full_member_tenant_id())`, []string{"tablegate.full_member_tenant_id() per row"}},
		{`((NOT ( SELECT tablegate.is_anonymous() AS is_anonymous)) AND tablegate.has_role('editor'::text))`,
			[]string{"tablegate.has_role('editor'::text) per row"}},
		// a column argument: no per-statement form
		{`tablegate.is_member('project'::text, (project_id)::text, NULL::text)`, nil},
		{`tablegate.claim_text((path)::text)`, nil},
		// names inside string literals are not calls
		{`(note <> 'tablegate.current_tenant_id()'::text)`, nil},
		{`(note <> 'it''s (SELECT x'::text) AND (owner_id = auth.uid())`, []string{"auth.uid() per row"}},
		// the realtime policy of the SQL module
		{`((extension = ANY (ARRAY['broadcast'::text, 'presence'::text])) AND (NOT ( SELECT tablegate.is_anonymous() AS is_anonymous)) AND (split_part(topic, ':'::text, 2) = ( SELECT (tablegate.current_tenant_id())::text AS current_tenant_id)))`, nil},
		{`tablegate.tenant_topic_allowed(topic)`, nil},
	} {
		got := perRowCalls(tc.expr)
		if len(got) != len(tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.expr, got, tc.want)
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tc.want[i]) {
				t.Errorf("%s: finding %d = %q, want %q", tc.expr, i, got[i], tc.want[i])
			}
		}
	}
}

// TestDoctorWarnsAboutPerRowHelpers runs the doctor on the demo's table
// with its per-row policies (bench/testdata/demo_schema_per_row.sql: a
// warning naming the helpers)
// and with today's demo schema (no warning), and on the tables of
// tablegate.enable_tenant_policies (no warning).
func TestDoctorWarnsAboutPerRowHelpers(t *testing.T) {
	t.Parallel()
	keys := filepath.Join(t.TempDir(), "missing.json")
	old, err := os.ReadFile(filepath.Join("..", "..", "bench", "testdata", "demo_schema_per_row.sql"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, schema string
		tables       []string
		want         string
		findings     []string
	}{
		{"demo with per-row policies", string(old), []string{"public.todos"}, "! policy cost", []string{
			"public.todos policy todos_member_read: tablegate.current_tenant_id() per row",
			"tablegate.is_member('tenant', …) per row",
			"public.todos policy todos_owner_update: tablegate.is_anonymous() per row",
		}},
		{"demo", demoSchemaSQL, []string{"public.todos"}, "✓ policy cost", nil},
		{"enable_tenant_policies", `
		  create table public.notes (id int primary key, tenant_id uuid not null);
		  create table public.docs (id int primary key, tenant_id text not null);
		  grant select on public.notes, public.docs to authenticated;
		  select tablegate.enable_tenant_policies('public.notes', require_membership => true);
		  select tablegate.enable_tenant_policies('public.docs', anon_read => true);`,
			[]string{"public.notes", "public.docs"}, "✓ policy cost", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.URL(t)
			if _, err := pgtest.Pool(t, url).Exec(context.Background(), tc.schema); err != nil {
				t.Fatal(err)
			}
			args := []string{"doctor", "--database-url", url, "--signing-keys", keys, "--supabase-config", keys}
			for _, tb := range tc.tables {
				args = append(args, "--table", tb)
			}
			r := runCLI(t, nil, args...)
			l := lineOf(r.stdout, tc.want)
			if l == "" {
				t.Fatalf("no line %q in\n%s", tc.want, r.stdout)
			}
			for _, f := range tc.findings {
				if !strings.Contains(l, f) {
					t.Errorf("line %q lacks %q", l, f)
				}
			}
			if tc.findings != nil && !slices.ContainsFunc(strings.Split(r.stdout, "\n"), func(s string) bool {
				return strings.Contains(s, "(select id from tablegate.member_tenant)")
			}) {
				t.Errorf("no fix naming tablegate.member_tenant:\n%s", r.stdout)
			}
		})
	}
}
