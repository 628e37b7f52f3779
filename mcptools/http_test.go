package mcptools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
)

// app serves REST under /api, MCP under /mcp and the RFC 9728 metadata,
// on one real httptest server, with one caller function for both.
type app struct {
	*httptest.Server
	cookieSeen atomic.Bool
}

const metadataPath = "/.well-known/oauth-protected-resource/mcp"

func (b *bundle) app(streamable *mcp.StreamableHTTPOptions) *app {
	b.t.Helper()
	return b.appWith(streamable, nil)
}

// appWith is app with configure applied to the http.Server before it
// starts (timeouts).
func (b *bundle) appWith(streamable *mcp.StreamableHTTPOptions, configure func(*http.Server)) *app {
	b.t.Helper()
	a := &app{}
	mux := http.NewServeMux()
	a.Server = httptest.NewUnstartedServer(mux)
	if configure != nil {
		configure(a.Config)
	}
	a.Start()
	b.t.Cleanup(a.Close)
	caller := func(r *http.Request) authctx.Auth {
		if r.Header.Get("Cookie") != "" {
			a.cookieSeen.Store(true)
		}
		return b.keys.caller(r)
	}
	h, err := b.srv.Handler(&mcptools.HTTPConfig{
		Caller:              caller, // b.keys.rv with a probe: Resolver alone is TestHTTPResolverOptions
		Allow:               []authctx.Allow{authctx.AllowUser},
		ResourceMetadataURL: a.URL + metadataPath,
		Streamable:          streamable,
	})
	if err != nil {
		b.t.Fatal(err)
	}
	mux.Handle("/mcp", h)
	mux.Handle("/api/", b.restHandler())
	mux.Handle(metadataPath, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               a.URL + "/mcp",
		AuthorizationServers:   []string{"https://project.supabase.co/auth/v1"},
		BearerMethodsSupported: []string{"header"},
	}))
	return a
}

// bearer is an http.RoundTripper adding the current token of a caller.
type bearer struct {
	mu    sync.Mutex
	token string
	extra http.Header
}

func (br *bearer) set(tok string) { br.mu.Lock(); br.token = tok; br.mu.Unlock() }

func (br *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	br.mu.Lock()
	tok := br.token
	br.mu.Unlock()
	r = r.Clone(r.Context())
	if tok != "" {
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, vs := range br.extra {
		r.Header[k] = vs
	}
	return http.DefaultTransport.RoundTrip(r)
}

// httpSession connects the SDK's client over Streamable HTTP.
func httpSession(t *testing.T, url string, br *bearer) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: br}, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

// TestHTTPTransport runs the tools over Streamable HTTP with real ES256
// Bearer tokens verified against a JWKS served by httptest, next to the
// REST routes of the same resources.
func TestHTTPTransport(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts *mcp.StreamableHTTPOptions
	}{
		{"stateful", nil},
		{"stateless json", &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			a := b.app(mode.opts)
			aliceTok, bobTok := b.keys.sign(alice), b.keys.sign(bob)

			cs, err := httpSession(t, a.URL+"/mcp", &bearer{token: aliceTok})
			if err != nil {
				t.Fatal(err)
			}
			lr, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(lr.Tools) != 10 {
				t.Fatalf("tools: %v %v", err, lr)
			}

			// Created over MCP, read over REST and MCP: the same row.
			row := ok(t, call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": "over http", "priority": 1}}))
			id := row["id"].(string)
			viaREST := do(t, http.MethodGet, a.URL+"/api/todos/"+id, aliceTok, "")
			if viaREST.status != http.StatusOK {
				t.Fatalf("REST get: %d %s", viaREST.status, viaREST.body)
			}
			viaMCP := call(t, cs, "getTodo", map[string]any{"id": id})
			if got := text(t, viaMCP); got != viaREST.body {
				t.Fatalf("MCP row %s\nREST row %s", got, viaREST.body)
			}
			if !jsonEqual(t, mustMarshal(t, row), viaREST.body) {
				t.Fatalf("created %v, REST %s", row, viaREST.body)
			}
			// A row created over REST is listed over MCP.
			if r := do(t, http.MethodPost, a.URL+"/api/todos", aliceTok, `{"title":"over rest"}`); r.status != http.StatusCreated {
				t.Fatalf("REST create: %d %s", r.status, r.body)
			}
			restList := do(t, http.MethodGet, a.URL+"/api/todos?order=title.asc", aliceTok, "")
			if got := text(t, call(t, cs, "listTodos", map[string]any{"order": "title.asc"})); got != restList.body {
				t.Fatalf("MCP list %s\nREST list %s", got, restList.body)
			}

			// Bob over MCP: RLS hides alice's row, exactly as over REST.
			bcs, err := httpSession(t, a.URL+"/mcp", &bearer{token: bobTok})
			if err != nil {
				t.Fatal(err)
			}
			body, p := problemOf(t, call(t, bcs, "getTodo", map[string]any{"id": id}))
			rr := do(t, http.MethodGet, a.URL+"/api/todos/"+id, bobTok, "")
			if p.Kind != problem.KindNotFound || rr.status != http.StatusNotFound || body+"\n" != rr.body {
				t.Fatalf("bob: MCP %s, REST %d %s", body, rr.status, rr.body)
			}
			if got := ok(t, call(t, bcs, "listTodos", nil))["items"].([]any); len(got) != 0 {
				t.Fatalf("bob lists %v", got)
			}
			// Permission denied over MCP/HTTP as over REST.
			body, p = problemOf(t, call(t, cs, "deleteTodo", map[string]any{"id": id}))
			rr = do(t, http.MethodDelete, a.URL+"/api/todos/"+id, aliceTok, "")
			if p.Code != problem.CodePermissionDenied || body+"\n" != rr.body {
				t.Fatalf("delete: MCP %s, REST %d %s", body, rr.status, rr.body)
			}
		})
	}
}

