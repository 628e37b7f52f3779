package dataapi

import (
	"strings"
	"testing"
)

// TestInsertCSV: a text/csv body inserts its lines as rows (a header line
// naming the columns, NULL for null), as PostgREST does, under the
// caller's row-level security; malformed CSV answers PGRST102.
func TestInsertCSV(t *testing.T) {
	b := setup(t, nil)
	csvType := "Content-Type: text/csv"
	r := b.do("POST", "/todos?select=title,priority,done", alice, "title,priority,done\nalpha,5,true\n\"b, \"\"quoted\"\"\nline\",NULL,false\n", csvType, "Prefer: return=representation")
	if r.status != 201 || !sameJSON(t, r.body, `[{"title":"alpha","priority":5,"done":true},{"title":"b, \"quoted\"\nline","priority":null,"done":false}]`) {
		t.Errorf("csv insert: %d %s", r.status, r.body)
	}
	if n := b.count("select count(*) from todos where owner_id = '" + alice + "'"); n != 2 {
		t.Errorf("alice has %d rows, want 2", n)
	}
	// A header alone inserts nothing.
	r = b.do("POST", "/todos", alice, "title\n", csvType)
	if r.status != 201 || b.count("select count(*) from todos") != 2 {
		t.Errorf("header only: %d %s", r.status, r.body)
	}
	for _, tc := range []struct {
		user, body string
		status     int
		code       string
	}{
		{alice, "title,priority\na\n", 400, "PGRST102"},
		{alice, "title\n\"unterminated\n", 400, "PGRST102"},
		{alice, "title,nosuch\na,b\n", 400, "PGRST204"},
		{alice, "title,priority\na,high\n", 400, "22P02"},
		{alice, "title,owner_id\nsteal," + bob + "\n", 403, "42501"},
		{"", "title\nanon\n", 401, "42501"},
		{alice, "title\n" + strings.Repeat("x", MaxBodyBytes), 413, "PGRST102"},
	} {
		r := b.do("POST", "/todos", tc.user, tc.body, csvType)
		if r.status != tc.status || errCode(t, r) != tc.code {
			t.Errorf("POST csv %.40q as %q: %d %.200s, want %d %s", tc.body, tc.user, r.status, r.body, tc.status, tc.code)
		}
	}
	if n := b.count("select count(*) from todos"); n != 2 {
		t.Errorf("refused csv bodies wrote rows: %d", n)
	}
}
