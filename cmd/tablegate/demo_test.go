package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/internal/syncbuf"
)

// syncBuffer is a bytes.Buffer safe for the subprocess's writers.
type syncBuffer = syncbuf.Buffer

// demoProc is a running "tablegate demo" subprocess and its printed env.
type demoProc struct {
	cmd      *exec.Cmd
	vars     map[string]string
	envFile  string // the --print-env file
	out, err *syncBuffer
	exited   chan error
}

// buildCLI compiles the command into a temporary directory.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tablegate")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startDemo starts the demo with a throwaway cluster (DATABASE_URL removed
// from its environment) and waits for its --print-env file.
func startDemo(t *testing.T, bin string, extra ...string) *demoProc {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "demo.env")
	args := append([]string{"demo", "--addr", "127.0.0.1:0", "--print-env", envFile}, extra...)
	cmd := exec.Command(bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &demoProc{cmd: cmd, envFile: envFile, out: &syncBuffer{}, err: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.out, p.err
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
	})
	deadline := time.Now().Add(45 * time.Second)
	for {
		if data, err := os.ReadFile(envFile); err == nil {
			p.vars = parseEnvFile(t, data)
			break
		}
		select {
		case err := <-p.exited:
			t.Fatalf("demo exited early: %v\nstderr:\n%s", err, p.err.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no env file after 45 s\nstderr:\n%s", p.err.String())
		}
	}
	return p
}

func parseEnvFile(t *testing.T, data []byte) map[string]string {
	t.Helper()
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			t.Fatalf("env file line without '=': %q", sc.Text())
		}
		vars[k] = unquoteShell(t, v)
	}
	// The file is meant to be sourced: sh must see every key with the value
	// the line reading above found (an unquoted "&" would fork a job and
	// cut DATABASE_URL short).
	for k, v := range sourceWithSh(t, data) {
		if _, listed := vars[k]; listed && v != vars[k] {
			t.Fatalf("sh reads %s=%q, the file means %q", k, v, vars[k])
		}
	}
	if got := sourceWithSh(t, data); len(got) < len(vars) {
		t.Fatalf("sh sees %d of the file's %d keys", len(got), len(vars))
	}
	for _, k := range []string{"BASE_URL", "JWKS_URL", "SIGNING_KEYS_PATH", "DATABASE_URL", "COOKIE_NAME", "TENANT_A", "TENANT_B",
		"USER_ID", "USER_TOKEN", "ADMIN_TOKEN", "APPROVER_TOKEN", "ANON_USER_TOKEN", "OTHER_TENANT_TOKEN", "SERVICE_KEY", "PUBLISHABLE_KEY", "SUPABASE_JWT_ISSUER"} {
		if vars[k] == "" {
			t.Fatalf("env file lacks %s:\n%s", k, data)
		}
	}
	return vars
}

// unquoteShell undoes formatEnv's quoting: a bare value, or one in single
// quotes where each single quote is closed, escaped and reopened.
func unquoteShell(t *testing.T, v string) string {
	t.Helper()
	if !strings.HasPrefix(v, "'") {
		return v
	}
	var b strings.Builder
	for v != "" {
		if !strings.HasPrefix(v, "'") {
			t.Fatalf("malformed quoting near %q", v)
		}
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			t.Fatalf("unterminated quote in %q", v)
		}
		b.WriteString(v[1 : 1+end])
		v = v[2+end:]
		if strings.HasPrefix(v, `\'`) {
			b.WriteByte('\'')
			v = v[2:]
		}
	}
	return b.String()
}

// sourceWithSh sources data with "sh" in an empty environment and returns
// the variables it then holds (PWD and the like filtered out by name: only
// upper-case KEY_NAMEs the file defines survive "set -a").
func sourceWithSh(t *testing.T, data []byte) map[string]string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "sourced.env")
	if err := os.WriteFile(f, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `set -a; . "$1"; exec env -0`, "sh", f)
	cmd.Env = []string{}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sh could not source the env file: %v\n%s", err, data)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(string(out), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "PWD" && k != "SHLVL" && k != "_" {
			got[k] = v
		}
	}
	return got
}

// compactJSON removes insignificant whitespace, keeping key order.
func compactJSON(t *testing.T, b []byte) string {
	t.Helper()
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	return out.String()
}

// stop sends SIGTERM and waits for a clean exit.
func (p *demoProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("demo exit: %v\nstderr:\n%s", err, p.err.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("demo did not exit 30 s after SIGTERM\nstderr:\n%s", p.err.String())
	}
}

// caller is a set of credentials for a request.
type caller struct {
	name   string
	header map[string]string
}

func bearer(name, tok string) caller {
	return caller{name, map[string]string{"Authorization": "Bearer " + tok}}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, r.body)
	}
	return m
}

func do(t *testing.T, c caller, method, u string, body any) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// wantProblem checks a problem+json answer with a status and code.
func wantProblem(t *testing.T, what string, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d: %s", what, r.status, status, r.body)
		return
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Errorf("%s: content type %q", what, ct)
		return
	}
	m := r.json(t)
	if int(m["status"].(float64)) != status {
		t.Errorf("%s: body status %v", what, m["status"])
	}
	if code != "" && m["code"] != code {
		t.Errorf("%s: code %v, want %s", what, m["code"], code)
	}
}

// postgresRunningIn reports whether a process has dir on its command line.
func postgresRunningIn(dir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(dir)) {
			return true
		}
	}
	return false
}

func TestDemoEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres cluster")
	}
	start := time.Now()
	bin := buildCLI(t)
	p := startDemo(t, bin)
	t.Logf("demo ready %s after start (incl. build)", time.Since(start).Round(time.Millisecond))
	v := p.vars
	base := v["BASE_URL"]

	// The cluster lives in the socket directory of DATABASE_URL.
	du, err := url.Parse(v["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	clusterDir := du.Query().Get("host")
	keysDir := filepath.Dir(v["SIGNING_KEYS_PATH"])
	for _, d := range []string{clusterDir, keysDir} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s should exist while serving: %v", d, err)
		}
	}
	if !postgresRunningIn(clusterDir) {
		t.Fatalf("no postgres process for %s", clusterDir)
	}
	if v["JWKS_URL"] != base+"/auth/v1/.well-known/jwks.json" {
		t.Errorf("JWKS_URL %s", v["JWKS_URL"])
	}
	if v["COOKIE_NAME"] != "sb-127-auth-token" {
		t.Errorf("COOKIE_NAME %s", v["COOKIE_NAME"])
	}
	if !strings.Contains(p.out.String(), "curl -s $BASE_URL/whoami") {
		t.Errorf("no curl lines on stdout:\n%s", p.out.String())
	}

	none := caller{"none", nil}
	user := bearer("user", v["USER_TOKEN"])
	anonUser := bearer("anonymous sign-in", v["ANON_USER_TOKEN"])
	service := caller{"service", map[string]string{"apikey": v["SERVICE_KEY"]}}
	tampered := bearer("tampered", v["USER_TOKEN"][:len(v["USER_TOKEN"])-4]+"AAAA")

	// JWKS: the public half of the signing keys file.
	r := do(t, none, "GET", v["JWKS_URL"], nil)
	if r.status != 200 || !strings.Contains(string(r.body), `"kty":"EC"`) || strings.Contains(string(r.body), `"d"`) {
		t.Errorf("jwks: %d %s", r.status, r.body)
	}

	// whoami for every kind of caller.
	t.Run("whoami", func(t *testing.T) {
		m := do(t, user, "GET", base+"/whoami", nil).json(t)
		claims, _ := m["claims"].(map[string]any)
		if m["kind"] != "user" || m["user_id"] != v["USER_ID"] || m["anonymous"] != false || claims["tenant_id"] != v["TENANT_A"] {
			t.Errorf("user: %v", m)
		}
		m = do(t, anonUser, "GET", base+"/whoami", nil).json(t)
		if m["kind"] != "user" || m["anonymous"] != true {
			t.Errorf("anonymous sign-in: %v", m)
		}
		m = do(t, bearer("admin", v["ADMIN_TOKEN"]), "GET", base+"/whoami", nil).json(t)
		claims, _ = m["claims"].(map[string]any)
		if roles, _ := json.Marshal(claims["roles"]); string(roles) != `["admin"]` {
			t.Errorf("admin roles: %s", roles)
		}
		m = do(t, bearer("other", v["OTHER_TENANT_TOKEN"]), "GET", base+"/whoami", nil).json(t)
		claims, _ = m["claims"].(map[string]any)
		if claims["tenant_id"] != v["TENANT_B"] {
			t.Errorf("other tenant: %v", m)
		}
		m = do(t, none, "GET", base+"/whoami", nil).json(t)
		if m["kind"] != "anon" || m["reason"] != "none" {
			t.Errorf("none: %v", m)
		}
		r := do(t, tampered, "GET", base+"/whoami", nil)
		m = r.json(t)
		if m["kind"] != "invalid" || m["reason"] != "token" || m["claims"] != nil || m["cause"] != "TOKEN_SIGNATURE_INVALID" ||
			!strings.Contains(fmt.Sprint(m["detail"]), "signature does not verify") {
			t.Errorf("tampered: %v", m)
		}
		for _, secret := range append(strings.Split(v["USER_TOKEN"], "."), v["USER_ID"]) {
			if strings.Contains(string(r.body), secret) {
				t.Errorf("whoami of a refused token repeats %q: %s", secret, r.body)
			}
		}
		m = do(t, service, "GET", base+"/whoami", nil).json(t)
		if m["kind"] != "service" {
			t.Errorf("service: %v", m)
		}
		// The browser session cookie (@supabase/ssr format) under COOKIE_NAME.
		jar := cookieCaller("cookie", sessionCookies(t, v["COOKIE_NAME"], v["USER_TOKEN"], v["USER_REFRESH_TOKEN"], v["USER_ID"], time.Hour), nil)
		r = do(t, jar, "GET", base+"/whoami", nil)
		if m := r.json(t); m["kind"] != "user" || m["user_id"] != v["USER_ID"] || len(r.header["Set-Cookie"]) != 0 {
			t.Errorf("cookie session without refresh: %v, Set-Cookie %v", m, r.header["Set-Cookie"])
		}
		m = do(t, bearer("publishable", v["PUBLISHABLE_KEY"]), "GET", base+"/whoami", nil).json(t)
		if m["kind"] != "anon" {
			t.Errorf("the publishable key as Bearer (supabase-js signed out) should be anon: %v", m)
		}
		m = do(t, caller{"wrong key", map[string]string{"apikey": "sb_secret_wrong"}}, "GET", base+"/whoami", nil).json(t)
		if m["kind"] == "service" {
			t.Errorf("a wrong secret key resolved as service: %v", m)
		}
	})

	// "tablegate token" run after sourcing the --print-env file (nothing
	// else in the environment, in a folder without supabase/config.toml)
	// mints tokens the demo accepts: the file exports the issuer and the
	// signing keys path it reads. Minted without them, the token is
	// refused with a cause naming both issuers.
	t.Run("token after sourcing the env file", func(t *testing.T) {
		run := func(script string) string {
			cmd := exec.Command("sh", "-c", script, "sh", p.envFile, bin)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", script, err, out)
			}
			return strings.TrimSpace(string(out))
		}
		tok := run(`. "$1" && "$2" token --tenant "$TENANT_A" --roles admin`)
		m := do(t, bearer("minted", tok), "GET", base+"/whoami", nil).json(t)
		claims, _ := m["claims"].(map[string]any)
		if m["kind"] != "user" || claims["tenant_id"] != v["TENANT_A"] || claims["iss"] != v["SUPABASE_JWT_ISSUER"] {
			t.Fatalf("token minted after sourcing the env file: %v", m)
		}
		if r := do(t, bearer("minted", tok), "GET", base+"/api/todos/", nil); r.status != 200 {
			t.Errorf("list with the minted token: %d %s", r.status, r.body)
		}
		foreign := run(`"$2" token --signing-keys "$(. "$1" && echo "$SIGNING_KEYS_PATH")" --tenant 00000000-0000-4000-8000-000000000001`)
		r := do(t, bearer("foreign issuer", foreign), "GET", base+"/whoami", nil)
		m = r.json(t)
		detail := fmt.Sprint(m["detail"])
		if m["kind"] != "invalid" || m["reason"] != "token" || m["cause"] != "TOKEN_ISSUER_MISMATCH" ||
			!strings.Contains(detail, `"http://127.0.0.1:54321/auth/v1"`) || !strings.Contains(detail, `"`+v["SUPABASE_JWT_ISSUER"]+`"`) {
			t.Errorf("token with the default issuer: %v", m)
		}
		r = do(t, bearer("foreign issuer", foreign), "GET", base+"/api/todos/", nil)
		var pb map[string]any
		_ = json.Unmarshal(r.body, &pb)
		if r.status != 401 || pb["code"] != "TOKEN_ISSUER_MISMATCH" || strings.Contains(string(r.body), foreign) {
			t.Errorf("list with the default issuer: %d %s", r.status, r.body)
		}
		// The access log names the cause, never the token.
		deadline := time.Now().Add(5 * time.Second)
		for !strings.Contains(p.err.String(), `"caller_cause":"TOKEN_ISSUER_MISMATCH"`) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // sleep: the poll step of the bounded wait for the access log line
		}
		logs := p.err.String()
		if !strings.Contains(logs, `"caller_kind":"invalid","caller_reason":"token","caller_cause":"TOKEN_ISSUER_MISMATCH"`) {
			t.Errorf("no access log line with the cause:\n%s", logs)
		}
		for _, part := range strings.Split(foreign, ".") {
			if strings.Contains(logs, part) {
				t.Errorf("the access log holds a part of the token")
			}
		}
	})

	// The guard matrix: each allow list against each kind of caller.
	t.Run("guard matrix", func(t *testing.T) {
		type want struct {
			status int
			code   string
		}
		ok := want{200, ""}
		matrix := map[string]map[string]want{
			"user":           {"user": ok, "anonymous sign-in": {403, "ANONYMOUS_USER"}, "none": {401, ""}},
			"user-anon":      {"user": ok, "anonymous sign-in": {403, "ANONYMOUS_USER"}, "none": ok},
			"user-anonymous": {"user": ok, "anonymous sign-in": ok, "none": {401, ""}},
			"anonymous":      {"user": {403, ""}, "anonymous sign-in": ok, "none": {401, ""}},
		}
		for route, row := range matrix {
			for _, c := range []caller{user, anonUser, none, tampered, service} {
				w, listed := row[c.name]
				switch {
				case c.name == "tampered":
					w = want{401, "TOKEN_SIGNATURE_INVALID"}
				case !listed: // service callers are admitted by no demo guard
					w = want{403, ""}
				}
				r := do(t, c, "GET", base+"/guard/"+route, nil)
				what := fmt.Sprintf("/guard/%s as %s", route, c.name)
				if w.status == 200 {
					if r.status != 200 {
						t.Errorf("%s: %d %s", what, r.status, r.body)
					} else if m := r.json(t); m["kind"] != "user" && m["kind"] != "anon" {
						t.Errorf("%s: body %v", what, m)
					}
					continue
				}
				wantProblem(t, what, r, w.status, w.code)
			}
		}
		wantProblem(t, "unknown guard", do(t, user, "GET", base+"/guard/nobody", nil), 404, "")
	})

	t.Run("todos", func(t *testing.T) {
		api := base + "/api/todos"
		admin := bearer("admin", v["ADMIN_TOKEN"])
		approver := bearer("approver", v["APPROVER_TOKEN"])
		other := bearer("other tenant", v["OTHER_TENANT_TOKEN"])
		items := func(c caller, u string) []map[string]any {
			t.Helper()
			r := do(t, c, "GET", u, nil)
			if r.status != 200 {
				t.Fatalf("GET %s as %s: %d %s", u, c.name, r.status, r.body)
			}
			var page struct{ Items []map[string]any }
			if err := json.Unmarshal(r.body, &page); err != nil {
				t.Fatalf("page: %v %s", err, r.body)
			}
			return page.Items
		}
		tenantsOf := func(rows []map[string]any) map[any]int {
			m := map[any]int{}
			for _, row := range rows {
				m[row["tenant_id"]]++
			}
			return m
		}

		// RLS: each tenant sees its own rows; guests read; anon is refused by the guard.
		mine := items(user, api)
		if ts := tenantsOf(mine); len(mine) < 3 || len(ts) != 1 || ts[v["TENANT_A"]] != len(mine) {
			t.Errorf("user list: %v", mine)
		}
		theirs := items(other, api)
		if ts := tenantsOf(theirs); len(theirs) < 2 || len(ts) != 1 || ts[v["TENANT_B"]] != len(theirs) {
			t.Errorf("other tenant list: %v", theirs)
		}
		if guest := items(anonUser, api); len(guest) != len(mine) {
			t.Errorf("anonymous sign-in reads %d rows, the full user %d", len(guest), len(mine))
		}
		wantProblem(t, "list without session", do(t, none, "GET", api, nil), 401, "AUTH_REQUIRED")
		wantProblem(t, "list with a tampered token", do(t, tampered, "GET", api, nil), 401, "TOKEN_SIGNATURE_INVALID")
		wantProblem(t, "list as service", do(t, service, "GET", api, nil), 403, "CALLER_NOT_ALLOWED")
		bID := fmt.Sprint(theirs[0]["id"])
		wantProblem(t, "get another tenant's row", do(t, user, "GET", api+"/"+bID, nil), 404, "")

		// create: title required (1-200 chars), done optional, nothing else.
		r := do(t, user, "POST", api, map[string]any{"title": "From the test"})
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		created := r.json(t)
		id := fmt.Sprint(created["id"])
		if created["owner_id"] != v["USER_ID"] || created["tenant_id"] != v["TENANT_A"] || created["done"] != false {
			t.Errorf("created row: %v", created)
		}
		for name, body := range map[string]any{
			"no title":      map[string]any{"done": true},
			"empty title":   map[string]any{"title": ""},
			"long title":    map[string]any{"title": strings.Repeat("x", 201)},
			"unknown key":   map[string]any{"title": "x", "owner_id": v["USER_ID"]},
			"done a string": map[string]any{"title": "x", "done": "yes"},
			"not an object": []any{"x"},
		} {
			wantProblem(t, "create with "+name, do(t, user, "POST", api, body), 400, "")
		}
		wantProblem(t, "create as anonymous sign-in", do(t, anonUser, "POST", api, map[string]any{"title": "guest"}), 403, "")
		for _, row := range items(other, api) {
			if fmt.Sprint(row["id"]) == id {
				t.Error("tenant B sees tenant A's new row")
			}
		}

		// update: both keys optional, no other keys, own rows only.
		r = do(t, user, "PATCH", api+"/"+id, map[string]any{"title": "Renamed"})
		if r.status != 200 || r.json(t)["title"] != "Renamed" {
			t.Errorf("update: %d %s", r.status, r.body)
		}
		wantProblem(t, "update with an unknown key", do(t, user, "PATCH", api+"/"+id, map[string]any{"owner_id": v["USER_ID"]}), 400, "")
		// The anonymous sign-in reads the row (a member of the tenant) but
		// the update policy refuses it: 403, not 404.
		wantProblem(t, "update by an anonymous sign-in", do(t, anonUser, "PATCH", api+"/"+id, map[string]any{"done": true}), 403, "")
		wantProblem(t, "delete by an anonymous sign-in", do(t, anonUser, "DELETE", api+"/"+id, nil), 403, "")
		wantProblem(t, "update with done null (NOT NULL column)", do(t, user, "PATCH", api+"/"+id, map[string]any{"done": nil}), 400, "")
		wantProblem(t, "malformed key", do(t, user, "GET", api+"/abc", nil), 400, "")
		r = do(t, user, "PUT", api+"/"+id, map[string]any{"title": "x"})
		wantProblem(t, "PUT", r, 405, "")
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "PATCH") || !strings.Contains(allow, "DELETE") {
			t.Errorf("Allow %q", allow)
		}

		// complete (item action): the owner only; emits todo.completed.
		r = do(t, user, "POST", api+"/"+id+"/complete", nil)
		if r.status != 200 || r.json(t)["done"] != true {
			t.Errorf("complete: %d %s", r.status, r.body)
		}
		// The action's row renders like GET's: same keys in the same order,
		// same timestamp format (whitespace aside).
		if g := do(t, user, "GET", api+"/"+id, nil); compactJSON(t, g.body) != compactJSON(t, r.body) {
			t.Errorf("complete's row differs from GET's:\n%s\n%s", r.body, g.body)
		}
		wantProblem(t, "complete by an anonymous sign-in", do(t, anonUser, "POST", api+"/"+id+"/complete", nil), 403, "")
		wantProblem(t, "complete another tenant's row", do(t, user, "POST", api+"/"+bID+"/complete", nil), 404, "")

		// export (collection action) with the done filter.
		r = do(t, user, "GET", api+"/export?done=true", nil)
		var exp struct{ Items []map[string]any }
		if r.status != 200 || json.Unmarshal(r.body, &exp) != nil || len(exp.Items) == 0 {
			t.Fatalf("export: %d %s", r.status, r.body)
		}
		for _, row := range exp.Items {
			if row["done"] != true || row["tenant_id"] != v["TENANT_A"] {
				t.Errorf("export row %v", row)
			}
		}
		// Export items render like list items.
		var lst, ex struct{ Items []json.RawMessage }
		_ = json.Unmarshal(r.body, &ex)
		if l := do(t, user, "GET", api+"?done=eq.true&order=id", nil); json.Unmarshal(l.body, &lst) != nil || len(lst.Items) != len(ex.Items) ||
			compactJSON(t, lst.Items[0]) != compactJSON(t, ex.Items[0]) {
			t.Errorf("export items differ from list items:\n%s\n%s", r.body, l.body)
		}
		wantProblem(t, "export with done=maybe", do(t, user, "GET", api+"/export?done=maybe", nil), 400, "")

		// delete needs todos.delete (role admin), and RLS keeps it to own rows.
		r = do(t, user, "DELETE", api+"/"+id, nil)
		wantProblem(t, "delete without todos.delete", r, 403, "PERMISSION_DENIED")
		if r.status == 403 && r.json(t)["permission"] != "todos.delete" {
			t.Errorf("permission field: %s", r.body)
		}
		r = do(t, admin, "POST", api, map[string]any{"title": "Admin's own", "done": true})
		if r.status != 201 {
			t.Fatalf("admin create: %d %s", r.status, r.body)
		}
		adminID := fmt.Sprint(r.json(t)["id"])
		if r := do(t, admin, "DELETE", api+"/"+adminID, nil); r.status != 204 || len(r.body) != 0 {
			t.Errorf("admin delete: %d %s", r.status, r.body)
		}
		wantProblem(t, "get deleted row", do(t, admin, "GET", api+"/"+adminID, nil), 404, "")
		wantProblem(t, "admin deletes another user's readable row", do(t, admin, "DELETE", api+"/"+id, nil), 403, "")

		// purge needs an approval by another user holding the approver role.
		r = do(t, user, "POST", api+"/purge", nil)
		wantProblem(t, "purge without approval", r, 403, "APPROVAL_REQUIRED")
		var approvalID string
		if r.status == 403 {
			m := r.json(t)
			appr, _ := m["approval"].(map[string]any)
			approvalID, _ = appr["id"].(string)
			if m["permission"] != "todos.purge" || approvalID == "" {
				t.Fatalf("approval body: %s", r.body)
			}
		}
		approvals := base + "/api/approvals/" + approvalID
		wantProblem(t, "requester approves own request", do(t, user, "POST", approvals+"/approve", nil), 403, "")
		wantProblem(t, "approvals without session", do(t, none, "GET", approvals, nil), 401, "")
		if r := do(t, user, "GET", approvals, nil); r.status != 200 || r.json(t)["state"] != "pending" {
			t.Errorf("requester reads the pending approval: %d %s", r.status, r.body)
		}
		if r := do(t, approver, "POST", approvals+"/approve", nil); r.status != 200 || r.json(t)["state"] != "approved" {
			t.Fatalf("approver approves: %d %s", r.status, r.body)
		}
		r = do(t, user, "POST", api+"/purge", nil)
		if r.status != 200 {
			t.Fatalf("purge after approval: %d %s", r.status, r.body)
		}
		if n, ok := r.json(t)["deleted"].(float64); !ok || n < 1 {
			t.Errorf("purge deleted %s (the user has done todos)", r.body)
		}
		for _, row := range items(user, api) {
			if row["owner_id"] == v["USER_ID"] && row["done"] == true {
				t.Errorf("done todo of the user survived the purge: %v", row)
			}
		}
		wantProblem(t, "the approval admits one request", do(t, user, "POST", api+"/purge", nil), 403, "APPROVAL_REQUIRED")
		wantProblem(t, "unknown resource", do(t, user, "GET", base+"/api/nope", nil), 404, "")
	})

	t.Run("refresh grant", func(t *testing.T) {
		tokenURL := base + "/auth/v1/token?grant_type=refresh_token"
		rt := v["USER_REFRESH_TOKEN"]
		if len(rt) != 12 {
			t.Fatalf("USER_REFRESH_TOKEN %q", rt)
		}
		type grant struct {
			AccessToken  string `json:"access_token"`
			RefreshToken string `json:"refresh_token"`
			ExpiresAt    int64  `json:"expires_at"`
			User         struct{ ID string }
		}
		withKey := caller{"apikey", map[string]string{"apikey": v["PUBLISHABLE_KEY"]}}
		refresh := func(tok string) (response, grant) {
			r := do(t, withKey, "POST", tokenURL, map[string]string{"refresh_token": tok})
			var g grant
			if r.status == 200 {
				_ = json.Unmarshal(r.body, &g)
			}
			return r, g
		}
		r, g := refresh(rt)
		if r.status != 200 || g.AccessToken == "" || g.RefreshToken == "" || g.RefreshToken == rt || g.User.ID != v["USER_ID"] {
			t.Fatalf("refresh: %d %s", r.status, r.body)
		}
		before := do(t, user, "GET", base+"/whoami", nil).json(t)["claims"].(map[string]any)
		after := do(t, bearer("refreshed", g.AccessToken), "GET", base+"/whoami", nil).json(t)
		claims, _ := after["claims"].(map[string]any)
		if after["kind"] != "user" || after["user_id"] != v["USER_ID"] || claims["session_id"] != before["session_id"] || claims["tenant_id"] != v["TENANT_A"] {
			t.Errorf("refreshed token: %v (session before %v)", after, before["session_id"])
		}
		// Reuse of the old token inside the reuse interval answers the current token.
		if r, g2 := refresh(rt); r.status != 200 || g2.RefreshToken != g.RefreshToken {
			t.Errorf("reuse within the interval: %d %s", r.status, r.body)
		}
		r, _ = refresh("zzzzzzzzzzzz")
		if r.status != 400 || !strings.Contains(string(r.body), `"code":"refresh_token_not_found"`) {
			t.Errorf("unknown refresh token: %d %s", r.status, r.body)
		}
		if r := do(t, none, "POST", tokenURL, map[string]string{"refresh_token": rt}); r.status != 401 {
			t.Errorf("refresh without apikey: %d %s", r.status, r.body)
		}
		r = do(t, withKey, "POST", base+"/auth/v1/token?grant_type=password", map[string]string{"email": "a@b.c"})
		if r.status != 400 {
			t.Errorf("password grant: %d %s", r.status, r.body)
		}
	})

	t.Run("events", func(t *testing.T) {
		if !strings.Contains(p.out.String(), "curl -N $BASE_URL/api/todos/events") {
			t.Errorf("no curl -N line for the events")
		}
		// The stream's path is its own: another method is 405, never the
		// item route of a key "events".
		for _, m := range []string{"PATCH", "DELETE", "POST"} {
			r := do(t, user, m, base+"/api/todos/events", map[string]any{})
			wantProblem(t, m+" /api/todos/events", r, 405, "")
			if allow := r.header.Get("Allow"); allow != "GET" {
				t.Errorf("%s /api/todos/events: Allow %q", m, allow)
			}
		}
		open := func(c caller) (*http.Response, *bufio.Reader) {
			t.Helper()
			req, _ := http.NewRequest("GET", base+"/api/todos/events", nil)
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { resp.Body.Close() })
			return resp, bufio.NewReader(resp.Body)
		}
		// nextEvent returns the next event's name and data line.
		nextEvent := func(rd *bufio.Reader) (name, data string) {
			t.Helper()
			type line struct {
				s   string
				err error
			}
			for {
				ch := make(chan line, 1)
				go func() { s, err := rd.ReadString('\n'); ch <- line{s, err} }()
				select {
				case l := <-ch:
					if l.err != nil {
						t.Fatalf("stream: %v", l.err)
					}
					s := strings.TrimSpace(l.s)
					if n, ok := strings.CutPrefix(s, "event: "); ok {
						name = n
					} else if d, ok := strings.CutPrefix(s, "data: "); ok && name != "" {
						return name, d
					}
				case <-time.After(10 * time.Second):
					t.Fatal("no event within 10s")
				}
			}
		}
		if resp, _ := open(anonUser); resp.StatusCode != 403 {
			t.Errorf("anonymous sign-in subscribes: %d", resp.StatusCode)
		}
		resp, rd := open(user)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("subscribe: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		r := do(t, user, "POST", base+"/api/todos", map[string]any{"title": "watched"})
		if r.status != 201 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		id := fmt.Sprint(r.json(t)["id"])
		if r := do(t, user, "POST", base+"/api/todos/"+id+"/complete", nil); r.status != 200 {
			t.Fatalf("complete: %d %s", r.status, r.body)
		}
		// Events of the earlier subtests may still arrive first (a stream
		// starts where this instance has read the outbox): follow the
		// events of the "watched" row only.
		var got []string
		for len(got) < 3 {
			name, data := nextEvent(rd)
			if strings.Contains(data, `"watched"`) && (len(got) > 0 || name == "todos.created") {
				got = append(got, name)
			}
		}
		if strings.Join(got, " ") != "todos.created todos.updated todo.completed" {
			t.Errorf("events %v", got)
		}
	})

	t.Run("openapi and docs", func(t *testing.T) {
		r := do(t, none, "GET", base+"/api/openapi.json", nil)
		if r.status != 200 {
			t.Fatalf("openapi.json: %d %s", r.status, r.body)
		}
		var doc struct {
			OpenAPI string                               `json:"openapi"`
			Servers []struct{ URL string }               `json:"servers"`
			Paths   map[string]map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(r.body, &doc); err != nil || doc.OpenAPI != "3.1.0" || len(doc.Servers) == 0 || doc.Servers[0].URL != "/api" {
			t.Fatalf("document: %v %.300s", err, r.body)
		}
		find := func(path, method string) map[string]any {
			op := doc.Paths[path][method]
			if op == nil {
				t.Errorf("no %s %s in %v", method, path, keys(doc.Paths))
			}
			return op
		}
		if op := find("/todos/{id}", "delete"); op != nil && op["x-service-permission"] != "todos.delete" {
			t.Errorf("delete permission: %v", op["x-service-permission"])
		}
		if op := find("/todos/purge", "post"); op != nil && op["x-service-permission"] != "todos.purge" {
			t.Errorf("purge permission: %v", op["x-service-permission"])
		}
		if op := find("/todos/{id}/complete", "post"); op != nil {
			if emits, _ := json.Marshal(op["x-service-emits"]); string(emits) != `["todo.completed"]` {
				t.Errorf("complete emits %s", emits)
			}
		}
		find("/todos/export", "get")
		find("/todos", "post")
		// Every served route is described, the approvals included.
		for _, pm := range [][2]string{{"/approvals", "get"}, {"/approvals/{id}", "get"}, {"/approvals/{id}/approve", "post"}, {"/approvals/{id}/deny", "post"}} {
			find(pm[0], pm[1])
		}
		if op := find("/todos/events", "get"); op != nil {
			b, _ := json.Marshal(op["responses"])
			if !strings.Contains(string(b), "text/event-stream") || !strings.Contains(string(b), "todo.completed") {
				t.Errorf("events operation: %s", b)
			}
		}
		r = do(t, none, "GET", base+"/api/docs", nil)
		if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
			t.Errorf("docs: %d %s", r.status, r.header.Get("Content-Type"))
		}
	})

	t.Run("mcp", func(t *testing.T) {
		ctx := context.Background()
		connect := func(tok string) (*mcp.ClientSession, error) {
			tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
				HTTPClient: &http.Client{Transport: headerTransport{"Authorization": "Bearer " + tok}}}
			return mcp.NewClient(&mcp.Implementation{Name: "demo-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
		}
		cs, err := connect(v["USER_TOKEN"])
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools.Tools {
			names = append(names, tl.Name)
		}
		for _, want := range []string{"listTodos", "createTodo", "deleteTodo", "completeTodos", "exportTodos", "purgeTodos"} {
			if !slices.Contains(names, want) {
				t.Errorf("tool %s missing from %v", want, names)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "listTodos", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("listTodos: %v %v", err, res)
		}
		var page struct{ Items []map[string]any }
		b, _ := json.Marshal(res.StructuredContent)
		if json.Unmarshal(b, &page) != nil || len(page.Items) == 0 {
			t.Errorf("listTodos content: %s", b)
		}
		for _, it := range page.Items {
			if it["tenant_id"] != v["TENANT_A"] {
				t.Errorf("MCP list crosses tenants: %v", it)
			}
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "deleteTodo", Arguments: map[string]any{"id": 1}})
		if err != nil || !res.IsError {
			t.Errorf("deleteTodo without todos.delete should be a tool error: %v %v", err, res)
		}

		// An agent finishes an approval-gated call with the approvals tools.
		text := func(res *mcp.CallToolResult) string {
			if len(res.Content) == 0 {
				return ""
			}
			tc, _ := res.Content[0].(*mcp.TextContent)
			if tc == nil {
				return ""
			}
			return tc.Text
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "purgeTodos", Arguments: map[string]any{}})
		var refusal struct {
			Code     string
			Approval struct{ ID string }
		}
		if err != nil || !res.IsError || json.Unmarshal([]byte(text(res)), &refusal) != nil || refusal.Code != "APPROVAL_REQUIRED" || refusal.Approval.ID == "" {
			t.Fatalf("purgeTodos before approval: %v %s", err, text(res))
		}
		approver, err := connect(v["APPROVER_TOKEN"])
		if err != nil {
			t.Fatal(err)
		}
		defer approver.Close()
		res, err = approver.CallTool(ctx, &mcp.CallToolParams{Name: "listApprovals", Arguments: map[string]any{"state": "pending", "limit": 50}})
		if err != nil || res.IsError || !strings.Contains(text(res), refusal.Approval.ID) {
			t.Fatalf("listApprovals: %v %s", err, text(res))
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "approveApproval", Arguments: map[string]any{"id": refusal.Approval.ID}})
		if err != nil || !res.IsError || !strings.Contains(text(res), `"status":403`) {
			t.Errorf("the requester approving their own request: %v %s", err, text(res))
		}
		res, err = approver.CallTool(ctx, &mcp.CallToolParams{Name: "approveApproval", Arguments: map[string]any{"id": refusal.Approval.ID}})
		if err != nil || res.IsError || !strings.Contains(text(res), `"state":"approved"`) {
			t.Fatalf("approveApproval: %v %s", err, text(res))
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "purgeTodos", Arguments: map[string]any{}})
		if err != nil || res.IsError || !strings.Contains(text(res), `"deleted"`) {
			t.Errorf("purgeTodos after approval: %v %s", err, text(res))
		}
		res, err = approver.CallTool(ctx, &mcp.CallToolParams{Name: "getApproval", Arguments: map[string]any{"id": "not-a-uuid", "extra": 1}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "/extra") {
			t.Errorf("getApproval with an unknown argument: %v %s", err, text(res))
		}
		anon, err := connect(v["ANON_USER_TOKEN"])
		if err != nil {
			t.Fatal(err)
		}
		defer anon.Close()
		res, err = anon.CallTool(ctx, &mcp.CallToolParams{Name: "listApprovals", Arguments: map[string]any{}})
		if err != nil || !res.IsError || !strings.Contains(text(res), "ANONYMOUS_USER") {
			t.Errorf("listApprovals by an anonymous sign-in: %v %s", err, text(res))
		}
		if _, err := connect("not-a-token"); err == nil {
			t.Error("MCP connect with an invalid token succeeded")
		}
		// OAuth discovery: the 401 names the protected resource metadata,
		// which names the demo's own auth server.
		r := do(t, none, "POST", base+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize"})
		if r.status != 401 {
			t.Fatalf("MCP without a token: %d %s", r.status, r.body)
		}
		checkMCPDiscovery(t, r.header.Get("WWW-Authenticate"), base, base+"/auth/v1")
	})

	t.Run("health and fallbacks", func(t *testing.T) {
		if r := do(t, none, "GET", base+"/livez", nil); r.status != 200 {
			t.Errorf("livez %d", r.status)
		}
		if r := do(t, none, "GET", base+"/readyz", nil); r.status != 200 {
			t.Errorf("readyz %d", r.status)
		}
		wantProblem(t, "unknown route", do(t, none, "GET", base+"/nope", nil), 404, "")
		r := do(t, user, "POST", base+"/whoami", map[string]any{})
		wantProblem(t, "POST /whoami", r, 405, "")
		if allow := r.header.Values("Allow"); len(allow) != 1 || allow[0] != "GET, HEAD" {
			t.Errorf("Allow %q, want one GET, HEAD", allow)
		}
	})

	// Shutdown removes Postgres and the temporary files.
	p.stop(t)
	for _, d := range []string{clusterDir, keysDir} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists after SIGTERM (%v)", d, err)
		}
	}
	if postgresRunningIn(clusterDir) {
		t.Errorf("a postgres process still runs for %s", clusterDir)
	}
	if _, err := http.Get(base + "/livez"); err == nil {
		t.Error("server still answers after SIGTERM")
	}
	if !strings.Contains(p.err.String(), "stopping Postgres and removing") {
		t.Errorf("no shutdown progress:\n%s", p.err.String())
	}
	t.Logf("whole demo test %s", time.Since(start).Round(time.Millisecond))
}