// TestHTTPCallerPerRequest: every HTTP request is resolved on its own, so
// a client that rotates its token keeps its session; a session opened by
// alice is alice's: bob's token on it finds no session (404).
func TestHTTPCallerPerRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.app(nil)
	br := &bearer{token: b.keys.sign(alice)}
	cs, err := httpSession(t, a.URL+"/mcp", br)
	if err != nil {
		t.Fatal(err)
	}
	id := ok(t, call(t, cs, "createTodo", map[string]any{"data": map[string]any{"title": "a"}}))["id"].(string)
	br.set(b.keys.sign(alice, "session_id", "rotated"))
	if got := ok(t, call(t, cs, "getTodo", map[string]any{"id": id})); got["id"] != id {
		t.Fatalf("after rotation: %v", got)
	}
	br.set(b.keys.sign(bob))
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "getTodo", Arguments: map[string]any{"id": id}}); err == nil ||
		!strings.Contains(err.Error(), "session not found") && !strings.Contains(err.Error(), "404") {
		t.Fatalf("bob's call on alice's session: %v", err)
	}
	// (The SDK client drops a session answered 404; that alice keeps it on
	// the server is shown by cmd/tablegate's TestAttackMCPSessionHijack.)
	br.set(b.keys.sign(alice))
	if cs, err = httpSession(t, a.URL+"/mcp", br); err != nil {
		t.Fatal(err)
	}
	// A token that stops verifying mid-session is refused by the guard
	// at the HTTP layer: the call fails, nothing runs.
	br.set(b.keys.sign(alice) + "x")
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "getTodo", Arguments: map[string]any{"id": id}}); err == nil {
		t.Fatal("call with a broken token succeeded")
	}
}

