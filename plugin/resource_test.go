package plugin_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/plugin"
	"github.com/tablegate/tablegate/rest"
)

const (
	userB1 = "b1b1b1b1-0000-4000-8000-0000000000b1"
)

// httpCaller reads the caller from X-Test-Caller; claimPath is where users
// carry their tenant.
func httpCaller(claimPath string) func(*http.Request) (authctx.Auth, error) {
	withTenant := func(sub, tenant string, anonymous bool) authctx.Auth {
		c := authctx.Claims{"sub": sub, "role": "authenticated", "is_anonymous": anonymous}
		if tenant != "" {
			if strings.HasPrefix(claimPath, "app_metadata.") {
				c["app_metadata"] = map[string]any{strings.TrimPrefix(claimPath, "app_metadata."): tenant}
			} else {
				c[claimPath] = tenant
			}
		}
		return authctx.NewUser(c, "tok", nil)
	}
	return func(r *http.Request) (authctx.Auth, error) {
		switch r.Header.Get("X-Test-Caller") {
		case "full":
			return withTenant(userA1, tenantA, false), nil
		case "other":
			return withTenant(userB1, tenantB, false), nil
		case "guest":
			return withTenant(guestA, tenantA, true), nil
		case "notenant":
			return withTenant(userA1, "", false), nil
		case "service":
			return authctx.Service("svc"), nil
		}
		return authctx.Anon(authctx.ReasonNone), nil
	}
}

type response struct {
	status int
	body   map[string]any
	raw    string
}

func call(t *testing.T, srv *httptest.Server, method, path, who, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Test-Caller", who)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := response{status: res.StatusCode, raw: string(b)}
	_ = json.Unmarshal(b, &out.body)
	return out
}

const todosSQL = `
create table public.todos (
  id         bigint generated always as identity primary key,
  tenant_id  uuid not null,
  title      text not null,
  created_by text,
  updated_by text
);
grant select, insert, update, delete on public.todos to authenticated, service_role;
select tablegate.enable_tenant_policies('public.todos');
`

