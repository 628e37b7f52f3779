package authz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// Tenants and users of the fixtures.
const (
	tenantA = "aaaaaaaa-0000-0000-0000-00000000000a"
	tenantB = "bbbbbbbb-0000-0000-0000-00000000000b"
	tenantC = "cccccccc-0000-0000-0000-00000000000c"

	alice = "11111111-1111-1111-1111-111111111111"
	bob   = "22222222-2222-2222-2222-222222222222"
	carol = "33333333-3333-3333-3333-333333333333"
	dave  = "44444444-4444-4444-4444-444444444444"
)

// The todos table: RLS on, with a permissive policy, so that every refusal
// in these tests comes from the authorizer under test.
const fixtureSQL = `
create table todos (
  id bigint generated always as identity primary key,
  tenant_id uuid not null,
  title text not null,
  purged boolean not null default false
);
alter table todos enable row level security;
grant select, insert, update, delete on todos to authenticated, anon, service_role;
create policy todos_all on todos for all to authenticated, anon using (true) with check (true);
`

// queryCounter counts statements pgx sends (plain and batched) whose SQL
// contains needle.
type queryCounter struct {
	needle string
	n      atomic.Int64
}

func (c *queryCounter) hit(sql string) {
	if strings.Contains(sql, c.needle) {
		c.n.Add(1)
	}
}

func (c *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.hit(d.SQL)
	return ctx
}
func (c *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *queryCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *queryCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.hit(d.SQL)
}
func (c *queryCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// bundle is a fresh migrated database with the fixtures.
type bundle struct {
	t       testing.TB
	pool    *pgxpool.Pool // superuser: fixtures and inspection only
	db      *db.DB
	members *queryCounter // statements reading tablegate.memberships
}

func setup(t testing.TB) *bundle {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = pgtest.MaxConns
	qc := &queryCounter{needle: "tablegate.memberships"}
	cfg.ConnConfig.Tracer = qc
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	b := &bundle{t: t, pool: pool, db: db.New(pool, nil), members: qc}
	b.exec(fixtureSQL)
	return b
}

func (b *bundle) exec(sql string, args ...any) {
	b.t.Helper()
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
}

func (b *bundle) scalar(sql string, args ...any) any {
	b.t.Helper()
	var v any
	if err := b.pool.QueryRow(context.Background(), sql, args...).Scan(&v); err != nil {
		b.t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// todo inserts a todo and returns its id.
func (b *bundle) todo(tenant, title string) int64 {
	b.t.Helper()
	var id int64
	if err := b.pool.QueryRow(context.Background(),
		"insert into todos (tenant_id, title) values ($1, $2) returning id", tenant, title).Scan(&id); err != nil {
		b.t.Fatal(err)
	}
	return id
}

// claims builds verified-looking claims (decoded from JSON, exactly as a
// verifier hands them over) for a user with extra claims.
func claims(sub string, extra string) string {
	s := `{"sub":"` + sub + `","role":"authenticated","aud":"authenticated"`
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// testCaller reads the caller from X-Test-Claims (JSON claims of a
// user), or X-Test-Caller: service.
func testCaller(r *http.Request) (authctx.Auth, error) {
	if r.Header.Get("X-Test-Caller") == "service" {
		return authctx.Service("backend"), nil
	}
	raw := r.Header.Get("X-Test-Claims")
	if raw == "" {
		return authctx.Anon(authctx.ReasonNone), nil
	}
	var c authctx.Claims
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return authctx.Auth{}, err
	}
	return authctx.NewUser(c, "tok", json.RawMessage(raw)), nil
}

// caller returns the repository context of claims, for direct calls.
func caller(t testing.TB, raw string) authctx.Auth {
	t.Helper()
	var c authctx.Claims
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		t.Fatal(err)
	}
	return authctx.NewUser(c, "tok", json.RawMessage(raw))
}

// purgeAction is an item action gated by todos.purge: it marks the row
// purged (the row stays, so the same key can be asked again). A body
// {"fail": true} makes the handler fail after the authorizer passed.
func purgeAction() *rest.Action {
	type in struct {
		Fail bool `json:"fail,omitempty"`
	}
	type out struct {
		ID     int64 `json:"id"`
		Purged bool  `json:"purged"`
	}
	return rest.DefineAction(rest.ActionDef[in, rest.None, out]{
		Method:     http.MethodPost,
		Path:       "/{id}/purge",
		Permission: "todos.purge",
		Handler: func(c *rest.Ctx, a rest.ActionInput[in, rest.None]) (out, error) {
			var o out
			err := c.DB.QueryRow(c, "update todos set purged = true where id = $1 returning id, purged", a.ID).Scan(&o.ID, &o.Purged)
			if err != nil {
				return o, err
			}
			if a.Data.Fail {
				return o, fmt.Errorf("purge failed after the update")
			}
			return o, nil
		},
	})
}

// serve mounts the todos resource with authorizer a (permissions from the
// authorizer, plus the purge action) under /api/todos and the approvals
// endpoint under /api/approvals.
func (b *bundle) serve(a rest.Authorizer) *httptest.Server {
	b.t.Helper()
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Authorizer:                a,
		PermissionsFromAuthorizer: true,
		Caller:                    testCaller,
		Actions:                   map[string]*rest.Action{"purge": purgeAction()},
	})
	if err != nil {
		b.t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", res))
	mux.Handle("/api/todos", http.StripPrefix("/api/todos", res))
	ah := authz.NewApprovals(b.db).Handler(&authz.HandlerConfig{Caller: testCaller})
	mux.Handle("/api/approvals/", http.StripPrefix("/api/approvals", ah))
	mux.Handle("/api/approvals", http.StripPrefix("/api/approvals", ah))
	s := httptest.NewServer(mux)
	b.t.Cleanup(s.Close)
	return s
}

type resp struct {
	status int
	header http.Header
	body   string
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// json decodes the body into a map.
func (r resp) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

// do sends a request as who: JSON claims, "service", or "" (anon).
func do(t testing.TB, s *httptest.Server, method, path, who, body string) resp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch who {
	case "":
	case "service":
		req.Header.Set("X-Test-Caller", "service")
	default:
		req.Header.Set("X-Test-Claims", who)
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rb, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, string(rb)}
}

// expectProblem checks a problem body's status, code and permission.
func expectProblem(t testing.TB, r resp, status int, code, permission string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status: got %s, want %d", r, status)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("content type %q for %s", ct, r)
	}
	m := r.json(t)
	if code != "" && m["code"] != code {
		t.Fatalf("code: got %v, want %s (%s)", m["code"], code, r)
	}
	if permission != "" && m["permission"] != permission {
		t.Fatalf("permission: got %v, want %s (%s)", m["permission"], permission, r)
	}
	return m
}

func mustAuthz(t testing.TB) func(*authz.Authorizer, error) *authz.Authorizer {
	return func(a *authz.Authorizer, err error) *authz.Authorizer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// restOp shortens rest.Operation in tables.
type restOp = rest.Operation

// callerService is a service caller's repository context.
func callerService() authctx.Auth { return authctx.Service("admin") }

// tryServe builds the todos resource with permissions from a and returns
// the build error.
func tryServe(b *bundle, a rest.Authorizer) error {
	_, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Authorizer: a, PermissionsFromAuthorizer: true, Caller: testCaller,
	})
	return err
}

// authctxAnon is the repository context of a caller without a session.
func authctxAnon() authctx.Auth { return authctx.Anon(authctx.ReasonNone) }
