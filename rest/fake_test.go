package rest

import (
	"strings"
	"testing"
)

// fakeResource builds a resource over declared columns without a
// database: enough for the pure parts (query grammar, cursors, routes).
func fakeResource(t testing.TB, opts *Config) (*Resource, error) {
	t.Helper()
	mk := func(name, typ, typname string, notNull bool) *column {
		c := &column{Column: Column{Name: name, Type: typ, TypeName: typname, NotNull: notNull}}
		c.ident = `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		c.cast = "::text::" + typ
		c.expr = "t." + c.ident
		c.comparable = true
		return c
	}
	cols := []*column{
		mk("id", "bigint", "int8", true),
		mk("title", "text", "text", true),
		mk("score", "integer", "int4", false),
		mk("secret", "text", "text", false),
	}
	r := &Resource{table: "items", schema: "public", cols: cols, byName: map[string]*column{}}
	for _, c := range cols {
		r.byName[c.Name] = c
	}
	var o Config
	if opts != nil {
		o = *opts
	}
	r.opts = o
	if o.Select == nil {
		o.Select = []string{"id", "title", "score"}
	}
	return r, r.build(&o, []string{"id"}, `"public"."items"`)
}

func mustFake(t testing.TB, opts *Config) *Resource {
	t.Helper()
	r, err := fakeResource(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