// TestPluginsThroughREST serves a tenant table through package rest with
// both plugins, on real Postgres with the tenant policies, over HTTP, under
// the default and a renamed tenant claim.
func TestPluginsThroughREST(t *testing.T) {
	t.Parallel()
	for _, claim := range []string{"", "app_metadata.org_id"} {
		name := claim
		if name == "" {
			name = "default claim"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			pool := pgtest.DB(t)
			adminExec(t, pool, todosSQL)
			if err := plugin.SyncTenantClaim(t.Context(), pool, claim); err != nil {
				t.Fatal(err)
			}
			path := claim
			if path == "" {
				path = "tenant_id"
			}
			tenant, err := plugin.NewTenant(&plugin.TenantConfig{Claim: claim})
			if err != nil {
				t.Fatal(err)
			}
			var hookSaw any
			opts := &rest.Config{
				Caller: httpCaller(path),
				Hooks: rest.Hooks{BeforeCreateFunc: func(c *rest.Ctx, data rest.Row) (rest.Row, error) {
					hookSaw = data["tenant_id"]
					if data["title"] == "move me" {
						data["tenant_id"] = tenantB // an application hook cannot move the row
					}
					if data["title"] == "forge" {
						data["created_by"] = "forged" // nor forge the actor
					}
					return data, nil
				}},
			}
			res, err := plugin.NewResource(t.Context(), db.New(pool, nil), "todos", opts, tenant, plugin.NewActor(nil))
			if err != nil {
				t.Fatal(err)
			}
			if opts.ReadOnly != nil || opts.Hooks.BeforeUpdateFunc != nil {
				t.Fatal("plugin.NewResource modified the options it was given")
			}
			srv := httptest.NewServer(res)
			t.Cleanup(srv.Close)

			created := call(t, srv, "POST", "/", "full", `{"title":"a"}`)
			if created.status != 201 || created.body["tenant_id"] != tenantA || created.body["created_by"] != userA1 || created.body["updated_by"] != userA1 {
				t.Fatalf("create: %d %s", created.status, created.raw)
			}
			if hookSaw != tenantA {
				t.Fatalf("application hook saw tenant %v, want the filled one", hookSaw)
			}
			id := "/" + string(mustJSON(t, created.body["id"]))

			for _, tc := range []struct {
				name, method, path, who, body string
				status                        int
				code                          string
			}{
				{"create naming own tenant", "POST", "/", "full", `{"title":"b","tenant_id":"` + strings.ToUpper(tenantA) + `"}`, 201, ""},
				{"create naming another tenant", "POST", "/", "full", `{"title":"b","tenant_id":"` + tenantB + `"}`, 403, "TENANT_MISMATCH"},
				{"create with a forged actor", "POST", "/", "full", `{"title":"b","created_by":"x"}`, 400, ""},
				{"application hook moving the row", "POST", "/", "full", `{"title":"move me"}`, 403, "TENANT_MISMATCH"},
				{"anonymous sign-in creates (policy refuses)", "POST", "/", "guest", `{"title":"g"}`, 403, ""},
				{"user without tenant", "POST", "/", "notenant", `{"title":"n"}`, 403, "TENANT_REQUIRED"},
				{"no session", "POST", "/", "anon", `{"title":"n"}`, 403, "TENANT_REQUIRED"},
				{"service names the tenant", "POST", "/", "service", `{"title":"s","tenant_id":"` + tenantB + `"}`, 201, ""},
				{"update own row", "PATCH", id, "full", `{"title":"a2"}`, 200, ""},
				{"update moving to another tenant", "PATCH", id, "full", `{"tenant_id":"` + tenantB + `"}`, 403, "TENANT_MISMATCH"},
				{"update forging the actor", "PATCH", id, "full", `{"updated_by":"x"}`, 400, ""},
				{"update with an empty body", "PATCH", id, "full", `{}`, 400, ""},
				{"other tenant updates (hidden)", "PATCH", id, "other", `{"title":"x"}`, 404, ""},
				{"other tenant reads (hidden)", "GET", id, "other", "", 404, ""},
			} {
				got := call(t, srv, tc.method, tc.path, tc.who, tc.body)
				if got.status != tc.status || (tc.code != "" && got.body["code"] != tc.code) {
					t.Errorf("%s: %d %s, want %d %s", tc.name, got.status, got.raw, tc.status, tc.code)
				}
				if strings.Contains(got.raw, tenantB) && got.status >= 400 {
					t.Errorf("%s: error body echoes a tenant id: %s", tc.name, got.raw)
				}
			}
			if got := call(t, srv, "POST", "/", "full", `{"title":"forge"}`); got.status != 201 || got.body["created_by"] != userA1 {
				t.Errorf("hook forging created_by: %d %s", got.status, got.raw)
			}
			got := call(t, srv, "GET", id, "full", "")
			if got.status != 200 || got.body["title"] != "a2" || got.body["updated_by"] != userA1 || got.body["tenant_id"] != tenantA {
				t.Errorf("row after update: %s", got.raw)
			}
			var svcRow string
			if err := pool.QueryRow(t.Context(), `select created_by || ' ' || tenant_id from public.todos where title = 's'`).Scan(&svcRow); err != nil || svcRow != "svc "+tenantB {
				t.Errorf("service row: %q %v", svcRow, err)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestNewResourceRefuses: the resource is not built when a plugin names a
// column the table lacks, or a plugin is nil.
func TestNewResourceRefuses(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	adminExec(t, pool, `create table public.plain (id int primary key, title text); alter table public.plain enable row level security`)
	d := db.New(pool, nil)
	tenant, _ := plugin.NewTenant(nil)
	if _, err := plugin.NewResource(t.Context(), d, "plain", nil, tenant); !errors.Is(err, rest.ErrBuild) || !strings.Contains(err.Error(), `"tenant_id"`) {
		t.Errorf("missing tenant column: %v", err)
	}
	if _, err := plugin.NewResource(t.Context(), d, "plain", nil, plugin.NewActor(nil)); !errors.Is(err, rest.ErrBuild) {
		t.Errorf("missing actor columns: %v", err)
	}
	var nilTenant *plugin.Tenant
	if _, err := plugin.NewResource(t.Context(), d, "plain", nil, nilTenant); !errors.Is(err, plugin.ErrNilPlugin) || !errors.Is(err, rest.ErrBuild) {
		t.Errorf("nil plugin: %v", err)
	}
	if _, err := plugin.With(nil, nil); !errors.Is(err, plugin.ErrNilPlugin) {
		t.Errorf("With(nil plugin): %v", err)
	}
	if _, err := plugin.With(nil, &plugin.Tenant{}); !errors.Is(err, plugin.ErrNilPlugin) {
		t.Errorf("With(zero Tenant): %v", err)
	}
	if _, err := plugin.With(nil, &plugin.Actor{}); !errors.Is(err, plugin.ErrNilPlugin) {
		t.Errorf("With(zero Actor): %v", err)
	}
	o, err := plugin.With(nil)
	if err != nil || o == nil || o.Hooks.BeforeCreateFunc != nil {
		t.Errorf("With without plugins: %v %v", o, err)
	}
}
