// Package events_test drives live event streams (package events) with the
// real eventsource npm package and with EventSource in headless Chromium.
package events_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authctx/ssrcookie"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/integration/internal/itest"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/keys"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

func TestMain(m *testing.M) { itest.Main(m) }

// Callers of the fixture: alice and bob, members of tenant A.
const (
	tenantA = "a0000000-0000-4000-8000-00000000000a"
	alice   = "11111111-1111-4111-8111-111111111111"
	bob     = "22222222-2222-4222-8222-222222222222"
)

// schemaSQL is a table of todos a member of a tenant reads and writes in
// it, with its events enabled.
const schemaSQL = `
insert into tablegate.tenants (id, name) values ('` + tenantA + `', 'A');
insert into tablegate.memberships (user_id, scope, scope_id, roles) values
  ('` + alice + `', 'tenant', '` + tenantA + `', '{member}'),
  ('` + bob + `', 'tenant', '` + tenantA + `', '{member}');
create table public.todos (
  id bigint generated always as identity primary key,
  tenant_id uuid not null default tablegate.current_tenant_id() references tablegate.tenants (id),
  owner_id uuid not null default auth.uid(),
  title text not null,
  done boolean not null default false
);
alter table public.todos enable row level security;
alter table public.todos force row level security;
create policy todos_read on public.todos for select to authenticated
  using (tenant_id = tablegate.current_tenant_id() and tablegate.is_member('tenant', tenant_id::text));
create policy todos_insert on public.todos for insert to authenticated
  with check (tenant_id = tablegate.current_tenant_id()
              and tablegate.is_member('tenant', tenant_id::text) and owner_id = (select auth.uid()));
grant select, insert on public.todos to authenticated;
select tablegate.enable_events('todos');
`

// project is the Supabase project the resolver serves; the auth server
// (internal/authstub, not served) signs its callers' tokens.
const project = "https://abcdefghijklmnopqrst.supabase.co"

// bundle is a test setup: the todos resource and its event stream behind
// a resolver, served over HTTP.
type bundle struct {
	t      *testing.T
	auth   *authstub.Server
	hub    *events.Hub
	srv    *httptest.Server
	cookie string // the session cookie's name
}

// setup serves the todos of a new database; hc, when not nil, configures
// the hub (its DB is set here).
func setup(t *testing.T, hc *events.Config) *bundle {
	t.Helper()
	pool := pgtest.Pool(t, pgtest.URL(t))
	if _, err := pool.Exec(t.Context(), schemaSQL); err != nil {
		t.Fatal(err)
	}
	d := db.New(pool, nil)
	auth, err := authstub.New(authstub.Config{Issuer: project + "/auth/v1"})
	if err != nil {
		t.Fatal(err)
	}
	rv, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: project, VerifierConfig: authctx.VerifierConfig{JWKS: auth.JWKS()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	res, err := rest.NewResource(t.Context(), d, "todos", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := events.Config{PollInterval: 200 * time.Millisecond, Heartbeat: time.Second}
	if hc != nil {
		cfg = *hc
	}
	cfg.DB = d
	hub, err := events.New(t.Context(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hub.Close)
	stream, err := hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: rv})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", res))
	mux.Handle("GET /api/todos/events", stream)
	b := &bundle{t: t, auth: auth, hub: hub, srv: httptest.NewServer(rv.Middleware(rv.CrossSite(mux)))}
	t.Cleanup(b.srv.Close)
	b.cookie, _ = authctx.CookieNameFor(project)
	return b
}

// token signs an access token for sub, a member of tenant A.
func (b *bundle) token(sub string) string {
	b.t.Helper()
	tok, _, err := b.auth.SignIn(keys.TokenSpec{Sub: sub, Tenant: tenantA})
	if err != nil {
		b.t.Fatal(err)
	}
	return tok
}

// sessionCookie is the @supabase/ssr cookie carrying tok, as name=value.
func (b *bundle) sessionCookie(tok string) string {
	sess, _ := json.Marshal(map[string]any{"access_token": tok, "refresh_token": "r",
		"expires_at": time.Now().Add(time.Hour).Unix()})
	return b.cookie + "=" + ssrcookie.Encode(sess)
}

// call sends a REST request with a Bearer token and returns status and body.
func (b *bundle) call(method, path, tok, body string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequestWithContext(b.t.Context(), method, b.srv.URL+path, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(rb)
}
