package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sleepMarker starts the comment that justifies a time.Sleep in a test:
// "// sleep: <why this is not synchronisation>", on the line of the call
// or on the line before it.
const sleepMarker = "sleep:"

// TestSleepsJustified fails for every time.Sleep in a *_test.go file of
// the repository (all modules; node_modules skipped) that has no
// "// sleep: <reason>" comment on its line or the line before. A sleep
// that waits for something to happen makes a test slow where the machine
// is fast and flaky where it is slow: wait on the condition itself (a
// bounded poll with a deadline, a channel) or use testing/synctest where
// time is the subject. A sleep that is the subject of the test — a token
// expiring in real time against a real Postgres, a peer throttled on
// purpose — says so in its comment.
func TestSleepsJustified(t *testing.T) {
	root := filepath.Join("..", "..")
	checked, sleeps := 0, 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "node_modules" || d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		checked++
		for _, pos := range unjustifiedSleeps(fset, f, &sleeps) {
			rel, _ := filepath.Rel(root, pos.Filename)
			t.Errorf("%s:%d: time.Sleep without a %q comment: wait on the condition instead, or say why the sleep is the subject", rel, pos.Line, "// "+sleepMarker+" <reason>")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 || sleeps == 0 {
		t.Fatalf("checked only %d test files and %d sleeps: the walk is broken", checked, sleeps)
	}
}

// unjustifiedSleeps returns the positions of the time.Sleep references of
// f that lack the marker comment, and adds the number of references to n.
func unjustifiedSleeps(fset *token.FileSet, f *ast.File, n *int) []token.Position {
	timeName := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" || timeName == "_" {
		return nil
	}
	// Lines holding a justification: the line a marker comment ends on,
	// and the line after it.
	justified := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			text := strings.TrimSpace(strings.TrimPrefix(c.Text, "//"))
			if reason, ok := strings.CutPrefix(text, sleepMarker); ok && strings.TrimSpace(reason) != "" {
				line := fset.Position(c.End()).Line
				justified[line], justified[line+1] = true, true
			}
		}
	}
	var out []token.Position
	ast.Inspect(f, func(node ast.Node) bool {
		sel, ok := node.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Sleep" {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != timeName {
			return true
		}
		*n++
		if pos := fset.Position(sel.Pos()); !justified[pos.Line] {
			out = append(out, pos)
		}
		return true
	})
	return out
}
