package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"

	"github.com/tablegate/tablegate/authctx"
)

// TestHooksCannotChangeSharedClaims: every request presenting the same
// token gets the same resolved *User (the verification memo hands it out),
// so the claims a hook sees must be its own copy. Here every request
// shares one Auth, as memo hits do; hooks and the authorizer overwrite,
// add and delete claims (top level and nested) while other requests with
// the same token run. Run with -race: a shared map is a data race. Later
// requests still see the verified claims, and the transaction runs as the
// role of the JSON actually sent as request.jwt.claims.
func TestHooksCannotChangeSharedClaims(t *testing.T) {
	t.Parallel()
	b := setup(t)
	verified := authctx.Claims{"sub": alice, "role": "authenticated",
		"app_metadata": map[string]any{"tenant_id": "t1", "roles": []any{"member"}}}
	want := verified.Clone()
	payload, err := json.Marshal(verified)
	if err != nil {
		t.Fatal(err)
	}
	shared := authctx.NewUser(verified, "shared-token", payload)

	var mu sync.Mutex
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	// pristine reports claims that differ from the verified ones.
	pristine := func(where string, c authctx.Claims) {
		if !reflect.DeepEqual(map[string]any(c), map[string]any(want)) {
			report("%s saw claims %v", where, c)
		}
	}
	// vandalize changes claims the ways a careless hook could.
	vandalize := func(c authctx.Claims) {
		c["role"] = "service_role"
		c["injected"] = true
		if m, ok := c["app_metadata"].(map[string]any); ok {
			m["tenant_id"] = "t2"
			if r, ok := m["roles"].([]any); ok {
				r[0] = "owner"
			}
		}
		c["sub"] = bob
		delete(c, "app_metadata")
	}
	// inTx reports a transaction that does not run as the verified caller.
	inTx := func(where string, c *Ctx) {
		var role, sent string
		if err := c.DB.QueryRow(c, `select current_user::text, current_setting('request.jwt.claims', true)`).Scan(&role, &sent); err != nil {
			report("%s: %v", where, err)
			return
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(sent), &m); err != nil || !reflect.DeepEqual(m, map[string]any(mustJSON(t, want))) {
			report("%s: request.jwt.claims %s", where, sent)
		}
		if role != "authenticated" || m["role"] != role {
			report("%s: runs as %q, request.jwt.claims role %v", where, role, m["role"])
		}
	}
	r := b.resource("todos", &Config{
		Caller: func(*http.Request) (authctx.Auth, error) { return shared, nil },
		// The authorizer is the first to see a request's claims: always
		// the verified ones. Hooks of the same request share its copy.
		Authorizer: AuthorizerFunc(func(ctx context.Context, req *AuthzRequest) (Decision, error) {
			pristine("authorizer", req.Caller.Claims())
			vandalize(req.Caller.Claims())
			return Allowed(), nil
		}),
		Permissions: map[Operation]string{OpGet: "todos.read", OpList: "todos.read"},
		Hooks: Hooks{
			AuthorizeFunc: func(c *Ctx, op Operation, tg *Target) error {
				inTx("AuthorizeFunc", c)
				vandalize(c.Auth.User.Claims)
				c.Auth.User.Claims["role"] = "postgres"
				return nil
			},
			AfterListFunc: func(c *Ctx, p *Page) (any, error) {
				inTx("AfterListFunc", c)
				vandalize(c.Auth.Claims())
				return p, nil
			},
		},
	})
	s := server(t, "todos", r)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				if res := do(t, s, "GET", "/api/todos/", "", ""); res.status != 200 {
					report("list: %s", res)
				}
			}
		}()
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	if !reflect.DeepEqual(map[string]any(shared.User.Claims), map[string]any(want)) {
		t.Errorf("the shared claims changed: %v", shared.User.Claims)
	}
	if res := do(t, s, "GET", "/api/todos/", "", ""); res.status != 200 {
		t.Errorf("after the burst: %s", res)
	}
}

// mustJSON round-trips v through JSON (numbers as float64, like the
// database's JSON read back).
func mustJSON(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
