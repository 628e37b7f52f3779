package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// freeAddr returns a loopback address with a port that was free a moment
// ago, for a server the test starts itself. The port is taken below the
// kernel's ephemeral range (ip_local_port_range), so that neither another
// listener on port 0 nor an outgoing connection can take it before that
// server listens, and it is never handed out twice in one test process.
// Where the ephemeral range leaves no room below it, port 0 decides.
func freeAddr(t *testing.T) string {
	t.Helper()
	lo, hi := 20000, ephemeralPortsStart()
	for range 200 {
		if hi-lo < 1000 {
			break
		}
		port := lo + rand.IntN(hi-lo)
		freePortsMu.Lock()
		taken := freePortsGiven[port]
		freePortsGiven[port] = true
		freePortsMu.Unlock()
		if taken {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if ln, err := net.Listen("tcp", addr); err == nil {
			_ = ln.Close()
			return addr
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

var (
	freePortsMu    sync.Mutex
	freePortsGiven = map[int]bool{}
)

// ephemeralPortsStart returns the first port of the kernel's ephemeral
// range (Linux; 32768 elsewhere, the common default).
func ephemeralPortsStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 32768
	}
	return n
}

func TestServeConfig(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.json")
	if r := runCLI(t, nil, "keys", "new", "--path", keys); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ks, _ := loadKeyFile(keys)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.PublicJWKS()) }))
	defer jwks.Close()
	cfg := map[string]any{
		"base_path":   "/v1",
		"mcp":         true,
		"auth":        map[string]any{"jwks_url": jwks.URL},
		"permissions": map[string]any{"todos.delete": []string{"admin"}},
		"tables": map[string]any{
			"todos": map[string]any{
				"table":       "public.todos",
				"operations":  []string{"list", "get", "delete"},
				"select":      []string{"id", "title", "done"},
				"permissions": map[string]string{"delete": "todos.delete"},
				"guard":       []string{"user", "anonymous"},
			},
		},
	}
	cfgPath := filepath.Join(dir, "tablegate.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	sctx, cancel := context.WithCancel(ctx)
	codec := make(chan result, 1)
	go func() {
		var out, errb syncBuffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }}
		code := run(sctx, e, []string{"serve", "--config", cfgPath, "--addr", addr})
		codec <- result{code, out.String(), errb.String()}
	}()
	base := "http://" + addr
	waitLive(t, base, cancel, codec)
	mint := func(sub string, roles ...string) caller {
		tok, err := mintToken(ks, tokenSpec{Sub: sub, Tenant: demoTenantA, Roles: roles}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return bearer(sub, tok)
	}
	user := mint(demoUserID)
	admin := mint(demoAdminID, "admin")

	if r := do(t, caller{}, "GET", base+"/readyz", nil); r.status != 200 {
		t.Errorf("readyz %d", r.status)
	}
	r := do(t, user, "GET", base+"/v1/todos", nil)
	if r.status != 200 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	var page struct{ Items []map[string]any }
	_ = json.Unmarshal(r.body, &page)
	if len(page.Items) != 3 {
		t.Errorf("list: %d items, want tenant A's 3", len(page.Items))
	}
	for _, it := range page.Items {
		if len(it) != 3 || it["owner_id"] != nil {
			t.Errorf("select not applied: %v", it)
		}
	}
	wantProblem(t, "no session", do(t, caller{}, "GET", base+"/v1/todos", nil), 401, "AUTH_REQUIRED")
	wantProblem(t, "create not served", do(t, user, "POST", base+"/v1/todos", map[string]any{"title": "x"}), 405, "")
	wantProblem(t, "delete without permission", do(t, user, "DELETE", base+"/v1/todos/3", nil), 403, "PERMISSION_DENIED")
	if r := do(t, admin, "DELETE", base+"/v1/todos/3", nil); r.status != 204 {
		t.Errorf("admin deletes own row: %d %s", r.status, r.body)
	}
	wantProblem(t, "unknown table", do(t, user, "GET", base+"/v1/other", nil), 404, "")
	served := do(t, caller{}, "GET", base+"/v1/openapi.json", nil)
	if served.status != 200 {
		t.Fatalf("openapi.json: %d %s", served.status, served.body)
	}
	if r := do(t, caller{}, "GET", base+"/v1/docs", nil); r.status != 200 {
		t.Errorf("docs: %d", r.status)
	}

	// tablegate openapi prints the very document serve publishes.
	cli := runCLI(t, map[string]string{"DATABASE_URL": url}, "openapi", "--config", cfgPath)
	if cli.code != 0 {
		t.Fatalf("openapi: %d %s", cli.code, cli.stderr)
	}
	if cli.stdout != string(served.body) {
		t.Errorf("tablegate openapi differs from the served document:\n%s\n---\n%s", cli.stdout, served.body)
	}
	var doc struct {
		Paths       map[string]map[string]map[string]any `json:"paths"`
		Permissions map[string]any                       `json:"x-service-permissions"`
	}
	if err := json.Unmarshal([]byte(cli.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Paths["/todos/{id}"]["delete"]["x-service-permission"] != "todos.delete" {
		t.Errorf("delete permission missing: %v", doc.Paths["/todos/{id}"])
	}
	if _, ok := doc.Paths["/todos"]["post"]; ok {
		t.Error("create is not served but documented")
	}
	if !strings.Contains(fmt.Sprint(doc.Permissions), "admin") {
		t.Errorf("x-service-permissions: %v", doc.Permissions)
	}
	cli = runCLI(t, map[string]string{"DATABASE_URL": url}, "openapi", "--config", cfgPath, "--format", "yaml")
	if cli.code != 0 || !strings.HasPrefix(cli.stdout, "openapi: ") {
		t.Errorf("yaml: %d %.100s %s", cli.code, cli.stdout, cli.stderr)
	}
	if r := runCLI(t, nil, "openapi", "--config", cfgPath); r.code != exitUsage {
		t.Errorf("openapi without database: %d", r.code)
	}

	// The same table as MCP tools, under the same guard.
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: headerTransport{"Authorization": user.header["Authorization"]}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "v0"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatalf("mcp connect: %v", err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if strings.Join(names, ",") != "deleteTodo,getTodo,listTodos" {
		t.Errorf("tools %v, want the served operations only", names)
	}
	_ = cs.Close()
	if r := do(t, caller{}, "POST", base+"/mcp", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize"}); r.status != 401 {
		t.Errorf("mcp without a session: %d %s", r.status, r.body)
	} else {
		checkMCPDiscovery(t, r.header.Get("WWW-Authenticate"), base, "")
	}

	cancel()
	select {
	case res := <-codec:
		if res.code != 0 {
			t.Fatalf("serve exit %d: %s", res.code, res.stderr)
		}
		if !strings.Contains(res.stderr, "shutting down") || !strings.Contains(res.stderr, "/v1/todos → public.todos") {
			t.Errorf("serve output:\n%s", res.stderr)
		}
		// The access log names each route by its pattern, below the
		// resolution middleware too; an unknown path stays "other".
		for _, route := range []string{`"route":"/mcp","status":401`, `"route":"/readyz"`, `"route":"/v1/todos/{id}"`,
			`"route":"/v1/openapi.json"`, `"route":"other","status":404`} {
			if !strings.Contains(res.stderr, route) {
				t.Errorf("access log lacks %s:\n%s", route, res.stderr)
			}
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
}

func TestServeConfigErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, []byte(body), 0o600)
		return p
	}
	cases := map[string]struct {
		body string
		code int
		msg  string
	}{
		"typo":          {`{"tables":{"t":{"tabel":"x"}}}`, exitFailure, `line 1, column 17: unknown key "tabel" in tables.t (did you mean "table"?)`},
		"no tables":     {`{}`, exitFailure, "no tables"},
		"bad operation": {`{"tables":{"t":{"operations":["erase"]}}}`, exitFailure, `unknown operation "erase"`},
		"bad guard":     {`{"tables":{"t":{"guard":["admins"]}}}`, exitFailure, `unknown caller kind "admins"`},
		"bad table":     {`{"tables":{"t":{"table":"x; drop table y"}}}`, exitFailure, "is not a [schema.]table name"},
		"perm not op":   {`{"tables":{"t":{"operations":["list"],"permissions":{"delete":"k"}}}}`, exitFailure, "not a served operation"},
		"livez at root": {`{"base_path":"/","tables":{"livez":{}}}`, exitFailure, "tables.livez at the root meets serve's own /livez"},
		"mcp at root":   {`{"base_path":"/","mcp":true,"tables":{"mcp":{}}}`, exitFailure, "tables.mcp at the root"},
		"dot base path": {`{"base_path":"/v1/../api","tables":{"t":{}}}`, exitFailure, "hold plain path segments"},
		"two objects":   {`{"tables":{"t":{"operations":["list"]}}}{"tables":{"t":{}},"bogus":1}`, exitFailure, "after the first JSON value"},
		"trailing text": {`{"tables":{"t":{}}} garbage`, exitFailure, "after the first JSON value"},
	}
	for name, c := range cases {
		r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/x"}, "serve", "--config", write(name+".json", c.body))
		if r.code != c.code || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q (want %q)", name, r.code, r.stderr, c.msg)
		}
	}
	if r := runCLI(t, nil, "serve"); r.code != exitUsage || !strings.Contains(r.stderr, "--config is required") {
		t.Errorf("no config: %d %s", r.code, r.stderr)
	}
	ok := write("ok.json", `{"tables":{"todos":{}}}`)
	if r := runCLI(t, nil, "serve", "--config", ok); r.code != exitUsage || !strings.Contains(r.stderr, "DATABASE_URL") {
		t.Errorf("no database: %d %s", r.code, r.stderr)
	}
}

// TestServeMCPStdio runs "tablegate serve --mcp-stdio" as an MCP client
// would launch it, with the caller's token in the environment.
func TestServeMCPStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the CLI")
	}
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	ctx := context.Background()
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	ks := testKeySet(t, algES256)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.PublicJWKS()) }))
	defer jwks.Close()
	cfgPath := filepath.Join(t.TempDir(), "tablegate.json")
	cfg := `{"auth":{"jwks_url":"` + jwks.URL + `"},"tables":{"todos":{"operations":["list","get"],"guard":["user","anonymous"]}}}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildCLI(t)
	launch := func(tokenEnv string) (*mcp.ClientSession, *syncBuffer, error) {
		cmd := exec.Command(bin, "serve", "--config", cfgPath, "--mcp-stdio")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, tokenEnv)
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "v0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		return cs, stderr, err
	}
	tok, err := mintToken(ks, tokenSpec{Sub: demoOtherUserID, Tenant: demoTenantB}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cs, stderr, err := launch("TABLEGATE_ACCESS_TOKEN=" + tok)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "listTodos", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("listTodos: %v %+v\n%s", err, res, stderr.String())
	}
	b, _ := json.Marshal(res.StructuredContent)
	var page struct{ Items []map[string]any }
	if json.Unmarshal(b, &page) != nil || len(page.Items) != 2 {
		t.Errorf("tenant B's two rows expected: %s", b)
	}
	for _, it := range page.Items {
		if it["tenant_id"] != demoTenantB {
			t.Errorf("row of another tenant: %v", it)
		}
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if !strings.Contains(stderr.String(), "as MCP tools on stdin/stdout (caller: user)") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	// Without a credential the guard refuses to serve at all.
	if cs, stderr, err := launch("TABLEGATE_ACCESS_TOKEN="); err == nil {
		_ = cs.Close()
		t.Errorf("served without a caller\n%s", stderr.String())
	} else if !strings.Contains(stderr.String(), "MCP caller refused") {
		t.Errorf("refusal not explained:\n%s", stderr.String())
	}
}
