package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

// The realistic fixture: the demo's schema (internal/demo/schema.sql,
// read from the source tree so the benchmark always measures what the demo
// installs: tenants, memberships, public.todos and its tenant + membership
// read policy, owner-only writes, anonymous sign-ins excluded from writes)
// plus realTenants more tenants, realUsersPerTenant members each and
// realRows todos spread over them, every member owning realRows /
// (realTenants × realUsersPerTenant) rows of its tenant.
//
// Beside public.todos, in the same database, sit twins with the same rows
// and other read policies, so that one statement is measured under each:
//
//   - todos_owner: the owner policy owner_id = (select auth.uid()), with an
//     index on (owner_id, id) — the floor a multi-tenant policy is held to;
//   - todos_open: using (true), no policy work at all;
//   - todos_module: the policies of tablegate.enable_tenant_policies(…,
//     require_membership => true), the SQL module's recommended one call;
//   - todos_fn: the demo's read policy before the member tenant views,
//     tenant_id = (select tablegate.member_tenant_id()).
const (
	realTenants        = 8
	realUsersPerTenant = 50
	realRows           = 24000
)

// realTenant returns the id of tenant t (1-based).
func realTenant(t int) string { return fmt.Sprintf("c0000000-0000-4000-8000-%012d", t) }

// realUser returns the id of member u (1-based) of tenant ((u-1) % realTenants) + 1.
func realUser(u int) string { return fmt.Sprintf("dddddddd-0000-4000-8000-%012d", u) }

// realCaller is the benchmark's caller: member 2, of tenant 2.
var (
	realCallerID     = realUser(2)
	realCallerTenant = realTenant(2)
)

// demoSchema reads the demo's schema from the source tree.
func demoSchema(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("..", "internal", "demo", "schema.sql"))
	if err != nil {
		tb.Fatalf("read the demo schema: %v", err)
	}
	return string(b)
}

// realFixtureSQL fills the demo schema with the realistic data and creates
// the twins. %[1]d tenants, %[2]d users per tenant, %[3]d rows.
const realFixtureSQL = `
insert into tablegate.tenants (id, name)
select ('c0000000-0000-4000-8000-' || lpad(t::text, 12, '0'))::uuid, 'Tenant ' || t from generate_series(1, %[1]d) t;
insert into tablegate.memberships (user_id, scope, scope_id, roles)
select ('dddddddd-0000-4000-8000-' || lpad(u::text, 12, '0'))::uuid, 'tenant',
       'c0000000-0000-4000-8000-' || lpad(((u - 1) %% %[1]d + 1)::text, 12, '0'), '{member}'
from generate_series(1, %[1]d * %[2]d) u;
-- row g: tenant (g-1) %% T + 1, owned by a member of that tenant
insert into public.todos (tenant_id, owner_id, title, done)
select ('c0000000-0000-4000-8000-' || lpad(((g - 1) %% %[1]d + 1)::text, 12, '0'))::uuid,
       ('dddddddd-0000-4000-8000-' || lpad((((g - 1) / %[1]d) %% %[2]d * %[1]d + (g - 1) %% %[1]d + 1)::text, 12, '0'))::uuid,
       'todo ' || g, g %% 3 = 0
from generate_series(1, %[3]d) g;

create table public.todos_owner (like public.todos including defaults including constraints);
insert into public.todos_owner overriding system value select * from public.todos;
alter table public.todos_owner add primary key (id);
create index on public.todos_owner (owner_id, id);
alter table public.todos_owner enable row level security;
alter table public.todos_owner force row level security;
create policy owner_read on public.todos_owner for select to authenticated using (owner_id = (select auth.uid()));

create table public.todos_open (like public.todos including defaults including constraints);
insert into public.todos_open overriding system value select * from public.todos;
alter table public.todos_open add primary key (id);
alter table public.todos_open enable row level security;
alter table public.todos_open force row level security;
create policy open_read on public.todos_open for select to authenticated using (true);

create table public.todos_module (like public.todos including defaults including constraints);
insert into public.todos_module overriding system value select * from public.todos;
alter table public.todos_module add primary key (id);
create index on public.todos_module (tenant_id, id);
select tablegate.enable_tenant_policies('public.todos_module', require_membership => true);

-- todos_fn: the demo's read policy before the member tenant views, one
-- SECURITY DEFINER function call per statement.
create table public.todos_fn (like public.todos including defaults including constraints);
insert into public.todos_fn overriding system value select * from public.todos;
alter table public.todos_fn add primary key (id);
create index on public.todos_fn (tenant_id, id);
alter table public.todos_fn enable row level security;
alter table public.todos_fn force row level security;
create policy fn_read on public.todos_fn for select to authenticated using (tenant_id = (select tablegate.member_tenant_id()));

grant select on public.todos_owner, public.todos_open, public.todos_module, public.todos_fn to authenticated;
analyze;
`

