package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/integration/internal/itest"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
	"github.com/tablegate/tablegate/internal/oasexamples"
)

// artifactDir is where browser tests keep screenshots: $TABLEGATE_TEST_OUT,
// else a directory under the system temp dir that outlives the test.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TABLEGATE_TEST_OUT")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "tablegate-test-out")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestDocsPageInChromium loads the demo's /api/docs in Debian's headless
// Chromium: the embedded renderer must work offline under the page's CSP,
// find an operation by search, expand a response schema and send a try-it
// request carrying the caller's token that answers 200. A screenshot is kept.
func TestDocsPageInChromium(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	nodetest.RequireChromium(t)
	p := itest.StartDemo(t)
	base := p.Vars["BASE_URL"]
	shot := filepath.Join(artifactDir(t), "docs-page.png")
	var got struct {
		Status           int
		CSP              string
		Title            string
		SearchHash       string
		SchemaBefore     int
		SchemaAfter      int
		TryStatus        int
		TryAuthorization bool
		TryBody          string
		External         []string
		ConsoleErrors    []string
		PageErrors       []string
	}
	nodetest.Run(t, 120*time.Second, "docs-page.mjs", map[string]any{
		"url": base + "/api/docs", "origin": base, "token": p.Vars["USER_TOKEN"],
		"search": "purge", "searchResult": "Delete your completed todos", "screenshot": shot,
	}, &got)
	t.Logf("screenshot: %s", shot)
	if got.Status != 200 || got.Title != "tablegate demo" {
		t.Errorf("page: status %d, title %q", got.Status, got.Title)
	}
	if !strings.Contains(got.CSP, "default-src 'none'") || !strings.Contains(got.CSP, "script-src 'self';") || strings.Contains(got.CSP, "unsafe-eval") {
		t.Errorf("page CSP %q", got.CSP)
	}
	if !strings.Contains(got.SearchHash, "/todos/purge") {
		t.Errorf("search for purge landed on %q", got.SearchHash)
	}
	if got.SchemaBefore != 0 || got.SchemaAfter == 0 {
		t.Errorf("schema expansion: next_cursor shown %d before, %d after the click", got.SchemaBefore, got.SchemaAfter)
	}
	if got.TryStatus != 200 || !got.TryAuthorization || !strings.Contains(got.TryBody, `"items"`) {
		t.Errorf("try-it: status %d, caller's token sent %v, body %s", got.TryStatus, got.TryAuthorization, got.TryBody)
	}
	if len(got.External) > 0 {
		t.Errorf("the page reached outside its origin (it must work offline): %v", got.External)
	}
	if len(got.ConsoleErrors) > 0 || len(got.PageErrors) > 0 {
		t.Errorf("browser errors (CSP violations show here): %v %v", got.ConsoleErrors, got.PageErrors)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
}

// TestDocsPageListGrammarAndExamples checks the demo's reference page as a
// newcomer reads it: every example of the demo's OpenAPI document
// validates against its own schema (request bodies included), the list
// operation shows the grammar <column>=<operator>.<value> in headless
// Chromium (not eaten as HTML), and the create operation's try-it offers
// the document's valid body instead of an empty title. The screenshot is
// kept as docs-list-grammar.png in the artifact directory.
func TestDocsPageListGrammarAndExamples(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	nodetest.RequireChromium(t)
	p := itest.StartDemo(t)
	base := p.Vars["BASE_URL"]
	status, doc := itest.Get(t, "GET", base+"/api/openapi.json", "", "")
	if status != 200 {
		t.Fatalf("openapi.json: %d", status)
	}
	n, errs := oasexamples.Check([]byte(doc))
	for _, err := range errs {
		t.Error(err)
	}
	if n < 10 {
		t.Fatalf("only %d examples checked", n)
	}
	const grammar = "<column>=<operator>.<value>"
	if !strings.Contains(doc, "`"+grammar+"`") {
		t.Fatalf("the list description does not write the grammar as a code span")
	}
	status, body := itest.Get(t, "POST", base+"/api/todos", p.Vars["USER_TOKEN"], `{"title": "string"}`)
	if status != 201 {
		t.Fatalf("the create example as a request: %d %s", status, body)
	}

	shot := filepath.Join(artifactDir(t), "docs-list-grammar.png")
	var got struct {
		Status         int
		GrammarVisible bool
		GrammarTag     string
		ListText       string
		CreateBody     string
		ConsoleErrors  []string
		PageErrors     []string
	}
	nodetest.Run(t, 120*time.Second, "docs-grammar.mjs", map[string]any{
		"url": base + "/api/docs", "section": "/tag/todos/GET/todos", "grammar": grammar, "screenshot": shot,
	}, &got)
	t.Logf("screenshot: %s; list text: %q; create body offered: %q", shot, got.ListText, got.CreateBody)
	if got.Status != 200 || !got.GrammarVisible || got.GrammarTag != "code" {
		t.Errorf("the list grammar on the page: status %d, visible %v, in <%s>", got.Status, got.GrammarVisible, got.GrammarTag)
	}
	if !strings.Contains(got.ListText, "Filter with "+grammar) || strings.Contains(got.ListText, "Filter with =.") {
		t.Errorf("the list description reads %q", got.ListText)
	}
	if !strings.Contains(got.CreateBody, `"title": "string"`) || strings.Contains(got.CreateBody, `"title": ""`) {
		t.Errorf("try-it offers the create body %q", got.CreateBody)
	}
	if len(got.ConsoleErrors) > 0 || len(got.PageErrors) > 0 {
		t.Errorf("browser errors: %v %v", got.ConsoleErrors, got.PageErrors)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v", shot, err)
	}
}
