package rest

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/telemetry"
)

// Regression: a panic in Config.Caller escaped ServeHTTP (net/http then
// drops the connection without a response). It must answer 500
// unexpected with a request id and nothing internal, like hook panics.
func TestCallerPanicIsUnexpected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs syncBuffer
	res := b.resource("items", &Config{
		Caller: func(*http.Request) (authctx.Auth, error) { panic("caller secret boom") },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	s := server(t, "items", res)
	r := do(t, s, "GET", "/api/items", "", "")
	if r.status != 500 || !strings.Contains(r.body, `"request_id"`) || strings.Contains(r.body, "boom") {
		t.Fatalf("got %s", r)
	}
	if !strings.Contains(logs.String(), "caller secret boom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

// Regression: without telemetry.Handler in front, rest took any
// X-Request-Id of up to 64 bytes (quotes, spaces, escapes) into
// unexpected-error bodies and error logs. It now keeps only ids
// telemetry.Handler would accept and draws one for any other.
func TestRequestIDFromHeaderIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("items", &Config{
		Caller: func(*http.Request) (authctx.Auth, error) { panic("boom") },
		Logger: slog.New(slog.DiscardHandler),
	})
	s := server(t, "items", res)
	for _, tc := range []struct{ sent, want string }{
		{"req-42:a/b+c=d_e.f", "req-42:a/b+c=d_e.f"},
		{`forged" id`, ""},
		{"tab\there", ""},
		{"é", ""},
	} {
		r := do(t, s, "GET", "/api/items", "", "", "X-Request-Id", tc.sent)
		m := decode(t, r.body)
		got, _ := m["request_id"].(string)
		if r.status != 500 || got == "" {
			t.Fatalf("%q: got %s", tc.sent, r)
		}
		if tc.want != "" && got != tc.want {
			t.Errorf("%q: request_id %q, want it kept", tc.sent, got)
		}
		if tc.want == "" && (got == tc.sent || !telemetry.ValidRequestID(got)) {
			t.Errorf("%q: request_id %q, want a generated one", tc.sent, got)
		}
	}
}

// Regression: a cancelled or timed-out request context surfaced as 500
// unexpected (logged as an error). It is 503 unavailable with
// Retry-After: the database did not fail, the request ran out of time.
func TestCancelledContextIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("items", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range []Operation{OpList, OpGet, OpDelete} {
		_, err := res.Do(ctx, &Call{Operation: op, Key: "1", Auth: user(alice)})
		p, ok := problem.As(err)
		if !ok || p.Status != 503 || p.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %v (%+v), want 503 with Retry-After", op, err, p)
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer dcancel()
	<-dctx.Done()
	if _, err := res.Do(dctx, &Call{Operation: OpList}); err == nil {
		t.Fatal("no error")
	} else if p, _ := problem.As(err); p.Status != 503 {
		t.Errorf("deadline: %v, want 503", err)
	}
}

// Regression: the handler read the query with URL.Query(), which drops
// pairs it cannot decode (and, past Go's parameter limit, all of them): a
// filter with a bad escape was silently ignored and the list answered
// every row. A query string that does not parse answers 400.
func TestUndecodableQueryIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name) values (1, 1, 1, 'a'), (2, 2, 2, 'b')`)
	s := server(t, "items", b.resource("items", nil))
	for _, q := range []string{"name=eq.%zz", "grp=eq.1&name=eq.%", "name=eq.a;grp=eq.2", "limit=1&" + strings.Repeat("grp=eq.1&", 10001)} {
		r := do(t, s, "GET", "/api/items?"+q, alice, "")
		if r.status != 400 {
			t.Errorf("%.40s…: %.200s, want 400", q, r)
		}
	}
	if p := getPage(t, s, "/api/items?name=eq.%61", alice); len(p.Items) != 1 {
		t.Errorf("escaped filter: %v", p.Items)
	}
}
