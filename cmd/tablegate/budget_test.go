package main

import (
	"flag"
	"io"
	"testing"
)

// TestPerCallerShareFromFlagAndConfig: --db-max-conns-per-caller and the
// config's database.max_conns_per_caller reach db.Config, the flag first.
func TestPerCallerShareFromFlagAndConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		conf int
		want int
	}{
		{nil, 0, 0},
		{nil, 3, 3},
		{[]string{"--db-max-conns-per-caller", "-1"}, 3, -1},
		{[]string{"--db-max-conns-per-caller", "5"}, 0, 5},
	} {
		var b budgetFlags
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		b.register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		b.merge(databaseConfig{MaxConnsPerCaller: tc.conf})
		if got := b.dbConfig().MaxConnsPerCaller; got != tc.want {
			t.Errorf("%v with config %d: MaxConnsPerCaller %d, want %d", tc.args, tc.conf, got, tc.want)
		}
	}
	c, err := parseServeConfig([]byte(`{"database": {"max_conns_per_caller": 4}, "tables": {"todos": {}}}`), "tablegate.json")
	if err != nil {
		t.Fatal(err)
	}
	if c.Database.MaxConnsPerCaller != 4 {
		t.Errorf("config key read as %d", c.Database.MaxConnsPerCaller)
	}
}
