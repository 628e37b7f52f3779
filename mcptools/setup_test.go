package mcptools_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Exit(stdioChild())
	}
	pgtest.Main(m)
}

const fixtureSQL = `
create table todos (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid(),
  title text not null check (length(title) between 1 and 200),
  done boolean not null default false,
  priority int,
  created_at timestamptz not null default now()
);
alter table todos enable row level security;
grant select, insert, update, delete on todos to authenticated, service_role;
create policy todos_read on todos for select using (owner_id = auth.uid());
create policy todos_insert on todos for insert to authenticated with check (owner_id = auth.uid());
create policy todos_update on todos for update to authenticated using (owner_id = auth.uid()) with check (owner_id = auth.uid());
create policy todos_delete on todos for delete to authenticated using (owner_id = auth.uid());

create table tags (
  id bigserial primary key,
  name text not null
);
alter table tags enable row level security;
grant select, insert, update, delete on tags to authenticated;
grant select on tags to anon;
create policy tags_read on tags for select using (name <> 'hidden');
create policy tags_insert on tags for insert to authenticated with check (true);
grant usage on sequence tags_id_seq to authenticated;
`

// Test callers.
const (
	alice     = "11111111-1111-1111-1111-111111111111"
	bob       = "22222222-2222-2222-2222-222222222222"
	anonymous = "33333333-3333-3333-3333-333333333333"
)

// The permissions of the todos resource.
const (
	permDelete  = "todos.delete"
	permArchive = "todos.archive"
)

// authorizer admits todos.delete for callers with claim app_role=admin and
// asks for approval "appr-1" before todos.archive, unless the caller's
// claim approval names it.
var authorizer = rest.AuthorizerFunc(func(_ context.Context, req *rest.AuthzRequest) (rest.Decision, error) {
	switch req.Permission {
	case permDelete:
		if req.Caller.Claims()["app_role"] == "admin" {
			return rest.Allowed(), nil
		}
		return rest.Denied(), nil
	case permArchive:
		if req.Caller.Claims()["approval"] == "appr-1" {
			return rest.Allowed(), nil
		}
		return rest.ApprovalRequired("appr-1"), nil
	}
	return rest.Denied(), nil
})

type completeIn struct {
	IDs []string `json:"ids" jsonschema:"the ids of the todos to complete"`
}

type completeOut struct {
	Completed int `json:"completed"`
}

type statsQuery struct {
	MinPriority int `json:"min_priority,omitempty"`
}

type statsOut struct {
	Open int `json:"open"`
	Done int `json:"done"`
}

// todoOptions are the todos resource: every CRUD operation, delete under a
// permission, and three actions.
func todoOptions() *rest.Config {
	return &rest.Config{
		Select:      []string{"id", "owner_id", "title", "done", "priority"},
		ReadOnly:    []string{"owner_id"},
		Permissions: map[rest.Operation]string{rest.OpDelete: permDelete},
		Authorizer:  authorizer,
		Actions: map[string]*rest.Action{
			"complete": rest.DefineAction(rest.ActionDef[completeIn, rest.None, completeOut]{
				Method:  http.MethodPost,
				Path:    "/complete",
				Summary: "Complete todos",
				Handler: func(c *rest.Ctx, in rest.ActionInput[completeIn, rest.None]) (completeOut, error) {
					tag, err := c.DB.Exec(c, `update todos set done = true where id = any($1::uuid[])`, in.Data.IDs)
					if err != nil {
						return completeOut{}, err
					}
					return completeOut{Completed: int(tag.RowsAffected())}, nil
				},
			}),
			"stats": rest.DefineAction(rest.ActionDef[rest.None, statsQuery, statsOut]{
				Method:      http.MethodGet,
				Path:        "/stats",
				Summary:     "Count todos",
				Description: "Counts the caller's open and done todos.",
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, statsQuery]) (statsOut, error) {
					var out statsOut
					err := c.DB.QueryRow(c, `select count(*) filter (where not done), count(*) filter (where done)
						from todos where coalesce(priority, 0) >= $1`, in.Query.MinPriority).Scan(&out.Open, &out.Done)
					return out, err
				},
			}),
			"archive": rest.DefineAction(rest.ActionDef[rest.None, rest.None, rest.None]{
				Method:     http.MethodPost,
				Path:       "/{id}/archive",
				Summary:    "Archive a todo",
				Permission: permArchive,
				Handler: func(*rest.Ctx, rest.ActionInput[rest.None, rest.None]) (rest.None, error) {
					return rest.None{}, nil
				},
			}),
		},
	}
}

// bundle is a test database with the todos and tags resources, the MCP
// server built from them and the REST handler serving the same objects.
type bundle struct {
	t     *testing.T
	pool  *pgxpool.Pool
	db    *db.DB
	todos *rest.Resource
	tags  *rest.Resource
	srv   *mcptools.Server
	keys  *keys
}

