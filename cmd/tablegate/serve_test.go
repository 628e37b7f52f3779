package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/internal/pgtest"
)

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
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
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.publicJWKS()) }))
	defer jwks.Close()
	cfg := map[string]any{
		"base_path":   "/v1",
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(base + "/livez")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not start: %v", <-codec)
		}
		time.Sleep(20 * time.Millisecond)
	}
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

	cancel()
	select {
	case res := <-codec:
		if res.code != 0 {
			t.Fatalf("serve exit %d: %s", res.code, res.stderr)
		}
		if !strings.Contains(res.stderr, "shutting down") || !strings.Contains(res.stderr, "/v1/todos → public.todos") {
			t.Errorf("serve output:\n%s", res.stderr)
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
		"typo":          {`{"tables":{"t":{"tabel":"x"}}}`, exitFailure, `unknown field "tabel"`},
		"no tables":     {`{}`, exitFailure, "no tables"},
		"bad operation": {`{"tables":{"t":{"operations":["erase"]}}}`, exitFailure, `unknown operation "erase"`},
		"bad guard":     {`{"tables":{"t":{"guard":["admins"]}}}`, exitFailure, `unknown caller kind "admins"`},
		"bad table":     {`{"tables":{"t":{"table":"x; drop table y"}}}`, exitFailure, "is not a [schema.]table name"},
		"perm not op":   {`{"tables":{"t":{"operations":["list"],"permissions":{"delete":"k"}}}}`, exitFailure, "not a served operation"},
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
