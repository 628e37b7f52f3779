package spec_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// TestGolden compares the generated document of the fixture with
// testdata/todos.golden.json (and .yaml). Run with -update to rewrite them
// after an intended change, and review the diff.
func TestGolden(t *testing.T) {
	b := setup(t)
	for _, g := range []struct {
		file string
		got  []byte
	}{
		{"todos.golden.json", b.api.JSON()},
		{"todos.golden.yaml", b.api.YAML()},
	} {
		path := filepath.Join("testdata", g.file)
		if *update {
			if err := os.WriteFile(path, g.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./spec -run TestGolden -update to create it)", err)
		}
		if !bytes.Equal(want, g.got) {
			t.Errorf("%s differs from the generated document; run with -update and review the diff.\n%s", path, firstDiff(want, g.got))
		}
	}
}

// firstDiff shows the first differing line.
func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y []byte
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if !bytes.Equal(x, y) {
			return "line " + itoa(i+1) + ":\n  golden: " + string(x) + "\n  got:    " + string(y)
		}
	}
	return ""
}

func itoa(n int) string {
	return strconv.Itoa(n)
}