// setupRealistic migrates a fresh database (then down to version downTo
// when downTo > 0, to measure against an earlier migration), applies schema
// (a demo schema) and the realistic data, and
// returns a 16-connection pool on it.
func setupRealistic(tb testing.TB, schema string, downTo int64) *pgxpool.Pool {
	tb.Helper()
	u := pgtest.URL(tb)
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	ctx := context.Background()
	if downTo > 0 {
		p, err := db.NewMigrator(pool)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := p.DownTo(ctx, downTo); err != nil {
			tb.Fatal(err)
		}
		_ = p.Close()
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Release()
	// Simple protocol: several statements per string.
	for _, s := range []string{schema, fmt.Sprintf(realFixtureSQL, realTenants, realUsersPerTenant, realRows)} {
		if _, err := conn.Conn().PgConn().Exec(ctx, s).ReadAll(); err != nil {
			tb.Fatalf("realistic fixture: %v", err)
		}
	}
	return pool
}

// realClaims returns the claims of a Supabase-shaped access token of the
// demo (tablegate token / the demo's sign-in): tenant_id and roles at the
// top level, is_anonymous false.
func realClaims(sub, tenant string) map[string]any {
	now := time.Now()
	return map[string]any{
		"iss": "http://127.0.0.1:54321/auth/v1", "sub": sub, "aud": "authenticated",
		"exp": now.Add(2 * time.Hour).Unix(), "iat": now.Unix(), "email": "member@example.com", "phone": "",
		"app_metadata":  map[string]any{"provider": "email", "providers": []string{"email"}},
		"user_metadata": map[string]any{}, "role": "authenticated", "aal": "aal1",
		"amr":        []any{map[string]any{"method": "password", "timestamp": now.Unix()}},
		"session_id": "22222222-2222-4222-8222-222222222222", "is_anonymous": false,
		"tenant_id": tenant, "roles": []string{"member"},
	}
}

// realCallerAuth is the benchmark caller as tablegate resolves it, and
// its claims JSON.
func realCallerAuth(tb testing.TB) (authctx.Auth, []byte) {
	tb.Helper()
	raw, err := json.Marshal(realClaims(realCallerID, realCallerTenant))
	if err != nil {
		tb.Fatal(err)
	}
	var c authctx.Claims
	if err := json.Unmarshal(raw, &c); err != nil {
		tb.Fatal(err)
	}
	return authctx.NewUser(c, "tok", raw), raw
}

// statementRecorder records the SQL text and arguments of batch queries.
type statementRecorder struct {
	mu   sync.Mutex
	sqls []string
	args [][]any
}

func (r *statementRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *statementRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sqls = append(r.sqls, d.SQL)
	r.args = append(r.args, d.Args)
}

func (r *statementRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// restStatements returns the statements rest sends for GET /{id} and for
// the first page of GET / on table (the caller's settings excluded), as
// recorded from a rest.Resource serving the realistic caller.
func restStatements(tb testing.TB, pool *pgxpool.Pool, table string, id int64) (get, list string) {
	tb.Helper()
	cfg := pool.Config().Copy()
	rec := &statementRecorder{}
	cfg.ConnConfig.Tracer = rec
	cfg.MaxConns = 1
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	caller, _ := realCallerAuth(tb)
	res, err := rest.NewResource(context.Background(), db.New(p, nil), table, &rest.Config{
		Select: []string{"id", "tenant_id", "owner_id", "title", "done", "created_at"},
		Caller: func(*http.Request) (authctx.Auth, error) { return caller, nil },
	})
	if err != nil {
		tb.Fatal(err)
	}
	last := func(target string) string {
		w := httptest.NewRecorder()
		res.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.Code != http.StatusOK {
			tb.Fatalf("GET %s on %s: %d %s", target, table, w.Code, w.Body)
		}
		rec.mu.Lock()
		defer rec.mu.Unlock()
		for i := len(rec.sqls) - 1; i >= 0; i-- {
			if !strings.Contains(rec.sqls[i], "set_config") {
				return rec.sqls[i]
			}
		}
		tb.Fatalf("no statement recorded for %s", target)
		return ""
	}
	return last(fmt.Sprintf("/%d", id)), last("/")
}

func (r *statementRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}

func (r *statementRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
