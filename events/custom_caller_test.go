package events_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestStreamUsesTheResourcesCaller: a resource whose callers a
// rest.Config.Caller resolves admits exactly those callers on its stream
// too. The stream used to read the authctx middleware's caller instead, so
// a Bearer token the resource's own rule ignores was admitted to its events,
// and the callers the rule names were refused.
func TestStreamUsesTheResourcesCaller(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	// The application's rule: the caller is named by X-App-User; a
	// Bearer header means nothing to this resource.
	caller := func(r *http.Request) (authctx.Auth, error) {
		switch r.Header.Get("X-App-User") {
		case "":
			return authctx.Anon(authctx.ReasonNone), nil
		case "alice":
			return authctx.NewUser(authctx.Claims{"sub": alice, "role": "authenticated", "tenant_id": tenantA}, "", nil), nil
		case "expired":
			return authctx.NewUser(authctx.Claims{"sub": alice, "role": "authenticated", "tenant_id": tenantA,
				"exp": float64(time.Now().Add(-time.Hour).Unix())}, "", nil), nil
		case "refused":
			return authctx.Auth{}, problem.New(problem.KindUnauthorized, "Sign in again.")
		}
		return authctx.Auth{}, errors.New("lookup failed for secret-app-key-123")
	}
	// Mounted behind the resolver's middleware, which does accept the
	// Bearer token: the resource's rule still decides.
	srv := callerStream(t, b, caller)

	bearer := subscribeTo(t, srv.URL, "Authorization", "Bearer "+b.token(alice, tenantA, false))
	if bearer.status != 401 {
		t.Errorf("Bearer token the resource's caller ignores: %d %s, want 401", bearer.status, bearer.body)
	}
	failed := subscribeTo(t, srv.URL, "X-App-User", "mallory")
	if failed.status != 500 || strings.Contains(failed.body, "secret-app-key") {
		t.Errorf("caller function error: %d %s, want 500 without the error's text", failed.status, failed.body)
	}

	// The function's own problem answers as on the resource's routes, and
	// a token whose exp has passed opens no stream.
	if r := subscribeTo(t, srv.URL, "X-App-User", "refused"); r.status != 401 || !strings.Contains(r.body, "Sign in again.") {
		t.Errorf("caller function's 401: %d %s", r.status, r.body)
	}
	if r := subscribeTo(t, srv.URL, "X-App-User", "expired"); r.status != 401 {
		t.Errorf("expired custom caller: %d %s, want 401", r.status, r.body)
	}

	c := subscribeTo(t, srv.URL, "X-App-User", "alice")
	if c.status != 200 {
		t.Fatalf("the caller the resource's rule names: %d %s", c.status, c.body)
	}
	id := b.create(b.token(alice, tenantA, false), "seen through the app's caller")
	evs := c.expect("todos.created")
	if k := evs[0].Data.Key; k == nil || *k != strconv.FormatInt(id, 10) {
		t.Errorf("event key %v, want %d", k, id)
	}
}

// TestStreamJudgesTheSessionCookie: a Config.Caller that passes on the
// middleware's caller, resolved from the session cookie, keeps the
// stream's cross-site check: a cross-site page may not open a stream on
// the visitor's session.
func TestStreamJudgesTheSessionCookie(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	srv := callerStream(t, b, func(r *http.Request) (authctx.Auth, error) { return authctx.AuthFrom(r.Context()), nil })
	cookie := b.sessionCookie(b.token(alice, tenantA, false))
	if c := subscribeTo(t, srv.URL, "Cookie", cookie, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example"); c.status != 403 {
		t.Errorf("cross-site stream on the session cookie: %d %s, want 403", c.status, c.body)
	}
	if c := subscribeTo(t, srv.URL, "Cookie", cookie, "Sec-Fetch-Site", "same-origin"); c.status != 200 {
		t.Errorf("same-origin stream on the session cookie: %d %s, want 200", c.status, c.body)
	}
}

// callerStream serves, behind the resolver's middleware, the stream of a
// todos resource whose callers caller resolves.
func callerStream(t *testing.T, b *bundle, caller func(*http.Request) (authctx.Auth, error)) *httptest.Server {
	t.Helper()
	res, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{
		Select: []string{"id", "tenant_id", "owner_id", "title", "done"}, Caller: caller})
	if err != nil {
		t.Fatal(err)
	}
	st, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.rv.Middleware(st))
	t.Cleanup(srv.Close)
	return srv
}
