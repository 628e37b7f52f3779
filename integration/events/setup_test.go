// Package events_test drives live event streams (package events) with the
// real eventsource npm package and with EventSource in headless Chromium.
package events_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/integration/internal/itest"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

func TestMain(m *testing.M) { itest.Main(m) }

// Callers of the fixture: alice and bob in tenant A, carol in tenant B,
// guest an anonymous sign-in member of tenant A.
const (
	tenantA = "a0000000-0000-4000-8000-00000000000a"
	tenantB = "b0000000-0000-4000-8000-00000000000b"
	alice   = "11111111-1111-4111-8111-111111111111"
	bob     = "22222222-2222-4222-8222-222222222222"
	carol   = "55555555-5555-4555-8555-555555555555"
	guest   = "44444444-4444-4444-8444-444444444444"
)

// schemaSQL is the demo's tenant + membership policy set.
const schemaSQL = `
insert into tablegate.tenants (id, name) values ('` + tenantA + `', 'A'), ('` + tenantB + `', 'B');
insert into tablegate.memberships (user_id, scope, scope_id, roles) values
  ('` + alice + `', 'tenant', '` + tenantA + `', '{member}'),
  ('` + bob + `', 'tenant', '` + tenantA + `', '{member}'),
  ('` + guest + `', 'tenant', '` + tenantA + `', '{guest}'),
  ('` + carol + `', 'tenant', '` + tenantB + `', '{member}');
create table public.todos (
  id bigint generated always as identity primary key,
  tenant_id uuid not null default tablegate.current_tenant_id() references tablegate.tenants (id),
  owner_id uuid not null default auth.uid(),
  title text not null,
  done boolean not null default false,
  secret text not null default 'hidden'
);
alter table public.todos enable row level security;
alter table public.todos force row level security;
create policy todos_read on public.todos for select to authenticated
  using (tenant_id = tablegate.current_tenant_id() and tablegate.is_member('tenant', tenant_id::text));
create policy todos_insert on public.todos for insert to authenticated
  with check (not tablegate.is_anonymous() and tenant_id = tablegate.current_tenant_id()
              and tablegate.is_member('tenant', tenant_id::text) and owner_id = (select auth.uid()));
create policy todos_update on public.todos for update to authenticated
  using (tenant_id = tablegate.current_tenant_id() and tablegate.is_member('tenant', tenant_id::text))
  with check (tenant_id = tablegate.current_tenant_id());
create policy todos_delete on public.todos for delete to authenticated
  using (tenant_id = tablegate.current_tenant_id() and owner_id = (select auth.uid()));
grant select on public.todos to anon;
grant select, insert, update, delete on public.todos to authenticated;
grant all on public.todos to service_role;
select tablegate.enable_events('todos');
`

type bundle struct {
	t      *testing.T
	url    string
	pool   *pgxpool.Pool
	db     *db.DB
	key    *ecdsa.PrivateKey
	rv     *authctx.Resolver
	hub    *events.Hub
	res    *rest.Resource
	stream *events.Stream
	srv    *httptest.Server
	cookie string // cookie name
}

const project = "https://abcdefghijklmnopqrst.supabase.co"

type fixtureOpts struct {
	url   string // reuse a database (second instance)
	allow []authctx.Allow
	hub   *events.Config
	key   *ecdsa.PrivateKey // signing key (another instance of the same project)
	conns int32             // the pool's MaxConns (default pgtest's)
	db    *db.Config
}

