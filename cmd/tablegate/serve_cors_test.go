package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/tablegate/tablegate/internal/nodetest"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestServeCORS: with "cors", serve answers preflights for the listed
// origins before authentication, never allows credentials, and headless
// Chromium on an allowed page reads the API with a Bearer token while a
// page of another origin is refused by the browser.
func TestServeCORS(t *testing.T) {
	nodetest.RequireChromium(t)
	nodetest.Require(t)
	t.Parallel()
	dbURL := pgtest.URL(t)
	if _, err := pgtest.Pool(t, dbURL).Exec(context.Background(), demoSchemaSQL); err != nil {
		t.Fatal(err)
	}
	blank := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>app</title>"))
	})
	app, other := httptest.NewServer(blank), httptest.NewServer(blank)
	defer app.Close()
	defer other.Close()
	cfgPath, ks := serveFixtureKeys(t, map[string]any{
		"cors": map[string]any{"allowed_origins": []string{app.URL + "/"}},
		"tables": map[string]any{"todos": map[string]any{"table": "public.todos", "operations": []string{"list", "get"},
			"select": []string{"id", "title", "done"}, "guard": []string{"user", "service"}}},
	})
	token, err := mintToken(ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// A Supabase service_role API-key JWT (no sub), and secret keys of both forms.
	k, err := ks.Signer()
	if err != nil {
		t.Fatal(err)
	}
	st := jwt.NewWithClaims(k.Method(), jwt.MapClaims{"iss": defaultIssuer, "aud": "authenticated", "role": "service_role",
		"iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()})
	st.Header["kid"] = k.Kid
	serviceJWT, err := st.SignedString(k.Private)
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	out, cancel, done := launchServeEnv(t, map[string]string{"DATABASE_URL": dbURL,
		"SUPABASE_SECRET_KEYS": `{"default":"sb_secret_corstest","legacy":"legacy-service-key"}`}, "--config", cfgPath, "--addr", addr)
	t.Cleanup(func() { cancel(); <-done })
	base := "http://" + addr
	if !strings.Contains(out.String(), "cross-origin calls (Bearer or apikey, no cookies) from "+app.URL) {
		t.Errorf("serve does not say it allows %s:\n%s", app.URL, out)
	}

	do := func(method, origin string, h map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, base+"/v1/todos", nil)
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// A preflight carries no credentials: answered before the guard.
	pre := do("OPTIONS", app.URL, map[string]string{"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"})
	h := pre.Header
	if pre.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != app.URL || !strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "authorization") ||
		h.Get("Access-Control-Allow-Credentials") != "" || h.Get("Access-Control-Max-Age") != "600" {
		t.Errorf("preflight from %s: %d %v", app.URL, pre.StatusCode, h)
	}
	if pre := do("OPTIONS", other.URL, map[string]string{"Access-Control-Request-Method": "GET"}); pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from an origin not listed: %v", pre.Header)
	}
	// Answers, errors included, carry the origin and the exposed headers.
	for _, c := range []struct {
		name, auth string
		want       int
	}{{"a token", "Bearer " + token, 200}, {"no token", "", 401}} {
		resp := do("GET", app.URL, map[string]string{"Authorization": c.auth})
		if resp.StatusCode != c.want || resp.Header.Get("Access-Control-Allow-Origin") != app.URL ||
			!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "X-Request-Id") || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("GET with %s from %s: %d %v", c.name, app.URL, resp.StatusCode, resp.Header)
		}
	}

	// A service caller — a secret key of either form, a service_role
	// token — on a request from a browser page is refused (readable by the
	// page); the same credentials without an Origin are served.
	for name, h := range map[string]map[string]string{
		"sb_secret_ key": {"apikey": "sb_secret_corstest"}, "key without prefix": {"apikey": "legacy-service-key"},
		"key as Bearer too":  {"apikey": "sb_secret_corstest", "Authorization": "Bearer sb_secret_corstest"},
		"service_role token": {"Authorization": "Bearer " + serviceJWT},
	} {
		if resp := do("GET", app.URL, h); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != app.URL {
			t.Errorf("%s from %s: %d %v", name, app.URL, resp.StatusCode, resp.Header)
		}
		if resp := do("GET", "", h); resp.StatusCode != 200 {
			t.Errorf("%s without an Origin: %d", name, resp.StatusCode)
		}
	}

	var res struct {
		Results []struct {
			Status    int    `json:"status"`
			RequestID string `json:"requestId"`
			Body      string `json:"body"`
			Error     string `json:"error"`
		}
	}
	nodetest.Run(t, 60*time.Second, "browser-cors.mjs", map[string]any{"calls": []map[string]any{
		{"page": app.URL, "url": base + "/v1/todos", "token": token},
		{"page": other.URL, "url": base + "/v1/todos", "token": token},
	}}, &res)
	if len(res.Results) != 2 {
		t.Fatalf("results %+v", res.Results)
	}
	if r := res.Results[0]; r.Status != 200 || r.RequestID == "" || !strings.Contains(r.Body, `"items"`) {
		t.Errorf("fetch from the allowed page: %+v", r)
	}
	if r := res.Results[1]; r.Error == "" || r.Status != 0 {
		t.Errorf("fetch from a page of another origin was not refused: %+v", r)
	}
}

// TestServeCORSConfigErrors: origins that are not origins are refused at
// start.
func TestServeCORSConfigErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ cors, msg string }{
		"empty":         {`{"allowed_origins":[]}`, "cors.allowed_origins is empty"},
		"star and more": {`{"allowed_origins":["*","https://a.example"]}`, `"*" allows every origin`},
		"path":          {`{"allowed_origins":["https://a.example/app"]}`, "cors.allowed_origins[0]"},
		"no scheme":     {`{"allowed_origins":["a.example"]}`, "cors.allowed_origins[0]"},
		"max age":       {`{"allowed_origins":["*"],"max_age":"soon"}`, "not a duration"},
		"max age ms":    {`{"allowed_origins":["*"],"max_age":"500ms"}`, "below 1s"},
	} {
		cfg := filepath.Join(t.TempDir(), "tablegate.json")
		if err := os.WriteFile(cfg, []byte(`{"tables":{"t":{}},"cors":`+c.cors+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runCLI(t, map[string]string{"DATABASE_URL": "postgres://x@127.0.0.1:1/x"}, "serve", "--config", cfg)
		if r.code == 0 || !strings.Contains(r.stderr, c.msg) {
			t.Errorf("%s: exit %d, stderr %q (want %q)", name, r.code, r.stderr, c.msg)
		}
	}
}
