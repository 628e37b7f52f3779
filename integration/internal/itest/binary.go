package itest

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/internal/syncbuf"
)

// RepoRoot returns the absolute path of the checkout holding this module.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Build compiles ./cmd/tablegate of this checkout into the test's
// temporary directory, as a user would (go build -o), and returns the
// binary's path.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tablegate")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/tablegate")
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/tablegate: %v\n%s", err, out)
	}
	return bin
}

// Proc is a running tablegate subprocess.
type Proc struct {
	cmd    *exec.Cmd
	exited chan error
	// Stdout and Stderr collect what the process wrote.
	Stdout, Stderr *syncbuf.Buffer
}

// start runs bin with args and env (KEY=VALUE pairs appended to a copy of
// the test's environment without DATABASE_URL) and stops it with SIGTERM
// when the test ends.
func start(t testing.TB, env map[string]string, args ...string) *Proc {
	t.Helper()
	cmd := exec.Command(Build(t), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DATABASE_URL=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &Proc{cmd: cmd, exited: make(chan error, 1), Stdout: &syncbuf.Buffer{}, Stderr: &syncbuf.Buffer{}}
	cmd.Stdout, cmd.Stderr = p.Stdout, p.Stderr
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
	return p
}

// waitFor polls cond every 20 ms until it holds, the process exits or
// timeout passes; the last two fail t with the process's stderr.
func (p *Proc) waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		select {
		case err := <-p.exited:
			t.Fatalf("tablegate %s exited before %s: %v\nstderr:\n%s", p.cmd.Args[1], what, err, p.Stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("tablegate %s: no %s after %s\nstderr:\n%s", p.cmd.Args[1], what, timeout, p.Stderr.String())
		}
	}
}

// Stop sends SIGTERM and fails t unless the process exits cleanly within
// 30 s.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("tablegate %s exit: %v\nstderr:\n%s", p.cmd.Args[1], err, p.Stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("tablegate %s did not exit 30 s after SIGTERM\nstderr:\n%s", p.cmd.Args[1], p.Stderr.String())
	}
}

// Demo is a running "tablegate demo" and the variables of its --print-env
// file.
type Demo struct {
	*Proc
	Vars map[string]string
}

// StartDemo runs "tablegate demo" on a free port with a throwaway cluster
// (DATABASE_URL removed from its environment) plus extra flags, and waits
// for its --print-env file.
func StartDemo(t testing.TB, extra ...string) *Demo {
	t.Helper()
	envFile := filepath.Join(t.TempDir(), "demo.env")
	p := start(t, nil, append([]string{"demo", "--addr", "127.0.0.1:0", "--print-env", envFile}, extra...)...)
	var data []byte
	p.waitFor(t, "--print-env file", 90*time.Second, func() bool {
		var err error
		data, err = os.ReadFile(envFile)
		return err == nil
	})
	d := &Demo{Proc: p, Vars: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			t.Fatalf("env file line without '=': %q", sc.Text())
		}
		d.Vars[k] = unquoteShell(v)
	}
	for _, k := range []string{"BASE_URL", "USER_TOKEN", "USER_ID", "COOKIE_NAME"} {
		if d.Vars[k] == "" {
			t.Fatalf("the demo's env file lacks %s:\n%s", k, data)
		}
	}
	return d
}

// unquoteShell undoes the env file's quoting: a bare value, or one in
// single quotes where each single quote is written '\”.
func unquoteShell(v string) string {
	if !strings.HasPrefix(v, "'") || !strings.HasSuffix(v, "'") {
		return v
	}
	return strings.ReplaceAll(v[1:len(v)-1], `'\''`, "'")
}

var servingLine = regexp.MustCompile(`✓ serving \d+ table\(s\) on (http://[^/ ]+)`)

// Serve runs "tablegate serve" with env and args plus --addr 127.0.0.1:0,
// waits for its "✓ serving" line and returns the process and its base URL
// (scheme and host, no path).
func Serve(t testing.TB, env map[string]string, args ...string) (*Proc, string) {
	t.Helper()
	p := start(t, env, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	var base string
	p.waitFor(t, `"✓ serving" line`, 45*time.Second, func() bool {
		m := servingLine.FindStringSubmatch(p.Stderr.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	})
	return p, base
}

// Issuer is the iss of the tokens Keys signs: the Supabase CLI's local
// auth server, which serve expects when no project URL is configured.
const Issuer = "http://127.0.0.1:54321/auth/v1"

// Keys is an ES256 signing key whose JWKS a test server publishes, for a
// serve configuration's "auth": {"jwks_url": ...}.
type Keys struct {
	key *ecdsa.PrivateKey
	// JWKSURL serves the public key set.
	JWKSURL string
}

// NewKeys generates a key and serves its JWKS until the test ends.
func NewKeys(t testing.TB) *Keys {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": "itest-1",
		"x": base64.RawURLEncoding.EncodeToString(key.X.FillBytes(make([]byte, 32))),
		"y": base64.RawURLEncoding.EncodeToString(key.Y.FillBytes(make([]byte, 32))),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(set)
	}))
	t.Cleanup(srv.Close)
	return &Keys{key: key, JWKSURL: srv.URL}
}

// Token signs an access token valid for an hour: iss Issuer, aud
// authenticated, role authenticated unless claims say otherwise, and
// claims (sub among them, for a user).
func (k *Keys) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	now := time.Now()
	c := jwt.MapClaims{"iss": Issuer, "aud": "authenticated", "role": "authenticated", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	for key, v := range claims {
		c[key] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = "itest-1"
	s, err := tok.SignedString(k.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// WriteConfig writes cfg as a serve configuration file in a temporary
// directory and returns its path.
func WriteConfig(t testing.TB, cfg map[string]any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "tablegate.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Get sends method to url with an optional Bearer token and JSON body and
// returns the status and body.
func Get(t testing.TB, method, url, token, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
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
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}
