package suggest

import "testing"

func TestNearest(t *testing.T) {
	t.Parallel()
	keys := []string{"table", "operations", "select", "key", "permissions", "guard", "statement_timeout", "filter_columns", "events"}
	for word, want := range map[string]string{
		"operation":     "operations",
		"opertions":     "operations",
		"tabel":         "table",
		"selct":         "select",
		"Guard":         "guard",
		"ky":            "key",
		"permission":    "permissions",
		"filter_column": "filter_columns",
		"xyz":           "",
		"zzzzzzzzzz":    "",
		"":              "",
	} {
		if got := Nearest(word, keys); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
	if d := Distance("kitten", "sitting"); d != 3 {
		t.Errorf("Distance = %d", d)
	}
	if s := DidYouMean("titel", []string{"id", "title", "done"}); s != ` (did you mean "title"?)` {
		t.Errorf("DidYouMean = %q", s)
	}
}
