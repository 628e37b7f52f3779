package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// testPool returns a pool on a fresh migrated database dropped at cleanup.
func testPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return pgtest.DB(t)
}

const fixtureSQL = `
create table todos (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid(),
  title text not null check (length(title) between 1 and 200),
  slug text unique,
  done boolean not null default false,
  priority int,
  secret text,
  created_at timestamptz not null default now(),
  seq bigint generated always as identity
);
alter table todos enable row level security;
grant select, insert, update, delete on todos to authenticated, anon;
create policy todos_read on todos for select using (owner_id = auth.uid());
create policy todos_insert on todos for insert to authenticated with check (owner_id = auth.uid());
create policy todos_update on todos for update to authenticated using (owner_id = auth.uid()) with check (owner_id = auth.uid());
create policy todos_delete on todos for delete to authenticated using (owner_id = auth.uid());

create table items (
  id bigserial primary key,
  grp int not null,
  score int,
  name text not null
);
alter table items enable row level security;
grant select on items to authenticated, anon;
create policy items_read on items for select using (grp <> 13);

create table notes (
  code text primary key,
  body jsonb,
  tags text[],
  amount numeric(20,2),
  big bigint
);
alter table notes enable row level security;
create policy notes_all on notes to authenticated using (true) with check (true);
grant select, insert, update, delete on notes to authenticated;
`

// Test callers.
var (
	alice = "11111111-1111-1111-1111-111111111111"
	bob   = "22222222-2222-2222-2222-222222222222"
)

func user(id string) authctx.Auth {
	return authctx.NewUser(authctx.Claims{"sub": id, "role": "authenticated"}, "token-not-used", nil)
}

// testCaller reads the caller from the X-Test-User header: a user id,
// "anon", "anonymous" (an anonymous sign-in), "service" or "invalid".
func testCaller(r *http.Request) (authctx.Auth, error) {
	switch h := r.Header.Get("X-Test-User"); h {
	case "", "anon":
		return authctx.Anon(authctx.ReasonNone), nil
	case "invalid":
		return authctx.Invalid(authctx.ReasonToken, nil), nil
	case "service":
		return authctx.Service("test"), nil
	case "anonymous":
		return authctx.NewUser(authctx.Claims{"sub": "33333333-3333-3333-3333-333333333333", "role": "authenticated", "is_anonymous": true}, "t", nil), nil
	default:
		return user(h), nil
	}
}

// bundle is a test database with fixtures and helpers.
type bundle struct {
	t    testing.TB
	pool *pgxpool.Pool
	db   *db.DB
}

func setup(t testing.TB) *bundle {
	t.Helper()
	pool := testPool(t)
	if _, err := pool.Exec(context.Background(), fixtureSQL); err != nil {
		t.Fatal(err)
	}
	return &bundle{t: t, pool: pool, db: db.New(pool, nil)}
}

func (b *bundle) resource(table string, o *Config) *Resource {
	b.t.Helper()
	if o == nil {
		o = &Config{}
	}
	if o.Caller == nil {
		o.Caller = testCaller
	}
	r, err := NewResource(context.Background(), b.db, table, o)
	if err != nil {
		b.t.Fatal(err)
	}
	return r
}

// noRLS is the options of a test about column types or wire forms, not
// about row-level security: it serves a table without RLS, explicitly.
func noRLS() *Config { return &Config{AllowWithoutRLS: true} }

func (b *bundle) exec(sql string, args ...any) {
	b.t.Helper()
	if _, err := b.pool.Exec(context.Background(), sql, args...); err != nil {
		b.t.Fatal(err)
	}
}

// server mounts h under /api/<name> on a real httptest server.
func server(t testing.TB, name string, h http.Handler) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/api/"+name+"/", http.StripPrefix("/api/"+name, h))
	mux.Handle("/api/"+name, http.StripPrefix("/api/"+name, h))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

type resp struct {
	status int
	header http.Header
	body   string
}

func do(t testing.TB, s *httptest.Server, method, path, who, body string, hdr ...string) resp {
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
	if who != "" {
		req.Header.Set("X-Test-User", who)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, string(b)}
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

func newNumberDecoder(s string) *json.Decoder {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	return dec
}
