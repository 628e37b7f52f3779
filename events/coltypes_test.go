package events

import (
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestColumnTypesResolveDomainsAndSchemas: stream filters read a column's
// type through domains over domains, and a type of the user's named like
// a built-in as its own: a domain over a domain over timestamptz compares
// as instants, and a composite named app.uuid takes a composite value
// instead of being asked for a uuid.
func TestColumnTypesResolveDomainsAndSchemas(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(t.Context(), `create schema app; create type app.uuid as (x int);
create type mood as enum ('sad', 'ok');
create domain dt1 as timestamptz; create domain dt2 as dt1;
create domain dm1 as mood; create domain dm2 as dm1;
create table ct (id int primary key, tt dt2, mm dm2, cu app.uuid);`); err != nil {
		t.Fatal(err)
	}
	var types map[string]colType
	if err := db.New(pool, nil).Run(t.Context(), service, db.RunOpts{}, func(q db.Querier) error {
		var err error
		types, err = columnTypes(t.Context(), q, "public.ct")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := types["tt"].name; got != "timestamptz" {
		t.Errorf("tt: %q, want timestamptz", got)
	}
	if got := types["mm"]; got.name != "public.mood" || len(got.labels) != 2 {
		t.Errorf("mm: %+v, want public.mood with its two labels", got)
	}
	if got := types["cu"].name; got != "app.uuid" {
		t.Errorf("cu: %q, want app.uuid", got)
	}
	if _, err := parseTyped("cu", types["cu"], "eq.(1)"); err != nil {
		t.Errorf("cu=eq.(1): %v", err)
	}
	if f, err := parseTyped("tt", types["tt"], "lt.2024-05-01T09:00:00+01:00"); err != nil || f.kind != kindTime {
		t.Errorf("tt filter: kind %v, %v; want instants", f.kind, err)
	}
	if _, err := parseTyped("mm", types["mm"], "eq.happy"); err == nil {
		t.Error("mm=eq.happy: a label the enum does not have was taken")
	}
}

// TestCitextByExtensionNotByName: the citext extension's type compares
// case-insensitively in stream filters, in whatever schema it is
// installed; a type of yours named citext does not.
func TestCitextByExtensionNotByName(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(t.Context(), `create schema ext; create extension if not exists citext schema ext;
create schema mine; create type mine.citext as (x int);
create table cx (id int primary key, c ext.citext, m mine.citext);`); err != nil {
		t.Fatalf("citext (PostgreSQL contrib) is needed: %v", err)
	}
	var types map[string]colType
	if err := db.New(pool, nil).Run(t.Context(), service, db.RunOpts{}, func(q db.Querier) error {
		var err error
		types, err = columnTypes(t.Context(), q, "public.cx")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if k := kindOf(types["c"].name); k != kindCitext {
		t.Errorf("the extension's citext (%q): kind %v, want citext", types["c"].name, k)
	}
	if k := kindOf(types["m"].name); k == kindCitext {
		t.Errorf("a type named mine.citext (%q) was read as citext", types["m"].name)
	}
}