func setup(t *testing.T, fo *fixtureOpts) *bundle {
	t.Helper()
	if fo == nil {
		fo = &fixtureOpts{}
	}
	b := &bundle{t: t, url: fo.url}
	if b.url == "" {
		b.url = pgtest.URL(t)
	}
	if fo.conns > 0 {
		cfg, err := pgxpool.ParseConfig(b.url)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = fo.conns
		if b.pool, err = pgxpool.NewWithConfig(t.Context(), cfg); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.pool.Close)
	} else {
		b.pool = pgtest.Pool(t, b.url)
	}
	if fo.url == "" {
		if _, err := b.pool.Exec(t.Context(), schemaSQL); err != nil {
			t.Fatal(err)
		}
	}
	b.db = db.New(b.pool, fo.db)
	var err error
	b.key = fo.key
	if b.key == nil {
		if b.key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			t.Fatal(err)
		}
	}
	b.rv = newResolver(t, &b.key.PublicKey)
	b.res, err = rest.NewResource(t.Context(), b.db, "todos", &rest.Config{
		Select: []string{"id", "tenant_id", "owner_id", "title", "done"},
		Hooks: rest.Hooks{AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
			if row["title"] == "fail" {
				return nil, problem.New(problem.KindUnprocessable, "refused by a hook")
			}
			return row, nil
		}},
		Actions: map[string]*rest.Action{
			"complete": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.Row]{
				Method: "POST", Path: "/{id}/complete", Emits: []string{"todo.completed"},
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.Row, error) {
					if _, err := c.DB.Exec(c, `update todos set done = true where id = $1`, in.ID); err != nil {
						return nil, rest.DBProblem(err)
					}
					out := rest.Row{"id": in.ID, "done": true}
					return out, events.Emit(c, "todo.completed", out, &events.EmitOpts{Key: in.ID})
				}}),
			"announce": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.None]{
				Method: "POST", Path: "/announce", Emits: []string{"todo.announced"},
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.None, error) {
					// Emit runs as service_role for its statement only: the
					// handler's next statement runs as the caller again.
					var before, after string
					if err := c.DB.QueryRow(c, `select current_user`).Scan(&before); err != nil {
						return rest.None{}, rest.DBProblem(err)
					}
					if err := events.Emit(c, "todo.announced", map[string]string{"text": "hello"}, nil); err != nil {
						return rest.None{}, err
					}
					if err := c.DB.QueryRow(c, `select current_user`).Scan(&after); err != nil {
						return rest.None{}, rest.DBProblem(err)
					}
					if before != after || after == "service_role" {
						return rest.None{}, fmt.Errorf("role after Emit is %q, was %q", after, before)
					}
					return rest.None{}, nil
				}}),
			"sneaky": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.None]{
				Method: "POST", Path: "/sneaky", Emits: []string{"todo.announced"},
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, rest.None]) (rest.None, error) {
					return rest.None{}, events.Emit(c, "todo.undeclared", nil, nil)
				}}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hc := &events.Config{DB: b.db, PollInterval: 200 * time.Millisecond, Heartbeat: time.Second}
	if fo.hub != nil {
		*hc = *fo.hub
		hc.DB = b.db
	}
	b.hub, err = events.New(t.Context(), hc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.hub.Close)
	b.stream, err = b.hub.Stream(t.Context(), b.res, &events.StreamOpts{Table: true, Resolver: b.rv, Allow: fo.allow})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", b.res))
	mux.Handle("GET /api/todos/events", b.stream)
	b.srv = httptest.NewServer(b.rv.Middleware(b.rv.CrossSite(mux)))
	t.Cleanup(b.srv.Close)
	b.cookie, _ = authctx.CookieNameFor(project)
	return b
}

func newResolver(t *testing.T, pub *ecdsa.PublicKey) *authctx.Resolver {
	pad := func(n *big.Int) string {
		buf := make([]byte, 32)
		n.FillBytes(buf)
		return base64.RawURLEncoding.EncodeToString(buf)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
		"x": pad(pub.X), "y": pad(pub.Y)}}})
	rv, err := authctx.New(context.Background(), &authctx.Config{ProjectURL: project, VerifierConfig: authctx.VerifierConfig{JWKS: jwks}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	return rv
}

// token signs an access token for sub in tenant.
func (b *bundle) token(sub, tenant string, anonymous bool) string {
	extra := map[string]any{"is_anonymous": anonymous}
	if tenant != "" {
		extra["tenant_id"] = tenant
	}
	return b.tokenWith(sub, extra)
}

// tokenWith signs an access token for sub with extra claims.
func (b *bundle) tokenWith(sub string, extra map[string]any) string {
	claims := jwt.MapClaims{"sub": sub, "role": "authenticated", "exp": time.Now().Add(time.Hour).Unix(),
		"is_anonymous": false, "aud": "authenticated", "iss": project + "/auth/v1"}
	for k, v := range extra {
		claims[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(b.key)
	if err != nil {
		b.t.Fatal(err)
	}
	return s
}

// sessionCookie is the @supabase/ssr cookie carrying tok.
func (b *bundle) sessionCookie(tok string) string {
	sess, _ := json.Marshal(map[string]any{"access_token": tok, "refresh_token": "r",
		"expires_at": time.Now().Add(time.Hour).Unix()})
	return b.cookie + "=base64-" + base64.RawURLEncoding.EncodeToString(sess)
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

// create inserts a todo as tok and returns its id.
func (b *bundle) create(tok, title string) int64 {
	b.t.Helper()
	st, body := b.call("POST", "/api/todos/", tok, fmt.Sprintf(`{"title":%q}`, title))
	if st != 201 {
		b.t.Fatalf("create %q: %d %s", title, st, body)
	}
	var row struct{ ID int64 }
	_ = json.Unmarshal([]byte(body), &row)
	return row.ID
}