// TestHTTPRefusals: the guard answers before the SDK sees the request,
// with the same Problem Details as a guarded REST route.
func TestHTTPRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.app(nil)
	other := newKeys(t) // a key the JWKS does not hold
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

	for _, c := range []struct {
		name   string
		token  string
		cookie string
		apikey string
		status int
		code   problem.Code
	}{
		{name: "no credential", status: 401, code: problem.CodeAuthRequired},
		{name: "session cookie only (no cookie path)", cookie: "alice", status: 401, code: problem.CodeAuthRequired},
		{name: "token from another key", token: other.sign(alice), status: 401, code: problem.CodeTokenSignatureInvalid},
		{name: "garbage token", token: "not.a.jwt", status: 401, code: problem.CodeTokenMalformed},
		{name: "anonymous sign-in", token: b.keys.sign(anonymous, "is_anonymous", true), status: 403, code: problem.CodeAnonymousUser},
		{name: "secret key (service) not in the allow list", apikey: testSecretKey, status: 403, code: problem.CodeCallerNotAllowed},
	} {
		t.Run(c.name, func(t *testing.T) {
			cred := http.Header{}
			if c.token != "" {
				cred.Set("Authorization", "Bearer "+c.token)
			}
			if c.apikey != "" {
				cred.Set("apikey", c.apikey)
			}
			if c.cookie != "" {
				cred.Set("Cookie", sessionCookie(b.keys.sign(alice)))
			}
			// The SDK's client cannot connect.
			if _, err := httpSession(t, a.URL+"/mcp", &bearer{extra: cred}); err == nil {
				t.Fatal("SDK client connected")
			}
			req, _ := http.NewRequest(http.MethodPost, a.URL+"/mcp", strings.NewReader(initialize))
			req.Header = cred.Clone()
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var p problem.Problem
			if err := json.NewDecoder(res.Body).Decode(&p); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != c.status || p.Code != c.code || res.Header.Get("Content-Type") != problem.MediaType {
				t.Fatalf("%d %s %+v", res.StatusCode, res.Header.Get("Content-Type"), p)
			}
			// The same refusal as the guarded REST route, plus the metadata.
			rreq, _ := http.NewRequest(http.MethodGet, a.URL+"/api/todos", nil)
			rreq.Header = cred.Clone()
			rres, err := http.DefaultClient.Do(rreq)
			if err != nil {
				t.Fatal(err)
			}
			rres.Body.Close()
			if c.cookie != "" {
				// The REST routes take the same cookie: alice.
				if rres.StatusCode != http.StatusOK {
					t.Fatalf("REST with the session cookie answered %d", rres.StatusCode)
				}
				return
			}
			if rres.StatusCode != c.status {
				t.Fatalf("REST answered %d", rres.StatusCode)
			}
			if c.status == 401 {
				restChallenge := rres.Header.Get("WWW-Authenticate")
				sep := " "
				if strings.Contains(restChallenge, "=") {
					sep = ", "
				}
				want := restChallenge + sep + `resource_metadata="` + a.URL + metadataPath + `"`
				if got := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(restChallenge, "Bearer") || got != want {
					t.Fatalf("WWW-Authenticate %q, want %q", got, want)
				}
			}
		})
	}
	if a.cookieSeen.Load() {
		t.Error("the MCP caller function saw a Cookie header")
	}

	// The protected resource metadata named in WWW-Authenticate is served.
	md := do(t, http.MethodGet, a.URL+metadataPath, "", "")
	var meta oauthex.ProtectedResourceMetadata
	mustJSON(t, md.body, &meta)
	if md.status != 200 || meta.Resource != a.URL+"/mcp" || len(meta.AuthorizationServers) != 1 {
		t.Fatalf("metadata %d %s", md.status, md.body)
	}
}

// TestHTTPForgedCallHeader: a client cannot choose the registry id the
// adapter uses to find the caller of its request.
func TestHTTPForgedCallHeader(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.app(nil)
	br := &bearer{token: b.keys.sign(bob), extra: http.Header{"Tablegate-Mcp-Call": {"forged"}}}
	cs, err := httpSession(t, a.URL+"/mcp", br)
	if err != nil {
		t.Fatal(err)
	}
	if got := ok(t, call(t, cs, "listTodos", nil)); len(got["items"].([]any)) != 0 {
		t.Fatalf("bob lists %v", got)
	}
}

