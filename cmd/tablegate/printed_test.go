package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// shBlockAfter returns the first sh block of doc after the text marker.
func shBlockAfter(t *testing.T, doc, marker string) string {
	t.Helper()
	i := strings.Index(doc, marker)
	if i < 0 {
		t.Fatalf("no %q in the document", marker)
	}
	rest := doc[i:]
	a := strings.Index(rest, "```sh\n")
	if a < 0 {
		t.Fatalf("no sh block after %q", marker)
	}
	rest = rest[a+len("```sh\n"):]
	return rest[:strings.Index(rest, "```\n")]
}

// demoPasteBlock returns the lines the demo prints to paste: from
// "Paste:" to the Ctrl-C note, without their indent.
func demoPasteBlock(t *testing.T, out string) []string {
	t.Helper()
	a := strings.Index(out, "Paste:\n")
	b := strings.Index(out, "\nCtrl-C stops")
	if a < 0 || b < a {
		t.Fatalf("the demo printed no paste block:\n%s", out)
	}
	var lines []string
	for _, l := range strings.Split(out[a+len("Paste:\n"):b], "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestMakeDemoPrintedCommandsRunAsPrinted is the README's "make demo" run
// literally in a copy of the working tree (on a free port, through the
// Makefile's DEMO_FLAGS): every line the demo prints to paste runs in bash
// as printed and answers as its comment says, the approval flow included;
// the README's "tablegate token" line for the demo mints a token the demo
// accepts after sourcing the --print-env file, and so do docs/cli.md's
// approval flow and "tablegate token --help"'s example; and Ctrl-C typed
// into make's terminal ends the demo and make with status 0, without an
// error line.
func TestMakeDemoPrintedCommandsRunAsPrinted(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "sed", "git", "go", "make", "script", "stty"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is required (Debian: apt-get install %s)", tool, tool)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(mustRead(t, filepath.Join(root, "README.md")))
	tokenLine := regexp.MustCompile("`(tablegate token --tenant [^`]+)`").FindStringSubmatch(readmeSection(t, readme, "## The tablegate command"))
	if tokenLine == nil || !strings.Contains(readme, "`tablegate demo --addr 127.0.0.1:0 --print-env /tmp/demo.env`") {
		t.Fatal("README's demo scripts paragraph lacks the --print-env or the tablegate token line")
	}
	tmp := t.TempDir()
	clone := filepath.Join(tmp, "tablegate")
	cloneTree(t, root, clone)
	envFile := filepath.Join(tmp, "demo.env")
	var environ []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") && !strings.HasPrefix(kv, "SUPABASE_") && !strings.HasPrefix(kv, "MAKEFLAGS=") {
			environ = append(environ, kv)
		}
	}
	// make runs in a terminal, as a newcomer runs it: script(1) gives it a
	// pseudo-terminal, and Ctrl-C is the byte a keyboard sends into it.
	cmd := exec.Command("script", "-qfec", "stty -onlcr; exec make demo", "/dev/null")
	cmd.Dir, cmd.Env = clone, append(environ, "DEMO_FLAGS=--addr 127.0.0.1:0 --print-env "+envFile)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	keyboard, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
		}
	})
	deadline := time.After(150 * time.Second)
	for !strings.Contains(out.String(), "\nCtrl-C stops") {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("make demo exited before serving: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("make demo printed no paste block after 150 s\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	vars := sourceWithSh(t, mustRead(t, envFile))
	lines := demoPasteBlock(t, out.String())

	// What each printed line must answer, by a piece of the line.
	tenantA, tenantB := vars["TENANT_A"], vars["TENANT_B"]
	checks := []struct {
		line string
		ok   func(string) bool
	}{
		{`/whoami -H "Authorization`, has(`"kind":"user"`, `"user_id":"`+demoUserID+`"`)},
		{`/whoami -H "apikey`, has(`"kind":"service"`)},
		{`/guard/user -H`, has(`"status":403`, `"code":"ANONYMOUS_USER"`)},
		{`/guard/user-anonymous -H`, has(`"kind":"user"`, `"anonymous":true`)},
		{`/api/todos -H "Authorization: Bearer $USER_TOKEN"` + "\n", func(s string) bool {
			return has(`{"items":[`, tenantA)(s) && !strings.Contains(s, tenantB)
		}},
		{`$OTHER_TENANT_TOKEN"`, func(s string) bool {
			return has(`{"items":[`, tenantB)(s) && !strings.Contains(s, tenantA)
		}},
		{`-d '{"title":"Try tablegate"}'`, has(`"title":"Try tablegate"`, `"done":false`)},
		{`/api/todos/1/complete`, has(`"id":1,`, `"done":true`)},
		{`export?done=true`, has(`{"items":[`, `"id":1,`)},
		{`-X DELETE $BASE_URL/api/todos/1`, has(`"status":403`, `"code":"PERMISSION_DENIED"`)},
		{`# 403 APPROVAL_REQUIRED`, has(`"status":403`, `"code":"APPROVAL_REQUIRED"`, `"approval":{"id":"`)},
		{`APPROVAL_ID=$(`, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString},
		{`/approve -H`, has(`"state":"approved"`, `"permission":"todos.purge"`)},
		{`# now 200`, has(`{"deleted":`)},
		{`/api/openapi.json`, has(`"openapi": "3.1`, `"/todos"`)},
	}
	const eventsLine = `curl -N $BASE_URL/api/todos/events`
	eventsOut := filepath.Join(tmp, "events.out")
	var script strings.Builder
	script.WriteString("cd \"$1\"\n")
	ran := map[int]int{} // index in lines → index in checks
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "export "):
			script.WriteString(l + "\n")
		case strings.HasPrefix(l, eventsLine):
			// Run in the background, as in the second terminal it asks for,
			// started before the writes it should see.
			fmt.Fprintf(&script, "( %s\n) > %s 2>&1 &\nEVENTS=$!\nfor i in $(seq 50); do [ -s %[2]s ] && break; sleep 0.1; done\n", l, eventsOut)
		default:
			c := -1
			for j, ch := range checks {
				if strings.Contains(l+"\n", ch.line) {
					if c >= 0 {
						t.Fatalf("printed line %q matches two checks", l)
					}
					c = j
				}
			}
			if c < 0 {
				t.Fatalf("printed line %q has no expected answer in this test: add one", l)
			}
			ran[i] = c
			fmt.Fprintf(&script, "printf '\\n@@%d\\n'\n%s\n", i, l)
		}
	}
	// Lines run in printed order, except the events line, started first.
	var ordered strings.Builder
	body := script.String()
	if a := strings.Index(body, "( "+eventsLine); a >= 0 {
		b := strings.Index(body[a:], "sleep 0.1; done\n") + a + len("sleep 0.1; done\n")
		ev := body[a:b]
		body = body[:a] + body[b:]
		first := strings.Index(body, "printf '\\n@@")
		ordered.WriteString(body[:first] + ev + body[first:])
	} else {
		t.Fatalf("the demo prints no %q line", eventsLine)
	}
	ordered.WriteString("sleep 0.5\nkill $EVENTS\n")
	sc := exec.Command("bash", "-c", ordered.String(), "bash", tmp)
	sc.Env = environ
	got, err := sc.CombinedOutput()
	if err != nil {
		t.Fatalf("the printed lines: %v\n%s", err, got)
	}
	answers := map[int]string{}
	parts := regexp.MustCompile(`(?m)^@@(\d+)\n`).FindAllStringSubmatchIndex(string(got), -1)
	for k, m := range parts {
		var i int
		fmt.Sscan(string(got[m[2]:m[3]]), &i)
		end := len(got)
		if k+1 < len(parts) {
			end = parts[k+1][0]
		}
		answers[i] = strings.TrimSpace(string(got[m[1]:end]))
	}
	used := map[int]bool{}
	for i, c := range ran {
		used[c] = true
		if !checks[c].ok(answers[i]) {
			t.Errorf("printed line %q answered:\n%s", lines[i], answers[i])
		}
	}
	for j, ch := range checks {
		if !used[j] {
			t.Errorf("the demo no longer prints a line with %q", ch.line)
		}
	}
	if ev := string(mustRead(t, eventsOut)); !strings.Contains(ev, "event: todos.created") || !strings.Contains(ev, "event: todo.completed") {
		t.Errorf("the curl -N line saw:\n%s", ev)
	}

	// The README's token line after sourcing the --print-env file.
	tc := exec.Command("bash", "-c", `set -e; export PATH="$2/bin:$PATH"; . "$1"; `+tokenLine[1], "bash", envFile, clone)
	tc.Env = environ
	tok, err := tc.Output()
	if err != nil {
		t.Fatalf("%s: %v", tokenLine[1], err)
	}
	status, who := get(t, "GET", vars["BASE_URL"]+"/whoami", strings.TrimSpace(string(tok)), "")
	if status != 200 || !strings.Contains(who, `"roles":["admin"]`) || !strings.Contains(who, `"tenant_id":"`+tenantA+`"`) {
		t.Fatalf("the README's token for the demo: %d %s", status, who)
	}

	// docs/cli.md's approval flow and demo token line, as printed, after
	// sourcing the env file.
	cli := string(mustRead(t, filepath.Join(root, "docs/cli.md")))
	flow := shBlockAfter(t, cli, "The approval flow, step by step:")
	dt := exec.Command("bash", "-c", `set -e; export PATH="$2/bin:$PATH"; . "$1"`+"\n"+shBlockAfter(t, cli, "Next to a running demo, after"), "bash", envFile, clone)
	dt.Env = environ
	if tok, err := dt.Output(); err != nil {
		t.Errorf("docs/cli.md's demo token line: %v", err)
	} else if status, who := get(t, "GET", vars["BASE_URL"]+"/whoami", strings.TrimSpace(string(tok)), ""); status != 200 || !strings.Contains(who, `"roles":["admin"]`) {
		t.Errorf("docs/cli.md's demo token: %d %s", status, who)
	}
	fc := exec.Command("bash", "-c", `. "$1"`+"\n"+flow, "bash", envFile)
	fc.Env = environ
	fout, err := fc.CombinedOutput()
	if err != nil || !has(`"code":"APPROVAL_REQUIRED"`, `"state":"approved"`, `{"deleted":`)(string(fout)) {
		t.Errorf("docs/cli.md's approval flow: %v\n%s", err, fout)
	}

	// "tablegate token --help"'s example, with the test's env file for
	// /tmp/demo.env.
	help, _ := exec.Command(filepath.Join(clone, "bin", "tablegate"), "token", "--help").CombinedOutput()
	const exampleHead = "Example, next to a demo started with --print-env /tmp/demo.env:\n"
	j := strings.Index(string(help), exampleHead)
	if j < 0 {
		t.Fatalf("tablegate token --help has no example:\n%s", help)
	}
	example := string(help)[j+len(exampleHead):]
	example = strings.ReplaceAll(example[:strings.Index(example, "\n\n")], "/tmp/demo.env", envFile)
	ec := exec.Command("bash", "-c", `export PATH="$1/bin:$PATH"`+"\n"+example, "bash", clone)
	ec.Env = environ
	if eout, err := ec.CombinedOutput(); err != nil || !has(`"roles":["admin"]`, `"tenant_id":"`+tenantA+`"`)(string(eout)) {
		t.Errorf("tablegate token --help's example: %v\n%s", err, eout)
	}

	// Ctrl-C in the terminal: the demo shuts down and exits 0, and so does
	// make (its recipe hands the demo the terminal's foreground group, so
	// make itself is not interrupted).
	if _, err := keyboard.Write([]byte{3}); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("make demo still runs 30 s after Ctrl-C\n%s", out.String())
	}
	if err != nil {
		t.Errorf("make demo after Ctrl-C: %v, want status 0", err)
	}
	tail := out.String()[strings.Index(out.String(), "\nCtrl-C stops"):]
	if regexp.MustCompile(`(?m)^make(\[\d+\])?: \*\*\*`).MatchString(tail) || !strings.Contains(tail, "▸ shutting down") {
		t.Errorf("Ctrl-C on make demo must end quietly after the demo's shutdown:\n%s", tail)
	}
}

