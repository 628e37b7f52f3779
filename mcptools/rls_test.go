package mcptools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/rest"
)

// The tools of a table served without row-level security (the explicit
// opt-out) say so; the others do not.
func TestToolsOfTableWithoutRLSSaySo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pool.Exec(context.Background(), `create table public.catalog (id int primary key, name text);
grant select on public.catalog to authenticated;`); err != nil {
		t.Fatal(err)
	}
	cat, err := rest.NewResource(context.Background(), b.db, "catalog", &rest.Config{AllowWithoutRLS: true, Operations: []rest.Operation{rest.OpList}})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{cat, b.tags}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range srv.Tools() {
		said := strings.Contains(tl.Description, "Row-level security does not protect catalog")
		if said != strings.Contains(strings.ToLower(tl.Name), "catalog") {
			t.Errorf("%s: %q", tl.Name, tl.Description)
		}
	}
}
