package cli_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/integration/internal/itest"
	"github.com/tablegate/tablegate/integration/internal/nodetest"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// corsSchemaSQL is a todos table every signed-in user may read.
const corsSchemaSQL = `
create table public.todos (
  id bigint generated always as identity primary key,
  title text not null,
  done boolean not null default false
);
alter table public.todos enable row level security;
create policy todos_read on public.todos for select to authenticated using (true);
grant select on public.todos to authenticated;
grant all on public.todos to service_role;
insert into public.todos (title) values ('one'), ('two');
`

// TestServeCORS: with "cors", serve answers preflights for the listed
// origins before authentication, never allows credentials, and headless
// Chromium on an allowed page reads the API with a Bearer token while a
// page of another origin is refused by the browser.
func TestServeCORS(t *testing.T) {
	nodetest.RequireChromium(t)
	nodetest.Require(t)
	t.Parallel()
	dbURL := pgtest.URL(t)
	if _, err := pgtest.Pool(t, dbURL).Exec(context.Background(), corsSchemaSQL); err != nil {
		t.Fatal(err)
	}
	blank := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<!doctype html><title>app</title>"))
	})
	app, other := httptest.NewServer(blank), httptest.NewServer(blank)
	defer app.Close()
	defer other.Close()
	keys := itest.NewKeys(t)
	cfgPath := itest.WriteConfig(t, map[string]any{
		"base_path": "/v1",
		"auth":      map[string]any{"jwks_url": keys.JWKSURL},
		"cors":      map[string]any{"allowed_origins": []string{app.URL + "/"}},
		"tables": map[string]any{"todos": map[string]any{"table": "public.todos", "operations": []string{"list", "get"},
			"select": []string{"id", "title", "done"}, "guard": []string{"user", "service"}}},
	})
	token := keys.Token(t, map[string]any{"sub": "11111111-1111-4111-8111-111111111111"})
	// A Supabase service_role API-key JWT (no sub), and secret keys of both forms.
	serviceJWT := keys.Token(t, map[string]any{"role": "service_role"})
	p, base := itest.Serve(t, map[string]string{"DATABASE_URL": dbURL,
		"SUPABASE_SECRET_KEYS": `{"default":"sb_secret_corstest","legacy":"legacy-service-key"}`}, "--config", cfgPath)
	out := p.Stderr
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
