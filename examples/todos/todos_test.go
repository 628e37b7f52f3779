package todos

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

const (
	tenantA = "aaaaaaaa-0000-0000-0000-000000000001"
	tenantB = "bbbbbbbb-0000-0000-0000-000000000002"
	ann     = "11111111-1111-1111-1111-111111111111" // tenant A
	ben     = "22222222-2222-2222-2222-222222222222" // tenant A
	cat     = "33333333-3333-3333-3333-333333333333" // tenant B
	guest   = "44444444-4444-4444-4444-444444444444" // anonymous sign-in, tenant A
)

// callers maps the X-User test header to verified auth states, standing
// in for authctx's resolver.
var callers = map[string]authctx.Auth{
	"ann":   authctx.NewUser(authctx.Claims{"sub": ann, "role": "authenticated", "tenant_id": tenantA}, "t", nil),
	"ben":   authctx.NewUser(authctx.Claims{"sub": ben, "role": "authenticated", "app_metadata": map[string]any{"tenant_id": tenantA}}, "t", nil),
	"cat":   authctx.NewUser(authctx.Claims{"sub": cat, "role": "authenticated", "tenant_id": tenantB}, "t", nil),
	"guest": authctx.NewUser(authctx.Claims{"sub": guest, "role": "authenticated", "tenant_id": tenantA, "is_anonymous": true}, "t", nil),
}

func setup(t *testing.T) (*httptest.Server, *rest.Resource) {
	t.Helper()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), Schema); err != nil {
		t.Fatal(err)
	}
	// The app owns the caller: here a header lookup; in production the
	// authctx middleware.
	caller := func(r *http.Request) (authctx.Auth, error) {
		if a, ok := callers[r.Header.Get("X-User")]; ok {
			return a, nil
		}
		return authctx.Anon(authctx.ReasonNone), nil
	}
	res, err := New(context.Background(), db.New(pool, nil), caller)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/todos/", http.StripPrefix("/todos", res))
	mux.Handle("/todos", http.StripPrefix("/todos", res))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s, res
}

func call(t *testing.T, s *httptest.Server, method, path, who, body string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.URL+path, rd)
	req.Header.Set("X-User", who)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(res.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s %s: %s", method, path, b)
		}
	}
	return res.StatusCode, m
}

func TestTodosApp(t *testing.T) {
	t.Parallel()
	s, res := setup(t)
	_ = res

	st, todo := call(t, s, "POST", "/todos", "ann", `{"title":"  write the report "}`)
	if st != 201 || todo["title"] != "write the report" || todo["tenant_id"] != tenantA || todo["owner_id"] != ann {
		t.Fatalf("create: %d %v", st, todo)
	}
	id := todo["id"].(string)
	for i := 0; i < 4; i++ {
		if st, m := call(t, s, "POST", "/todos", "ben", `{"title":"ben's todo"}`); st != 201 {
			t.Fatalf("ben create: %d %v", st, m)
		}
	}
	if st, m := call(t, s, "POST", "/todos", "cat", `{"title":"other tenant"}`); st != 201 {
		t.Fatalf("cat create: %d %v", st, m)
	}

	// Tenant A sees its five todos, tenant B only its own, guests nothing.
	walk := func(who, q string) int {
		n, cursor := 0, ""
		for pages := 0; pages < 10; pages++ {
			path := "/todos?limit=2" + q
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			st, page := call(t, s, "GET", path, who, "")
			if st != 200 {
				t.Fatalf("list %s: %d %v", who, st, page)
			}
			n += len(page["items"].([]any))
			next, _ := page["next_cursor"].(string)
			if next == "" {
				return n
			}
			cursor = next
		}
		t.Fatal("cursor did not end")
		return 0
	}
	if n := walk("ben", ""); n != 5 {
		t.Errorf("tenant A sees %d", n)
	}
	if n := walk("cat", ""); n != 1 {
		t.Errorf("tenant B sees %d", n)
	}
	if n := walk("guest", ""); n != 0 {
		t.Errorf("guest sees %d", n)
	}
	if st, _ := call(t, s, "GET", "/todos/"+id, "cat", ""); st != 404 {
		t.Errorf("other tenant get: %d", st)
	}
	if st, m := call(t, s, "POST", "/todos", "guest", `{"title":"x"}`); st != 403 {
		t.Errorf("guest create: %d %v", st, m)
	}

	// Validation before the repository; unsupported list queries are 400.
	if st, m := call(t, s, "POST", "/todos", "ann", `{"title":5}`); st != 400 || m["errors"] == nil {
		t.Errorf("bad title: %d %v", st, m)
	}
	if st, _ := call(t, s, "POST", "/todos", "ann", `{"title":"x","owner_id":"`+ben+`"}`); st != 400 {
		t.Errorf("read-only owner_id: %d", st)
	}
	if st, _ := call(t, s, "POST", "/todos", "ann", `{"title":"   "}`); st != 422 {
		t.Errorf("blank title: %d", st)
	}
	if st, _ := call(t, s, "GET", "/todos?title=eq.x", "ann", ""); st != 400 {
		t.Errorf("unsupported filter: %d", st)
	}

	// Actions: complete once (409 the second time), stats, filters.
	if st, m := call(t, s, "DELETE", "/todos/"+id, "ann", ""); st != 409 {
		t.Errorf("delete open todo: %d %v", st, m)
	}
	if st, m := call(t, s, "POST", "/todos/"+id+"/complete", "ben", ""); st != 200 || m["done"] != true {
		t.Errorf("complete: %d %v", st, m)
	}
	if st, _ := call(t, s, "POST", "/todos/"+id+"/complete", "ben", ""); st != 409 {
		t.Errorf("complete twice: %d", st)
	}
	if st, m := call(t, s, "GET", "/todos/stats", "ann", ""); st != 200 || m["open"] != float64(4) {
		t.Errorf("stats: %d %v", st, m)
	}
	if n := walk("ann", "&done=eq.true"); n != 1 {
		t.Errorf("done filter: %d", n)
	}
	if st, m := call(t, s, "PATCH", "/todos/"+id, "ann", `{"title":"renamed"}`); st != 200 || m["title"] != "renamed" || m["done"] != true {
		t.Errorf("update: %d %v", st, m)
	}
	// Only the owner may delete (policy), and only done todos (hook).
	// ben reads ann's todo (same team) but the delete policy refuses him:
	// 403, not 404.
	if st, _ := call(t, s, "DELETE", "/todos/"+id, "ben", ""); st != 403 {
		t.Errorf("delete by non-owner: %d", st)
	}
	if st, _ := call(t, s, "DELETE", "/todos/"+id, "ann", ""); st != 204 {
		t.Errorf("delete: %d", st)
	}
}
