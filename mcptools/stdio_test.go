package mcptools_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/rest"
)

// Environment of the stdio child process.
const (
	envChild = "MCPTOOLS_TEST_STDIO_CHILD"
	envDB    = "MCPTOOLS_TEST_DATABASE_URL"
	envJWKS  = "MCPTOOLS_TEST_JWKS_URL"
)

// stdioChild is the test binary run as `serve --mcp-stdio` would run:
// resources on the database, the caller from the environment, ServeStdio.
func stdioChild() int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "stdio child:", err)
		return 1
	}
	pool, err := pgxpool.New(ctx, os.Getenv(envDB))
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	todos, err := rest.NewResource(ctx, db.New(pool, nil), "todos", todoOptions())
	if err != nil {
		return fail(err)
	}
	srv, err := mcptools.New(&mcptools.Config{Resources: []*rest.Resource{todos}})
	if err != nil {
		return fail(err)
	}
	rv, err := newResolver(os.Getenv(envJWKS))
	if err != nil {
		return fail(err)
	}
	defer rv.Close()
	a, err := mcptools.CallerFromEnv(ctx, os.Getenv, mcptools.ResolverCaller(rv))
	if err != nil {
		return fail(err)
	}
	if err := mcptools.ServeStdio(ctx, srv, a, mcptools.AllowList()); err != nil {
		var ce *mcptools.CallerError
		if errors.As(err, &ce) {
			fmt.Fprintln(os.Stderr, "refused:", ce.Problem.Code)
			return 3
		}
		return fail(err)
	}
	return 0
}

// TestServeStdio runs ServeStdio in a child process with the caller's
// token in its environment and drives it with the SDK's CommandTransport.
func TestServeStdio(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into todos (owner_id, title) values ($1, 'bob''s')`, bob)
	child := func(env ...string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=1", envDB+"="+b.pool.Config().ConnString(), envJWKS+"="+b.keys.jwks.URL)
		cmd.Env = append(cmd.Env, env...)
		return cmd
	}
	connect := func(cmd *exec.Cmd) (*mcp.ClientSession, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		return mcp.NewClient(&mcp.Implementation{Name: "stdio-client", Version: "v0"}, nil).
			Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	}

	cs, err := connect(child(mcptools.EnvAccessToken + "=" + b.keys.sign(alice)))
	if err != nil {
		t.Fatal(err)
	}
	row := ok(t, call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": "from stdio"}}))
	if row["owner_id"] != alice {
		t.Fatalf("created %v", row)
	}
	items := ok(t, call(t, cs, "listTodos", nil))["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["title"] != "from stdio" {
		t.Fatalf("alice lists %v (bob's row must stay hidden)", items)
	}
	if err := cs.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	// The guard refuses an anonymous sign-in: the server exits before
	// serving and the client cannot initialize.
	cmd := child(mcptools.EnvAccessToken + "=" + b.keys.sign(anonymous, "is_anonymous", true))
	if _, err := connect(cmd); err == nil {
		t.Fatal("anonymous sign-in served over stdio")
	}
	if cmd.ProcessState == nil {
		_ = cmd.Wait()
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 {
		t.Fatalf("child exit code %d, want 3 (refused)", code)
	}
}

func TestCallerFromEnv(t *testing.T) {
	t.Parallel()
	var seen *http.Request
	resolve := func(r *http.Request) authctx.Auth { seen = r; return authctx.Service("k") }
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	ctx := context.Background()

	a, err := mcptools.CallerFromEnv(ctx, env(nil), resolve)
	if err != nil || a.Kind != authctx.KindAnon || seen != nil {
		t.Fatalf("empty env: %+v %v", a, err)
	}
	if _, err := mcptools.CallerFromEnv(ctx, env(map[string]string{mcptools.EnvAccessToken: "t", mcptools.EnvAPIKey: "k"}), resolve); !errors.Is(err, mcptools.ErrEnvCaller) {
		t.Fatalf("both set: %v", err)
	}
	if _, err := mcptools.CallerFromEnv(ctx, env(map[string]string{mcptools.EnvAccessToken: " tok "}), resolve); err != nil || seen.Header.Get("Authorization") != "Bearer tok" {
		t.Fatalf("token: %v %v", err, seen.Header)
	}
	if _, err := mcptools.CallerFromEnv(ctx, env(map[string]string{mcptools.EnvAPIKey: "sk"}), resolve); err != nil || seen.Header.Get("apikey") != "sk" || seen.Header.Get("Authorization") != "" {
		t.Fatalf("key: %v %v", err, seen.Header)
	}
}