// TestDemoWithOwnDatabaseKeysAndAuthURL runs the demo against a given
// database, a kept signing keys file and an external auth URL.
func TestDemoWithOwnDatabaseKeysAndAuthURL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	dbURL := pgtest.URL(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "signing_keys.json")
	if r := runCLI(t, nil, "keys", "new", "--path", keys); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ks, err := loadKeyFile(keys)
	if err != nil {
		t.Fatal(err)
	}
	var jwksHits atomic.Int32
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/auth/v1/.well-known/jwks.json" {
			jwksHits.Add(1)
			_, _ = w.Write(ks.PublicJWKS())
			return
		}
		http.NotFound(w, r)
	}))
	defer auth.Close()

	adminAddr := freeAddr(t)
	p := startDemo(t, buildCLI(t), "--database-url", dbURL, "--signing-keys", keys, "--auth-url", auth.URL+"/", "--admin-addr", adminAddr)
	v := p.vars
	if v["JWKS_URL"] != auth.URL+"/auth/v1/.well-known/jwks.json" || v["SIGNING_KEYS_PATH"] != keys || v["DATABASE_URL"] != dbURL {
		t.Errorf("env: %v", v)
	}
	if _, ok := v["USER_REFRESH_TOKEN"]; ok {
		t.Error("USER_REFRESH_TOKEN with an external auth server")
	}
	if jwksHits.Load() == 0 {
		t.Error("the JWKS of --auth-url was never fetched")
	}
	if !strings.Contains(p.err.String(), "loading signing keys from "+keys) || strings.Contains(p.err.String(), "throwaway") {
		t.Errorf("progress:\n%s", p.err.String())
	}
	base := v["BASE_URL"]
	m := do(t, bearer("user", v["USER_TOKEN"]), "GET", base+"/whoami", nil).json(t)
	claims, _ := m["claims"].(map[string]any)
	if m["kind"] != "user" || claims["iss"] != auth.URL+"/auth/v1" {
		t.Errorf("whoami: %v", m)
	}
	r := do(t, bearer("user", v["USER_TOKEN"]), "GET", base+"/api/todos", nil)
	if r.status != 200 {
		t.Errorf("todos on the given database: %d %s", r.status, r.body)
	}
	// The demo is observed like serve: X-Request-Id echoed, an access log
	// line on stderr, the admin listener's probes and metrics.
	rid := r.header.Get("X-Request-Id")
	if len(rid) != 24 {
		t.Errorf("demo X-Request-Id %q", rid)
	}
	admin := "http://" + adminAddr
	for _, probe := range []string{"/livez", "/readyz"} {
		if code, _, body := getURL(t, admin+probe, nil); code != 200 {
			t.Errorf("demo admin %s: %d %s", probe, code, body)
		}
	}
	if code, _, body := getURL(t, admin+"/metrics", nil); code != 200 ||
		!strings.Contains(body, `http_server_request_duration_seconds_count{`) || !strings.Contains(body, `http_route="/api/todos"`) {
		t.Errorf("demo admin /metrics: %d, no /api/todos request counted:\n%.2000s", code, body)
	}
	logged := false
	for _, line := range strings.Split(p.err.String(), "\n") {
		var l struct {
			Msg, Route string
			RequestID  string `json:"request_id"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "request" && l.Route == "/api/todos" && l.RequestID == rid {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no access log line for request %s on the demo's stderr:\n%s", rid, p.err.String())
	}
	wantProblem(t, "refresh grant with an external auth server", do(t, caller{}, "POST", base+"/auth/v1/token?grant_type=refresh_token", map[string]string{"refresh_token": "x"}), 404, "")
	p.stop(t)
	if _, err := os.Stat(keys); err != nil {
		t.Errorf("the given signing keys file must stay: %v", err)
	}
	pool := pgtest.Pool(t, dbURL)
	var n int
	if err := pool.QueryRow(context.Background(), "select count(*) from public.todos").Scan(&n); err != nil || n == 0 {
		t.Errorf("the given database must keep the demo rows: %d %v", n, err)
	}
}

// sessionCookies returns the @supabase/ssr cookies of a session holding
// the given tokens.
func sessionCookies(t *testing.T, name, access, refresh, userID string, ttl time.Duration) []*http.Cookie {
	t.Helper()
	session, _ := json.Marshal(map[string]any{
		"access_token": access, "token_type": "bearer", "expires_in": int(ttl.Seconds()),
		"expires_at": time.Now().Add(ttl).Unix(), "refresh_token": refresh,
		"user": map[string]any{"id": userID, "aud": "authenticated"},
	})
	set, _ := ssrcookie.Write(name, session, nil, ssrcookie.Options{})
	return set
}

func cookieCaller(name string, cookies []*http.Cookie, extra map[string]string) caller {
	var parts []string
	for _, c := range cookies {
		parts = append(parts, c.Name+"="+c.Value)
	}
	h := map[string]string{"Cookie": strings.Join(parts, "; ")}
	for k, v := range extra {
		h[k] = v
	}
	return caller{name, h}
}

// TestDemoCookieRefresh drives a browser-style session cookie through the
// demo with --refresh: the token expires within the leeway, so the server
// refreshes it against the demo's own refresh grant and writes the new
// session back in the @supabase/ssr format.
func TestDemoCookieRefresh(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	start := time.Now()
	p := startDemo(t, buildCLI(t), "--refresh", "--token-ttl", "45s")
	t.Logf("ready after %s", time.Since(start))
	defer func() { t.Logf("done after %s", time.Since(start)) }()
	v := p.vars
	base := v["BASE_URL"]
	name := v["COOKIE_NAME"]
	cookies := sessionCookies(t, name, v["USER_TOKEN"], v["USER_REFRESH_TOKEN"], v["USER_ID"], 45*time.Second)
	browser := cookieCaller("browser", cookies, nil)

	// The token is still valid, so its request waits at most RefreshWait
	// (250 ms) for the refresh; on a loaded machine the refresh finishes in
	// the background and its session reaches the next request: send the
	// same cookie until a response carries it (at most 10 s).
	var r response
	// sleep: the poll step of the bounded wait for a response carrying the refreshed session
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r = do(t, browser, "GET", base+"/api/todos", nil)
		if r.status != 200 {
			t.Fatalf("list with the session cookie: %d %s", r.status, r.body)
		}
		if len(r.header["Set-Cookie"]) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if cc := r.header.Get("Cache-Control"); !strings.Contains(cc, "no-store") {
		t.Errorf("Cache-Control %q after a refresh", cc)
	}
	resp := &http.Response{Header: r.header}
	var fresh []*http.Cookie
	for _, c := range resp.Cookies() {
		if strings.HasPrefix(c.Name, name) && c.MaxAge >= 0 {
			fresh = append(fresh, c)
		}
	}
	raw, err := ssrcookie.Read(fresh, name)
	if err != nil {
		t.Fatalf("no refreshed session in Set-Cookie %v: %v", r.header["Set-Cookie"], err)
	}
	sess, err := ssrcookie.ParseSession(raw)
	if err != nil {
		t.Fatal(err)
	}
	if sess.RefreshToken == v["USER_REFRESH_TOKEN"] || sess.AccessToken == v["USER_TOKEN"] {
		t.Errorf("session not rotated: %s", raw)
	}
	m := do(t, bearer("refreshed", sess.AccessToken), "GET", base+"/whoami", nil).json(t)
	if m["kind"] != "user" || m["user_id"] != v["USER_ID"] {
		t.Errorf("refreshed access token: %v", m)
	}
	// The refreshed cookie resolves as the same user.
	m = do(t, cookieCaller("browser", fresh, nil), "GET", base+"/whoami", nil).json(t)
	if m["kind"] != "user" || m["user_id"] != v["USER_ID"] {
		t.Errorf("refreshed cookie: %v", m)
	}
	// A cross-site write relying on the cookie is refused.
	cross := cookieCaller("cross-site", fresh, map[string]string{"Sec-Fetch-Site": "cross-site"})
	wantProblem(t, "cross-site POST with the cookie", do(t, cross, "POST", base+"/api/todos", map[string]any{"title": "csrf"}), 403, "CROSS_SITE_REQUEST")
	p.stop(t)
}

// headerTransport adds fixed headers to every request.
type headerTransport map[string]string

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDemoPortInUseCleansUp: a failure after Postgres started (the port is
// taken) still stops the cluster and removes its files, and says what to do.
func TestDemoPortInUseCleansUp(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Postgres cluster")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := runCLI(t, nil, "demo", "--addr", ln.Addr().String())
	if r.code != exitFailure || !strings.Contains(r.stderr, "try --addr 127.0.0.1:0") {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	_, after, ok := strings.Cut(r.stderr, "data and socket in ")
	if !ok {
		t.Fatalf("no cluster directory in the progress:\n%s", r.stderr)
	}
	dir := strings.TrimSpace(strings.SplitN(after, "\n", 2)[0])
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s survived the failure (%v)", dir, err)
	}
	if postgresRunningIn(dir) {
		t.Errorf("postgres still runs for %s", dir)
	}
}
