package lint

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// processPhrases match comment text that speaks of how tablegate was
// planned and reviewed rather than of what it does: a specification
// document and its numbered sections or rows, a tracker ticket, a
// delivery round, notes kept outside the repository. Comments are read
// by users of the code, who have none of these documents. Each phrase is
// narrow on purpose: "issue" as a verb (issue a token, the issuer), the
// package spec and the OpenAPI specification, a random seed, fuzz seed
// corpora and seed rows all stay allowed.
var processPhrases = []*regexp.Regexp{
	// A ticket: "the issue names", "as this issue asks", "issue 36".
	regexp.MustCompile(`(?i)\b(the|this|that|same|our|its) issue('s)?\b`),
	regexp.MustCompile(`(?i)\bissues? #?[0-9]+\b`),
	// The specification document and its parts: "the seed's section 3",
	// "Seed 3:", "(seed 9)", "spec section 5", "the spec names".
	regexp.MustCompile(`(?i)\bthe seed's\b`),
	regexp.MustCompile(`(?i)\bthe seed (names|asks|wants|says|lists|requires)\b`),
	regexp.MustCompile(`(?i)\bseed('s)? (section|§)`),
	regexp.MustCompile(`(?i)\bseed [0-9]+(\.[0-9]+)*\b`),
	regexp.MustCompile(`(?i)\bspec(ification)?('s)? (section|§|[0-9])`),
	regexp.MustCompile(`(?i)\bthe spec (names|asks|wants|says)\b`),
	// A bare section number names no document; "RFC 6265 section 5.3",
	// "OpenAPI 3.1 section 4.8" and "§4.1.2" are fine (see documentNamed).
	regexp.MustCompile(`(?i)\bsection [0-9]+(\.[0-9]+)*\b`),
	// Delivery rounds and instructions: "wave 2", "the next wave", "the brief".
	regexp.MustCompile(`(?i)\bwaves? [0-9]+\b`),
	regexp.MustCompile(`(?i)\b(first|second|third|next|previous|last|this|earlier|later) wave\b`),
	regexp.MustCompile(`(?i)\b(the|this|per|in) brief\b($|[.,;:)]|\s(says|said|asks|asked|names|requires|wants|lists)\b)`),
	regexp.MustCompile(`(?i)\battack ?[0-9]+\b`),
	// Notes and paths that are not in the repository.
	regexp.MustCompile(`(?i)\bresearch (notes|§)`),
	regexp.MustCompile(`(?i)\bvector V[0-9]+\b`),
	regexp.MustCompile(`/work/(shared|main|wt)\b`),
}

// documentNamed allows "section N" when the comment names the standard
// it belongs to.
var documentNamed = regexp.MustCompile(`\b(RFC|ECMA|ISO|W3C|OpenAPI|JSON Schema|PostgreSQL|Postgres|SQL standard|HTTP)\b|§`)

// processTestName matches test names that carry a document's section or
// a review round instead of the behaviour under test.
var processTestName = regexp.MustCompile(`(Seed|Section|Issue|Wave|Brief|Attack)[0-9]|SeedSection|LikeV[0-9]|V[0-9]Lines`)

// processPhrase returns the first process phrase in text, or "".
func processPhrase(text string) string {
	for _, re := range processPhrases {
		for _, loc := range re.FindAllStringIndex(text, -1) {
			m := text[loc[0]:loc[1]]
			if strings.HasPrefix(strings.ToLower(m), "section") && documentNamed.MatchString(text) {
				continue
			}
			return m
		}
	}
	return ""
}

