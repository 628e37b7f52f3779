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
