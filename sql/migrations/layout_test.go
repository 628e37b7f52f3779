package migrations_test

import (
	"fmt"
	"io/fs"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/sql/migrations"
)

// createFunction finds "create [or replace] function schema.name(" in SQL
// text; a name built at run time (format('... tablegate.%I() ...')) is not
// a definition and does not match.
var createFunction = regexp.MustCompile(`(?i)\bcreate\s+(?:or\s+replace\s+)?function\s+([a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*)\s*\(`)

// TestEachFunctionDefinedOnce: every function is created by exactly one
// statement across the migration files, so that a file is its module's
// schema and not a history of rewrites. From the first release on,
// migrations are only added: a later migration that must change a
// function replaces it with create or replace and lists it in redefined,
// with the file that does.
func TestEachFunctionDefinedOnce(t *testing.T) {
	redefined := map[string][]string{} // function -> the files, in order, that replace it again
	defs := map[string][]string{}
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("no migration files: %v", err)
	}
	for _, f := range files {
		b, err := fs.ReadFile(migrations.FS, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createFunction.FindAllStringSubmatch(string(b), -1) {
			name := strings.ToLower(m[1])
			defs[name] = append(defs[name], f)
		}
	}
	if len(defs) < 60 {
		t.Fatalf("found %d functions: the pattern misses definitions", len(defs))
	}
	for name, in := range defs {
		if len(in) > 1 && strings.Join(in[1:], ",") != strings.Join(redefined[name], ",") {
			t.Errorf("%s is created %d times (%s): define it once, in its module's file", name, len(in), strings.Join(in, ", "))
		}
	}
}

// TestMigrationFileNames: files are NNNNN_module.sql, numbered 1, 2, 3, ...
// without gaps, each with an Up and a Down section.
func TestMigrationFileNames(t *testing.T) {
	files, err := fs.Glob(migrations.FS, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`^(\d{5})_[a-z][a-z0-9_]*\.sql$`)
	for i, f := range files {
		m := name.FindStringSubmatch(f)
		if m == nil {
			t.Errorf("%s: want NNNNN_module.sql", f)
			continue
		}
		if want := fmt.Sprintf("%05d", i+1); m[1] != want {
			t.Errorf("%s: version %s, want %s (no gaps)", f, m[1], want)
		}
		b, _ := fs.ReadFile(migrations.FS, f)
		if !strings.Contains(string(b), "-- +goose Up") || !strings.Contains(string(b), "-- +goose Down") {
			t.Errorf("%s: needs both -- +goose Up and -- +goose Down", f)
		}
	}
}

// versionOf returns the goose version of the migration file whose module
// name is module (00009_access_token_hook.sql: "access_token_hook").
func versionOf(t testing.TB, module string) int64 {
	t.Helper()
	files, err := fs.Glob(migrations.FS, "*_"+module+".sql")
	if err != nil || len(files) != 1 {
		t.Fatalf("no single migration file for module %s: %v %v", module, files, err)
	}
	v, err := strconv.ParseInt(files[0][:5], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
