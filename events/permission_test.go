package events_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/rest"
)

// TestReadPermissionGuardsStream: a resource whose list needs a permission
// (decided row by row by the authorizer) gets no stream, since events are
// filtered by row-level security alone: before, a caller whose list came
// back empty received every row of the tenant as events.
func TestReadPermissionGuardsStream(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	az, err := authz.Claims(authz.Rules{"todos.read": authz.Role("reader")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{
		Select:      []string{"id", "tenant_id", "owner_id", "title", "done"},
		Permissions: map[rest.Operation]string{rest.OpList: "todos.read", rest.OpGet: "todos.read"},
		Authorizer:  az,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv}); err == nil ||
		!strings.Contains(err.Error(), `permission "todos.read"`) {
		t.Fatalf("stream of a resource whose reads need a permission: %v, want an error naming it", err)
	}
	// The list the stream would bypass: alice, without the permission, gets
	// no rows although row-level security admits her.
	mux := http.NewServeMux()
	mux.Handle("/guarded/", http.StripPrefix("/guarded", res))
	srv := httptest.NewServer(b.rv.Middleware(mux))
	t.Cleanup(srv.Close)
	b.create(b.token(bob, tenantA, false), "for readers only")
	for tok, want := range map[string]string{
		b.token(alice, tenantA, false): `"items":[]`,
		b.tokenWith(bob, map[string]any{"tenant_id": tenantA, "roles": []string{"reader"}}): "for readers only",
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/guarded/", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("list: %d %s, want %s", resp.StatusCode, body, want)
		}
	}
}

// TestReadHooksGuardStream: a resource whose list or get runs Go hooks
// that may hide rows or columns gets no stream unless the caller says the
// hooks hide nothing; hooks of writes alone do not matter. Before, the
// redacted column of AfterGetFunc reached every subscriber in the events.
func TestReadHooksGuardStream(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	redact := func(c *rest.Ctx, row rest.Row) (any, error) {
		row["title"] = "[redacted]"
		return row, nil
	}
	cols := []string{"id", "tenant_id", "owner_id", "title", "done"}
	for name, h := range map[string]rest.Hooks{
		"AfterGetFunc":  {AfterGetFunc: redact},
		"AfterListFunc": {AfterListFunc: func(c *rest.Ctx, p *rest.Page) (any, error) { return p, nil }},
		"AuthorizeFunc": {AuthorizeFunc: func(c *rest.Ctx, op rest.Operation, tg *rest.Target) error { return nil }},
	} {
		res, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{Select: cols, Hooks: h})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv}); err == nil ||
			!strings.Contains(err.Error(), "runs Go hooks") {
			t.Fatalf("%s: stream built (%v), want an error naming the hooks", name, err)
		}
		if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv, IgnoreReadHooks: true}); err != nil {
			t.Fatalf("%s with IgnoreReadHooks: %v", name, err)
		}
	}
	// Write hooks change nothing a reader sees through the stream's rows.
	res, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{Select: cols, Hooks: rest.Hooks{
		AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) { return row, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv}); err != nil {
		t.Fatalf("write hooks only: %v", err)
	}
	// What the refusal protects: the get answers the redacted title.
	mux := http.NewServeMux()
	hooked, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{Select: cols, Hooks: rest.Hooks{AfterGetFunc: redact}})
	if err != nil {
		t.Fatal(err)
	}
	mux.Handle("/hooked/", http.StripPrefix("/hooked", hooked))
	srv := httptest.NewServer(b.rv.Middleware(mux))
	t.Cleanup(srv.Close)
	tok := b.token(bob, tenantA, false)
	id := b.create(tok, "private title")
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.URL+"/hooked/"+strconv.FormatInt(id, 10), nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.Contains(string(body), "private title") || !strings.Contains(string(body), "[redacted]") {
		t.Fatalf("get through the hook: %d %s", resp.StatusCode, body)
	}
}

// TestStreamNeedsReads: a resource that serves no list and no get (a
// write-only API) gets no table-event stream: the stream would be the
// only read of its rows.
func TestStreamNeedsReads(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	res, err := rest.NewResource(t.Context(), b.db, "todos", &rest.Config{
		Select:     []string{"id", "tenant_id", "owner_id", "title", "done"},
		Operations: []rest.Operation{rest.OpCreate},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.hub.Stream(t.Context(), res, &events.StreamOpts{Table: true, Resolver: b.rv}); err == nil ||
		!strings.Contains(err.Error(), "neither list nor get") {
		t.Fatalf("stream of a create-only resource: %v, want an error saying it serves no read", err)
	}
}