// has returns a check that s holds every want.
func has(want ...string) func(string) bool {
	return func(s string) bool {
		for _, w := range want {
			if !strings.Contains(s, w) {
				return false
			}
		}
		return true
	}
}

// TestInitPrintsTheReadmeLines: the commands "tablegate init" prints next
// are lines of the README's newcomer path, which TestInitPathServesTable
// runs as printed; so they run too.
func TestInitPrintsTheReadmeLines(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme := readmeSection(t, string(mustRead(t, filepath.Join(root, "README.md"))), "## From an empty database to a served table")
	norm := func(l string) string {
		if i := strings.Index(l, "  #"); i >= 0 {
			l = l[:i]
		}
		return strings.Join(strings.Fields(l), " ")
	}
	known := map[string]bool{}
	for _, l := range strings.Split(readme, "\n") {
		known[norm(l)] = true
	}
	r := runCLI(t, nil, "init", "--dir", t.TempDir())
	if r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	next := r.stdout[strings.Index(r.stdout, "Next:"):]
	checked := 0
	for _, l := range strings.Split(next, "\n") {
		l = norm(l)
		if l == "" || l == "Next:" || strings.HasPrefix(l, "cd ") {
			continue
		}
		if strings.HasPrefix(l, `curl -s "$BASE_URL/api/openapi.json"`) {
			continue // the README points at the docs page in prose
		}
		checked++
		if !known[l] {
			t.Errorf("init prints %q, which the README's tested path does not hold", l)
		}
	}
	if checked < 7 {
		t.Fatalf("checked %d lines of:\n%s", checked, next)
	}
}