func TestProcessPhrase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Config configures DefineAPI (the seed's defineApi options).", true},
		{"TestX walks every row of the seed's section 3 transition table.", true},
		{"Seed 3: a burst of 100 requests makes one refresh call.", true},
		{"chosen by the integrator (seed 9), not the OpenAPI version.", true},
		{"TestDocumentShape checks the parts of the document the issue names.", true},
		{"as the issue asks", true},
		{"see issue 36", true},
		{"each yields the state the spec names", true},
		{"the statuses and Problem bodies the seed names.", true},
		{"the spec section 4 rows", true},
		{"Section 7 rows.", true},
		{"added in wave 2", true},
		{"follows the brief.", true},
		{"the brief says so", true},
		{"found by attack39", true},
		{"the lines of vector V2 of the research notes", true},
		{"a copy of /work/shared/research/x.json", true},

		{"Supabase issues tokens for at most a week.", false},
		{"the server issued a new session", false},
		{"The token's issuer (iss) is not the expected one.", false},
		{"a random seed, so an entry's size does not depend on the key", false},
		{"Seed corpus: testdata/fuzz/FuzzRoute.", false},
		{"creating the demo schema (seed rows)", false},
		{"d the 32-byte seed of RFC 8037", false},
		{"package spec builds the OpenAPI 3.1 document", false},
		{"as RFC 6265 section 5.3 says", false},
		{"the OpenAPI specification's security requirements", false},
		{"wave := func(during func()) // the wave is in flight", false},
		{"a brief pause", false},
		{"the brief window between BEGIN and set_config", false},
	} {
		if got := processPhrase(tc.text); (got != "") != tc.want {
			t.Errorf("processPhrase(%q) = %q, want a match: %v", tc.text, got, tc.want)
		}
	}
	for name, want := range map[string]bool{
		"TestSeedSection3": true, "TestAttack39Probe": true, "TestApplyWritesV2Lines": true, "TestRefreshRejectedClearsLikeV3": true,
		"TestTokenIssuerAudienceDefaults": false, "TestGuardMatrix": false, "FuzzRoute": false,
	} {
		if got := processTestName.MatchString(name); got != want {
			t.Errorf("processTestName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCommentsSpeakOfTheCode fails for a comment (doc comment or not) or
// a test name, in any module of the repository, that speaks of how the
// code was planned instead of what it does (see processPhrases). Generated
// sqlc code is read too: its comments come from sql/queries.
func TestCommentsSpeakOfTheCode(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	self, err := filepath.Abs("prose_test.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", ".git":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		if abs, err := filepath.Abs(p); err == nil && abs == self {
			return nil // its table holds the phrases it rejects
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		checked++
		for _, cg := range f.Comments {
			if m, pos := groupPhrase(cg); m != "" {
				t.Errorf("%s: comment says %q; say what the code does, for someone who has only the repository", fset.Position(pos), m)
			}
		}
		if strings.HasSuffix(p, "_test.go") {
			for _, name := range testNames(f) {
				if processTestName.MatchString(name.Value) {
					t.Errorf("%s: test name %s; name the behaviour it checks", fset.Position(name.Pos), name.Value)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: the walk is broken", checked)
	}
}

// groupPhrase returns the first process phrase of a comment group, read
// as one text so that a phrase broken across lines is found, and the
// position of the comment line it starts on.
func groupPhrase(cg *ast.CommentGroup) (string, token.Pos) {
	var text strings.Builder
	starts := make([]int, len(cg.List))
	for i, c := range cg.List {
		starts[i] = text.Len()
		text.WriteString(strings.TrimSpace(commentText(c.Text)))
		text.WriteByte(' ')
	}
	joined := text.String()
	m := processPhrase(joined)
	if m == "" {
		return "", token.NoPos
	}
	at := strings.Index(joined, m)
	i := len(starts) - 1
	for i > 0 && starts[i] > at {
		i--
	}
	return m, cg.List[i].Pos()
}

// commentText strips the comment markers from one // or /* */ comment.
func commentText(c string) string {
	if strings.HasPrefix(c, "//") {
		return c[2:]
	}
	return strings.TrimSuffix(strings.TrimPrefix(c, "/*"), "*/")
}

// namePos is a test name and where it is written.
type namePos struct {
	Value string
	Pos   token.Pos
}

// testNames returns the top-level test, benchmark, example and fuzz
// functions of f and the constant names given to t.Run and b.Run.
func testNames(f *ast.File) []namePos {
	var out []namePos
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
			for _, p := range []string{"Test", "Benchmark", "Example", "Fuzz"} {
				if strings.HasPrefix(fd.Name.Name, p) {
					out = append(out, namePos{fd.Name.Name, fd.Name.Pos()})
					break
				}
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Run" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, namePos{s, lit.Pos()})
			}
		}
		return true
	})
	return out
}
