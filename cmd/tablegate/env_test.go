package main

import (
	"os"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/envfile"
)

// TestPrintEnvSourcesWithSh feeds envfile.Format values a shell would mangle
// unquoted and sources the result with sh: every key must come back intact.
// TestDemoEndToEnd does the same with a real demo's --print-env file.
func TestPrintEnvSourcesWithSh(t *testing.T) {
	t.Parallel()
	vars := []envfile.Var{
		{Key: "DATABASE_URL", Value: "postgres://postgres@/postgres?host=%2Fdev%2Fshm%2Ftablegate-pg-1&sslmode=disable"},
		{Key: "BASE_URL", Value: "http://127.0.0.1:8080"},
		{Key: "USER_TOKEN", Value: "eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_"},
		{Key: "QUOTE", Value: "it's $HOME `id` \"x\" ; echo pwned"},
		{Key: "SPACES", Value: "a  b\tc"},
		{Key: "EMPTY", Value: ""},
		{Key: "GLOB", Value: "*?[a]~"},
	}
	data := envfile.Format(vars)
	if !strings.Contains(string(data), "\nexport BASE_URL=http://127.0.0.1:8080\n") {
		t.Errorf("a plain URL should stay bare for line readers (dotenv readers accept the export prefix):\n%s", data)
	}
	got := sourceWithSh(t, data)
	for _, v := range vars {
		if g, ok := got[v.Key]; !ok || g != v.Value {
			t.Errorf("sh reads %s=%q (set %v), want %q\nfile:\n%s", v.Key, g, ok, v.Value, data)
		}
		if u := unquoteShell(t, strings.TrimPrefix(envLine(string(data), v.Key), v.Key+"=")); u != v.Value {
			t.Errorf("line reader reads %s=%q, want %q", v.Key, u, v.Value)
		}
	}
	if len(got) != len(vars) {
		t.Errorf("sh sees %d keys, want %d: %v", len(got), len(vars), got)
	}
}

func envLine(data, key string) string {
	for _, l := range strings.Split(data, "\n") {
		if l = strings.TrimPrefix(l, "export "); strings.HasPrefix(l, key+"=") {
			return l
		}
	}
	return ""
}

// TestCLIDocDemoSchemaCurrent keeps docs/cli.md's demo table equal to the
// schema the demo applies.
func TestCLIDocDemoSchemaCurrent(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	table := func(s string) string {
		i := strings.Index(s, "create table if not exists public.todos (")
		if i < 0 {
			return ""
		}
		j := strings.Index(s[i:], ");")
		if j < 0 {
			return ""
		}
		return s[i : i+j+2]
	}
	want := table(demoSchemaSQL)
	if want == "" {
		t.Fatal("internal/demo/schema.sql lost its public.todos table")
	}
	if got := table(string(doc)); got != want {
		t.Errorf("docs/cli.md's demo schema is stale; it shows\n%s\nthe demo applies\n%s", got, want)
	}
}
