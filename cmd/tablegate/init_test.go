package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// readmeSection returns the text of README.md below heading, up to the next
// "## " heading.
func readmeSection(t *testing.T, readme, heading string) string {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	sec := readme[i+len(heading)+2:]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	return sec
}

// readmeBlocks returns the fenced blocks of the given language that follow
// heading in README.md, up to the next "## " heading.
func readmeBlocks(t *testing.T, readme, heading, lang string) []string {
	t.Helper()
	i := strings.Index(readme, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	sec := readme[i+len(heading)+2:]
	if j := strings.Index(sec, "\n## "); j >= 0 {
		sec = sec[:j]
	}
	var blocks []string
	for {
		a := strings.Index(sec, "```"+lang+"\n")
		if a < 0 {
			return blocks
		}
		sec = sec[a+len(lang)+4:]
		b := strings.Index(sec, "```\n")
		if b < 0 {
			t.Fatalf("unterminated %s block in %q", lang, heading)
		}
		blocks = append(blocks, sec[:b])
		sec = sec[b+4:]
	}
}

// cloneTree copies the files git would put in a fresh clone of the working
// tree (tracked and untracked-but-not-ignored, so uncommitted work counts)
// into dst.
func cloneTree(t *testing.T, root, dst string) {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		st, err := os.Lstat(src)
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or not a file
		}
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dst, f)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, st.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// startLogged starts cmd and waits until its combined output matches re,
// returning the first submatch; the process is stopped at cleanup.
func startLogged(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) string {
	t.Helper()
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	deadline := time.After(90 * time.Second)
	for {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-exited:
			t.Fatalf("%v exited before serving: %v\n%s", cmd.Args, err, out.String())
		case <-deadline:
			t.Fatalf("%v: no match for %s after 90 s\n%s", cmd.Args, re, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// get sends a request with an optional bearer token and returns the status
// and body.
func get(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestInitPathServesTable is the newcomer's path, run literally: the
// README's shell lines (build from the clone, init, source .env, both
// migrations, serve) in a copy of the working tree, against an empty
// database; then the README's curl lines; then the README's Go quick start,
// which must be examples/quickstart/main.go verbatim, built and run in the
// same project. Each must serve the RLS-protected table with a 200.
func TestInitPathServesTable(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"sh", "curl", "git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required (Debian: apt-get install %s)", tool, tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	sh := readmeBlocks(t, string(readme), "## From an empty database to a served table", "sh")
	if len(sh) != 2 {
		t.Fatalf("want the setup and the curl blocks, found %d sh blocks", len(sh))
	}
	setup, curls := sh[0], sh[1]
	const serveLine = "tablegate serve --config tablegate.json"
	if !strings.HasSuffix(strings.TrimSpace(setup), serveLine) {
		t.Fatalf("the setup block should end by serving:\n%s", setup)
	}
	goBlocks := readmeBlocks(t, string(readme), "## Quick start in Go", "go")
	quick, err := os.ReadFile(filepath.Join(root, "examples/quickstart/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	if len(goBlocks) != 1 || goBlocks[0] != string(quick) {
		t.Fatalf("README's Go quick start differs from examples/quickstart/main.go")
	}
	quickSh := readmeBlocks(t, string(readme), "## Quick start in Go", "sh")
	if len(quickSh) != 1 || !strings.Contains(quickSh[0], "go -C ../tablegate run ./examples/quickstart") {
		t.Fatalf("want one sh block running the quick start from the project folder, found %q", quickSh)
	}
	// The commands the quick start's section and its doc comment print.
	quickCurls := regexp.MustCompile("`(curl [^`]+)`").FindAllStringSubmatch(readmeSection(t, string(readme), "## Quick start in Go"), -1)
	if len(quickCurls) != 1 {
		t.Fatalf("want the README's curl line for the action, found %q", quickCurls)
	}
	commentCurl := regexp.MustCompile(`(?m)^//\t(curl .*)$`).FindStringSubmatch(string(quick))
	if commentCurl == nil {
		t.Fatalf("examples/quickstart/main.go prints no curl line")
	}
	tokenLine := regexp.MustCompile("`(tablegate token [^`]+)`").FindStringSubmatch(readmeSection(t, string(readme), "## The tablegate command"))
	if tokenLine == nil {
		t.Fatalf("README's command table lacks the tablegate token line")
	}

	tmp := t.TempDir()
	clone := filepath.Join(tmp, "tablegate")
	cloneTree(t, root, clone)
	dbURL := pgtest.EmptyURL(t) // no migrations: the path applies them
	environ := []string{"DATABASE_URL=" + dbURL}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "SUPABASE_") {
			environ = append(environ, kv)
		}
	}

	// The setup block, serving on a free port instead of 8080.
	script := "set -e\n" + strings.Replace(setup, serveLine, "exec "+serveLine+" --addr 127.0.0.1:0", 1)
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = clone, environ
	base := startLogged(t, cmd, regexp.MustCompile(`serving 1 table\(s\) on (http://127\.0\.0\.1:\d+)/api`))
	project := filepath.Join(tmp, "myapi")
	vars := sourceWithSh(t, mustRead(t, filepath.Join(project, ".env")))
	for _, k := range []string{"DATABASE_URL", "SUPABASE_JWKS", "BASE_URL", "USER_ID", "USER_TOKEN", "OTHER_USER_TOKEN"} {
		if vars[k] == "" {
			t.Fatalf(".env lacks %s", k)
		}
	}
	// init's project and the demo (127.0.0.1:8080) run side by side.
	if vars["BASE_URL"] != "http://127.0.0.1:8081" || !strings.Contains(string(mustRead(t, filepath.Join(project, "tablegate.json"))), `"addr": "127.0.0.1:8081"`) {
		t.Fatalf("init's BASE_URL %q and tablegate.json's addr must both be 127.0.0.1:8081", vars["BASE_URL"])
	}
	if vars["DATABASE_URL"] != dbURL {
		t.Fatalf(".env DATABASE_URL = %q, want the environment's %q", vars["DATABASE_URL"], dbURL)
	}

	// The curl block as printed, with BASE_URL pointing at the real port.
	cc := exec.Command("bash", "-c", "set -e\n. ./.env\nBASE_URL="+base+"\n"+curls)
	cc.Dir, cc.Env = project, environ
	out, err := cc.CombinedOutput()
	if err != nil {
		t.Fatalf("curl block: %v\n%s", err, out)
	}
	for _, want := range []string{`"title":"my first todo"`, `{"items":[],"next_cursor":null}`, `"code":"AUTH_REQUIRED"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("curl block output lacks %s:\n%s", want, out)
		}
	}
	status, body := get(t, "GET", base+"/api/todos", vars["USER_TOKEN"], "")
	if status != 200 || !strings.Contains(body, `"owner_id":"`+vars["USER_ID"]+`"`) {
		t.Fatalf("GET /api/todos as the user: %d %s", status, body)
	}
	if status, body = get(t, "GET", base+"/api/todos", vars["OTHER_USER_TOKEN"], ""); status != 200 || strings.Contains(body, "my first todo") {
		t.Fatalf("GET /api/todos as the other user must see nothing: %d %s", status, body)
	}

	// The README's token line, in the project after . ./.env: an admin
	// token for the user that serve accepts.
	tc := exec.Command("bash", "-c", `set -e; export PATH="$1/bin:$PATH"; . ./.env; `+tokenLine[1], "bash", clone)
	tc.Dir, tc.Env = project, environ
	tok, err := tc.Output()
	if err != nil {
		t.Fatalf("%s: %v", tokenLine[1], err)
	}
	if status, body := get(t, "GET", base+"/api/todos", strings.TrimSpace(string(tok)), ""); status != 200 || !strings.Contains(body, "my first todo") {
		t.Fatalf("GET /api/todos with the README's minted token: %d %s", status, body)
	}

	// The README's doctor line, in the project: every check passes.
	doctor := regexp.MustCompile("`(tablegate doctor --config\\s+tablegate.json)`").FindStringSubmatch(readmeSection(t, string(readme), "## From an empty database to a served table"))
	if doctor == nil {
		t.Fatal("README's newcomer path lacks the doctor line")
	}
	dr := exec.Command("bash", "-c", `export PATH="$1/bin:$PATH"; . ./.env`+"\n"+strings.Join(strings.Fields(doctor[1]), " "), "bash", clone)
	dr.Dir, dr.Env = project, environ
	if out, err := dr.CombinedOutput(); err != nil || strings.Contains(string(out), "✗") {
		t.Fatalf("%s: %v\n%s", doctor[1], err, out)
	}

	// docs/cli.md's token lines for a project, as printed: three tokens,
	// the user's accepted by serve.
	dc := exec.Command("bash", "-c", `set -e; export PATH="$1/bin:$PATH"; . ./.env`+"\n"+
		shBlockAfter(t, string(mustRead(t, filepath.Join(root, "docs/cli.md"))), "In a project `init` made, after"), "bash", clone)
	dc.Dir, dc.Env = project, environ
	toks, err := dc.Output()
	if err != nil || len(strings.Fields(string(toks))) != 3 {
		t.Fatalf("docs/cli.md's token lines: %v\n%s", err, toks)
	}
	if status, body := get(t, "GET", base+"/api/todos", strings.Fields(string(toks))[0], ""); status != 200 || !strings.Contains(body, "my first todo") {
		t.Fatalf("GET /api/todos with docs/cli.md's token: %d %s", status, body)
	}

	// The Go quick start, run as the README prints it from the project
	// folder (go -C the clone), on a free port: ADDR, which .env leaves
	// alone, stands in for BASE_URL's 8081 that serve above still holds.
	addr := freeAddr(t)
	q := exec.Command("bash", "-c", "set -e\n"+quickSh[0])
	q.Dir, q.Env = project, append(environ, "ADDR="+addr)
	startLogged(t, q, regexp.MustCompile(`serving (http://\S+)`))
	qroot := "http://" + addr
	qbase := qroot + "/api/todos"
	// The README's curl block against the quick start: /api/todos without
	// a slash answers the list (no 307 to /api/todos/), create runs the hook.
	cq := exec.Command("bash", "-c", "set -e\n. ./.env\nBASE_URL="+qroot+"\n"+curls)
	cq.Dir, cq.Env = project, environ
	if out, err := cq.CombinedOutput(); err != nil || !strings.Contains(string(out), `"done":false`) ||
		!strings.Contains(string(out), `{"items":[],"next_cursor":null}`) || !strings.Contains(string(out), `"code":"AUTH_REQUIRED"`) {
		t.Fatalf("README curl block against the quick start: %v\n%s", err, out)
	}
	// The doc comment's curl line and the README's action line, as printed.
	for _, line := range []string{commentCurl[1], quickCurls[0][1]} {
		c := exec.Command("bash", "-c", "set -e\n. ./.env\nBASE_URL="+qroot+"\n"+line)
		c.Dir, c.Env = project, environ
		out, err := c.Output()
		if err != nil || !strings.HasPrefix(string(out), "{") || !strings.Contains(string(out), "my first todo") {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		if strings.Contains(line, "/complete") && !strings.Contains(string(out), `"done":true`) {
			t.Fatalf("%s: %s", line, out)
		}
	}
	for _, u := range []string{qbase, qbase + "/"} {
		status, body := get(t, "GET", u, vars["USER_TOKEN"], "")
		var page struct{ Items []map[string]any }
		if status != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Items) != 2 {
			t.Fatalf("quick start GET %s: %d %s", u, status, body)
		}
	}
	if status, body := get(t, "POST", qbase, vars["USER_TOKEN"], `{"title":"from Go"}`); status != 201 || !strings.Contains(body, `"done":false`) {
		t.Fatalf("quick start create without a slash: %d %s", status, body)
	}
	if status, body := get(t, "GET", qbase, "", ""); status != 401 || !strings.Contains(body, "AUTH_REQUIRED") {
		t.Fatalf("quick start without a token: %d %s, want 401", status, body)
	}
	if status, body := get(t, "PUT", qbase, vars["USER_TOKEN"], `{}`); status != 405 || !strings.Contains(body, `"status":405`) {
		t.Fatalf("quick start PUT /api/todos: %d %s, want a 405 problem", status, body)
	}
	if status, body := get(t, "GET", qroot+"/api/todosx", vars["USER_TOKEN"], ""); status != 404 {
		t.Fatalf("quick start /api/todosx: %d %s, want 404", status, body)
	}

	// Missing configuration stops the quick start before it serves.
	qs := filepath.Join(tmp, "quickstart")
	build := exec.Command("go", "build", "-o", qs, "./examples/quickstart")
	build.Dir, build.Env = clone, environ
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/quickstart: %v\n%s", err, out)
	}
	bad := exec.Command(qs)
	bad.Env = append(environ, "ADDR="+freeAddr(t))
	if out, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(out), "SUPABASE_URL") {
		t.Fatalf("quick start without SUPABASE_URL/SUPABASE_JWKS: %v\n%s", err, out)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