func setup(t *testing.T) *bundle {
	t.Helper()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), fixtureSQL); err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, pool: pool, db: db.New(pool, nil), keys: newKeys(t)}
	var err error
	o := todoOptions()
	o.Caller = restCaller
	b.todos, err = rest.NewResource(context.Background(), b.db, "todos", o)
	if err != nil {
		t.Fatal(err)
	}
	b.tags, err = rest.NewResource(context.Background(), b.db, "tags", &rest.Config{
		Operations: []rest.Operation{rest.OpList, rest.OpGet},
		Caller:     restCaller,
	})
	if err != nil {
		t.Fatal(err)
	}
	b.srv, err = mcptools.New(&mcptools.Config{Resources: []*rest.Resource{b.todos, b.tags}, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// session connects an SDK client over in-memory transports with a fixed caller.
func (b *bundle) session(a authctx.Auth) *mcp.ClientSession {
	b.t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := b.srv.Connect(context.Background(), st, a, mcptools.AllowList())
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).
		Connect(context.Background(), ct, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// rest serves the REST routes of both resources on a real httptest server
// under /api.
func (b *bundle) restServer() *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/api/", b.restHandler())
	s := httptest.NewServer(mux)
	b.t.Cleanup(s.Close)
	return s
}

// user is the auth state of a verified user, as the resolver builds it.
func user(id string, extra ...any) authctx.Auth {
	c := authctx.Claims{"sub": id, "role": "authenticated"}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return authctx.NewUser(c, "token-not-used", nil)
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// text is the text of a result's single text content.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content: got %d items, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content: %T, want text", res.Content[0])
	}
	return tc.Text
}

// ok checks a successful result and decodes its structured content.
func ok(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	if res.IsError {
		t.Fatalf("tool error: %s", text(t, res))
	}
	body := text(t, res)
	sc, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, body, string(sc)) {
		t.Fatalf("structured content %s differs from text %s", sc, body)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("result %q: %v", body, err)
	}
	return m
}

// problemOf checks a tool error and decodes its Problem Details.
func problemOf(t *testing.T, res *mcp.CallToolResult) (string, problem.Problem) {
	t.Helper()
	if !res.IsError {
		t.Fatalf("want a tool error, got %s", text(t, res))
	}
	body := text(t, res)
	var p problem.Problem
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatalf("problem %q: %v", body, err)
	}
	if got := res.Meta[mcptools.MetaStatus]; fmt.Sprint(got) != fmt.Sprint(p.Status) {
		t.Fatalf("_meta status %v, problem status %d", got, p.Status)
	}
	return body, p
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

type httpResp struct {
	status int
	header http.Header
	body   string
}

// do sends one HTTP request with an optional Bearer token.
func do(t *testing.T, method, url, token, body string) httpResp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return httpResp{res.StatusCode, res.Header, string(b)}
}

// keys is a signing key, its JWKS on a real httptest server, and an
// authctx.Resolver verifying Bearer tokens against that JWKS (and the
// secret key testSecretKey as a service caller).
type keys struct {
	t      testing.TB
	priv   *ecdsa.PrivateKey
	jwks   *httptest.Server
	rv     *authctx.Resolver
	caller func(*http.Request) authctx.Auth
}

// testCookie is the session cookie name: the REST routes accept the
// cookie, the MCP transport never does.
const testCookie = "sb-test-auth-token"

// sessionCookie is an @supabase/ssr session cookie holding tok.
func sessionCookie(tok string) string {
	// A stored session always has expires_at (auth-js adds it); without it
	// @supabase/ssr, and tablegate, treat the cookie as no session.
	js := fmt.Sprintf(`{"access_token":%q,"refresh_token":"r","token_type":"bearer","expires_in":3600,"expires_at":%d}`,
		tok, time.Now().Add(time.Hour).Unix())
	return testCookie + "=base64-" + base64.RawURLEncoding.EncodeToString([]byte(js))
}

// testSecretKey is the secret apikey of the service caller "ci".
const testSecretKey = "sb_secret_test_0123456789"

// newResolver builds the resolver the REST routes and the MCP adapter share.
func newResolver(jwksURL string) (*authctx.Resolver, error) {
	return authctx.New(context.Background(), &authctx.Config{
		VerifierConfig: authctx.VerifierConfig{JWKSURL: jwksURL},
		Secret:         true,
		SecretKeys:     map[string]string{"ci": testSecretKey},
		CookieName:     testCookie,
	})
}

func newKeys(t testing.TB) *keys {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k := &keys{t: t, priv: priv}
	point, err := priv.PublicKey.Bytes() // 0x04 | X | Y, 32 bytes each
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	set := fmt.Sprintf(`{"keys":[{"kty":"EC","crv":"P-256","alg":"ES256","use":"sig","kid":"k1","x":%q,"y":%q}]}`,
		b64(point[1:33]), b64(point[33:]))
	k.jwks = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, set)
	}))
	t.Cleanup(k.jwks.Close)
	rv, err := newResolver(k.jwks.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	k.rv = rv
	k.caller = mcptools.ResolverCaller(rv)
	return k
}

// sign returns an ES256 access token for sub with extra claims.
func (k *keys) sign(sub string, extra ...any) string {
	k.t.Helper()
	c := jwt.MapClaims{"sub": sub, "role": "authenticated", "aud": "authenticated",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["kid"] = "k1"
	s, err := tok.SignedString(k.priv)
	if err != nil {
		k.t.Fatal(err)
	}
	return s
}

// restCaller is the REST resources' caller: the state authctx's
// middleware stored (rest's nil Caller does not read it yet).
func restCaller(r *http.Request) (authctx.Auth, error) { return authctx.AuthFrom(r.Context()), nil }

// restHandler is the REST routes as an application mounts them: the
// resolver's middleware, then authctx's guard (full users only).
func (b *bundle) restHandler() http.Handler {
	set, err := rest.NewRouter(&rest.RouterConfig{BasePath: "/api", Resources: map[string]*rest.Resource{"todos": b.todos, "tags": b.tags}})
	if err != nil {
		b.t.Fatal(err)
	}
	return b.keys.rv.Middleware(authctx.Guard()(set))
}