// TestNoCaller: a server mounted without the adapter's transports (the
// SDK's handler directly) knows no caller and refuses every call.
func TestNoCaller(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return b.srv.MCP() }, nil))
	t.Cleanup(s.Close)
	cs, err := httpSession(t, s.URL, &bearer{token: b.keys.sign(alice)})
	if err != nil {
		t.Fatal(err)
	}
	_, p := problemOf(t, call(t, cs, "listTodos", nil))
	if p.Status != http.StatusUnauthorized || p.Code != problem.CodeAuthRequired {
		t.Fatalf("%+v", p)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestHTTPResolverOptions: HTTPConfig with the resolver and an allow list
// only — the configuration an application writes — admitting users and
// the secret key's service caller, exactly as authctx.Guard would.
func TestHTTPResolverOptions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.srv.Handler(&mcptools.HTTPConfig{}); !errors.Is(err, mcptools.ErrConfig) {
		t.Fatalf("no resolver: %v", err)
	}
	h, err := b.srv.Handler(&mcptools.HTTPConfig{Resolver: b.keys.rv, Allow: []authctx.Allow{authctx.AllowUser, authctx.AllowService}})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	b.exec(`insert into todos (owner_id, title) values ($1, 'a'), ($2, 'b')`, alice, bob)

	svc, err := httpSession(t, s.URL, &bearer{extra: http.Header{"Apikey": {testSecretKey}}})
	if err != nil {
		t.Fatal(err)
	}
	if items := ok(t, call(t, svc, "listTodos", nil))["items"].([]any); len(items) != 2 {
		t.Fatalf("service lists %v", items)
	}
	usr, err := httpSession(t, s.URL, &bearer{token: b.keys.sign(bob)})
	if err != nil {
		t.Fatal(err)
	}
	if items := ok(t, call(t, usr, "listTodos", nil))["items"].([]any); len(items) != 1 || items[0].(map[string]any)["title"] != "b" {
		t.Fatalf("bob lists %v", items)
	}
	if _, err := httpSession(t, s.URL, &bearer{token: b.keys.sign(anonymous, "is_anonymous", true)}); err == nil {
		t.Fatal("anonymous sign-in admitted")
	}
}

// TestHTTPConcurrentCallers: concurrent calls of different callers over
// one server never see each other's rows (each call finds the caller of
// its own HTTP request).
func TestHTTPConcurrentCallers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.app(&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	b.exec(`insert into todos (owner_id, title) values ($1, 'alice'), ($2, 'bob')`, alice, bob)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for _, who := range []string{alice, bob} {
		cs, err := httpSession(t, a.URL+"/mcp", &bearer{token: b.keys.sign(who)})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{alice: "alice", bob: "bob"}[who]
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 5 {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "listTodos"})
					if err != nil || res.IsError {
						errs <- fmt.Sprint(err, res)
						return
					}
					var page struct{ Items []map[string]any }
					if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &page); err != nil ||
						len(page.Items) != 1 || page.Items[0]["title"] != want {
						errs <- fmt.Sprintf("%s saw %v", want, page.Items)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestHTTPStandaloneStreamOutlivesServerTimeouts: the server's read and
// write timeouts bound every request but a session's standalone GET
// stream, which lives as long as its session: the handler lifts both for
// that response only. The stream stays open past them and still delivers
// what the server sends on it (a tools/list_changed notification); with
// the write deadline left in place, that write fails and the stream ends.
func TestHTTPStandaloneStreamOutlivesServerTimeouts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const timeout = time.Second // long enough for the requests before the stream on a loaded machine
	a := b.appWith(nil, func(s *http.Server) { s.ReadTimeout, s.WriteTimeout = timeout, timeout })
	tok := b.keys.sign(alice)
	send := func(method, sid, body string) *http.Response {
		t.Helper()
		contentType := ""
		if body != "" {
			contentType = "application/json"
		}
		res, err := http.DefaultClient.Do(mcpRequest(a.URL+"/mcp", method, tok, sid, contentType, body))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := send(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`)
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, sid)
	}
	res = send(http.MethodPost, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d", res.StatusCode)
	}

	stream := send(http.MethodGet, sid, "")
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK || !strings.HasPrefix(stream.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET stream: %d %s", stream.StatusCode, stream.Header.Get("Content-Type"))
	}
	got := make(chan string, 1)
	go func() {
		var seen strings.Builder
		buf := make([]byte, 4096)
		for {
			n, err := stream.Body.Read(buf)
			seen.Write(buf[:n])
			if strings.Contains(seen.String(), "notifications/tools/list_changed") {
				got <- "list_changed"
				return
			}
			if err != nil {
				got <- fmt.Sprintf("stream ended: %v after %q", err, seen.String())
				return
			}
		}
	}()
	select {
	case g := <-got:
		t.Fatalf("before the server sent anything: %s", g)
	case <-time.After(2*timeout + timeout/2):
	}
	// Past both timeouts: a write on the stream still goes through.
	b.srv.MCP().AddTool(&mcp.Tool{Name: "late", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	select {
	case g := <-got:
		if g != "list_changed" {
			t.Fatal(g)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed on the stream within 10s")
	}
}
