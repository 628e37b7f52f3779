package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the subprocess's writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// demoProc is a running "tablegate demo" subprocess and its printed env.
type demoProc struct {
	cmd      *exec.Cmd
	vars     map[string]string
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
	p := &demoProc{cmd: cmd, out: &syncBuffer{}, err: &syncBuffer{}, exited: make(chan error, 1)}
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
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			t.Fatalf("env file line without '=': %q", sc.Text())
		}
		vars[k] = v
	}
	for _, k := range []string{"BASE_URL", "JWKS_URL", "SIGNING_KEYS_PATH", "DATABASE_URL", "COOKIE_NAME", "TENANT_A", "TENANT_B",
		"USER_ID", "USER_TOKEN", "ADMIN_TOKEN", "APPROVER_TOKEN", "ANON_USER_TOKEN", "OTHER_TENANT_TOKEN", "SERVICE_KEY"} {
		if vars[k] == "" {
			t.Fatalf("env file lacks %s:\n%s", k, data)
		}
	}
	return vars
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
		m = do(t, tampered, "GET", base+"/whoami", nil).json(t)
		if m["kind"] != "invalid" || m["reason"] != "token" || m["claims"] != nil {
			t.Errorf("tampered: %v", m)
		}
		m = do(t, service, "GET", base+"/whoami", nil).json(t)
		if m["kind"] != "service" {
			t.Errorf("service: %v", m)
		}
		m = do(t, caller{"wrong key", map[string]string{"apikey": "sb_secret_wrong"}}, "GET", base+"/whoami", nil).json(t)
		if m["kind"] == "service" {
			t.Errorf("a wrong secret key resolved as service: %v", m)
		}
	})

	// The guard matrix of the seed's section 5.3.
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
					w = want{401, "TOKEN_INVALID"}
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
		if allow := r.header.Get("Allow"); !strings.Contains(allow, "GET") {
			t.Errorf("Allow %q", allow)
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
