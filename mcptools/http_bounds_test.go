package mcptools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/mcptools"
	"github.com/tablegate/tablegate/problem"
)

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// mcpRequest builds a raw Streamable HTTP request as the bearer of tok,
// in session sid when not empty.
func mcpRequest(url, method, tok, sid, contentType, body string) *http.Request {
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return req
}

// rawMCP sends mcpRequest's request and reads the whole answer.
func rawMCP(t *testing.T, url, method, tok, sid, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	res, err := http.DefaultClient.Do(mcpRequest(url, method, tok, sid, contentType, body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// initSession opens a session as the bearer of tok and returns its id.
func initSession(t *testing.T, url, tok string) string {
	t.Helper()
	res, body := rawMCP(t, url, http.MethodPost, tok, "", "application/json", rawInitialize)
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", res.StatusCode, body)
	}
	return sid
}

// boundedApp serves MCP at /mcp with the given bounds, to users and
// (with anon) callers without a session.
func boundedApp(t *testing.T, b *bundle, maxSessions int, timeout time.Duration, anon ...bool) string {
	t.Helper()
	allow := []authctx.Allow{authctx.AllowUser}
	if len(anon) > 0 && anon[0] {
		allow = append(allow, authctx.AllowAnon)
	}
	h, err := b.srv.Handler(&mcptools.HTTPConfig{
		Caller:               b.keys.caller,
		Allow:                allow,
		MaxSessionsPerCaller: maxSessions,
		Streamable:           &mcp.StreamableHTTPOptions{SessionTimeout: timeout},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

// eventually retries f until it holds or 10 s pass.
func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !f(); {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(20 * time.Millisecond) // sleep: poll step of the bounded wait around it
	}
}

// TestHTTPSessionsBounded: a caller holds at most MaxSessionsPerCaller
// sessions; a place comes back when a session is deleted or idles out,
// and other callers are not affected.
func TestHTTPSessionsBounded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 2, 400*time.Millisecond)
	aliceTok, bobTok := b.keys.sign(alice), b.keys.sign(bob)
	open := func(tok string) (int, string, *http.Response, []byte) {
		res, body := rawMCP(t, url, http.MethodPost, tok, "", "application/json", rawInitialize)
		return res.StatusCode, res.Header.Get("Mcp-Session-Id"), res, body
	}

	var sids []string
	for range 2 {
		status, sid, _, body := open(aliceTok)
		if status != http.StatusOK || sid == "" {
			t.Fatalf("initialize: %d %q %s", status, sid, body)
		}
		sids = append(sids, sid)
	}
	status, sid, res, body := open(aliceTok)
	var p problem.Problem
	mustJSON(t, string(body), &p)
	if status != http.StatusTooManyRequests || sid != "" || p.Kind != problem.KindTooManyRequests ||
		res.Header.Get("Retry-After") == "" || res.Header.Get("Content-Type") != problem.MediaType {
		t.Fatalf("third session: %d %q %v %s", status, sid, res.Header, body)
	}
	// Another caller has places of its own.
	if status, sid, _, body := open(bobTok); status != http.StatusOK || sid == "" {
		t.Fatalf("bob: %d %s", status, body)
	}

	// A deleted session gives its place back.
	if res, body := rawMCP(t, url, http.MethodDelete, aliceTok, sids[0], "", ""); res.StatusCode >= 300 {
		t.Fatalf("DELETE: %d %s", res.StatusCode, body)
	}
	eventually(t, "a place after DELETE", func() bool {
		status, sid, _, _ := open(aliceTok)
		if status == http.StatusOK {
			sids[0] = sid
		}
		return status == http.StatusOK
	})

	// Idle sessions time out: both places come back, and a timed-out
	// session answers 404 as a Problem. A probe that gets only one place
	// deletes the session it opened, so that it does not hold the place
	// it is waiting for.
	eventually(t, "both places after the idle timeout", func() bool {
		var opened []string
		for range 2 {
			if status, sid, _, _ := open(aliceTok); status == http.StatusOK {
				opened = append(opened, sid)
			}
		}
		if len(opened) == 2 {
			return true
		}
		for _, sid := range opened {
			rawMCP(t, url, http.MethodDelete, aliceTok, sid, "", "")
		}
		return false
	})
	res, body = rawMCP(t, url, http.MethodPost, aliceTok, sids[1], "application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if res.StatusCode != http.StatusNotFound || res.Header.Get("Content-Type") != problem.MediaType {
		t.Fatalf("timed-out session: %d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
	}
}

// TestHTTPTransportErrorsAreProblems: the SDK's own refusals reach the
// client as Problem Details that quote nothing of the request, and an
// unknown session looks exactly like another caller's.
func TestHTTPTransportErrorsAreProblems(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 0, 0)
	aliceTok, bobTok := b.keys.sign(alice), b.keys.sign(bob)
	aliceSID := initSession(t, url, aliceTok)
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

	var notFound []string
	for _, c := range []struct {
		name, method, sid, contentType, body string
		status                               int
		allow                                string
	}{
		{"GET without a session", http.MethodGet, "", "", "", http.StatusBadRequest, ""},
		{"PUT", http.MethodPut, "", "", "", http.StatusMethodNotAllowed, "GET, POST, DELETE"},
		{"text body", http.MethodPost, "", "text/plain", "secret-looking-input", http.StatusUnsupportedMediaType, ""},
		{"malformed JSON", http.MethodPost, "", "application/json", `{secret-looking-input`, http.StatusBadRequest, ""},
		{"unknown session", http.MethodPost, "no-such-session", "application/json", list, http.StatusNotFound, ""},
		{"another caller's session", http.MethodPost, aliceSID, "application/json", list, http.StatusNotFound, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, body := rawMCP(t, url, c.method, bobTok, c.sid, c.contentType, c.body)
			var p problem.Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatalf("%d %s: %v", res.StatusCode, body, err)
			}
			if res.StatusCode != c.status || p.Status != c.status || res.Header.Get("Content-Type") != problem.MediaType {
				t.Fatalf("%d %s %s", res.StatusCode, res.Header.Get("Content-Type"), body)
			}
			if strings.Contains(string(body), "secret-looking-input") {
				t.Fatalf("the problem quotes the request: %s", body)
			}
			if got := res.Header.Values("Allow"); c.allow != "" && (len(got) != 1 || got[0] != c.allow) {
				t.Fatalf("Allow %q", got)
			}
			if c.status == http.StatusNotFound {
				notFound = append(notFound, string(body))
			}
		})
	}
	if len(notFound) != 2 || notFound[0] != notFound[1] {
		t.Fatalf("an unknown session and another caller's answer differently: %q", notFound)
	}
}

// TestHTTPStandaloneStreamEndsAtTokenExpiry: the session's GET stream,
// free of the server's timeouts, still ends when its caller's token
// expires.
func TestHTTPStandaloneStreamEndsAtTokenExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 0, 0)
	exp := time.Now().Add(3 * time.Second)
	tok := b.keys.sign(alice, "exp", exp.Unix())
	sid := initSession(t, url, tok)
	if res, body := rawMCP(t, url, http.MethodPost, tok, sid, "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); res.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", res.StatusCode, body)
	}
	stream, err := http.DefaultClient.Do(mcpRequest(url, http.MethodGet, tok, sid, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if stream.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", stream.StatusCode)
	}
	ended := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, stream.Body)
		ended <- time.Now()
	}()
	select {
	case at := <-ended:
		// The token's exp has a resolution of one second.
		if at.Before(exp.Truncate(time.Second)) {
			t.Fatalf("the stream ended %v before the token expired", exp.Sub(at))
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the stream outlived its caller's token by 12s")
	}
}

// TestHTTPSessionBoundToOwnerThrough404: the SDK answers 404 inside a
// live session too (an unknown method); that neither frees the session's
// place nor unbinds it from its owner.
func TestHTTPSessionBoundToOwnerThrough404(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 1, 0)
	aliceTok, bobTok := b.keys.sign(alice), b.keys.sign(bob)
	sid := initSession(t, url, aliceTok)
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		req := mcpRequest(url, http.MethodPost, aliceTok, sid, "application/json", `{"jsonrpc":"2.0","id":9,"method":"no/such/method"}`)
		req.Header.Set("Mcp-Protocol-Version", version)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if res, body := rawMCP(t, url, http.MethodPost, aliceTok, "", "application/json", rawInitialize); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a second session past a cap of 1: %d %s", res.StatusCode, body)
	}
	if res, body := rawMCP(t, url, http.MethodPost, bobTok, sid, "application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); res.StatusCode != http.StatusNotFound {
		t.Fatalf("bob in alice's session: %d %s", res.StatusCode, body)
	}
	if res, body := rawMCP(t, url, http.MethodPost, aliceTok, sid, "application/json", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); res.StatusCode != http.StatusOK {
		t.Fatalf("alice in her session: %d %s", res.StatusCode, body)
	}
}

// TestHTTPStreamRefusesTokenInLeeway: a GET stream with a token past exp,
// inside the verifier's clock-skew leeway, gets 401 rather than a stream
// that ends as it opens.
func TestHTTPStreamRefusesTokenInLeeway(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 0, 0)
	tok := b.keys.sign(alice, "exp", time.Now().Add(-5*time.Second).Unix())
	sid := initSession(t, url, tok)
	res, body := rawMCP(t, url, http.MethodGet, tok, sid, "", "")
	if res.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "TOKEN_EXPIRED") ||
		!strings.Contains(res.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Fatalf("GET stream inside the leeway: %d %v %s", res.StatusCode, res.Header, body)
	}
}

// TestHTTPAnonSessionsByAddress: callers without a subject, when
// admitted, are capped by client address: one cannot fill the places of
// all the others.
func TestHTTPAnonSessionsByAddress(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 1, 0, true)
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	open := func(c *http.Client) int {
		res, err := c.Do(mcpRequest(url, http.MethodPost, "", "", "application/json", rawInitialize))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	one, two := from("127.0.0.1"), from("127.0.0.2")
	if st := open(one); st != http.StatusOK {
		t.Fatalf("first anonymous session: %d", st)
	}
	if st := open(one); st != http.StatusTooManyRequests {
		t.Fatalf("second from the same address: %d", st)
	}
	if st := open(two); st != http.StatusOK {
		t.Fatalf("first from another address: %d", st)
	}
}

// TestHTTPBatchesRefused: a JSON-RPC batch is refused with a 400 Problem
// before the SDK runs any of it, in a session or opening one, with or
// without a protocol version header (the SDK ran batches whose request
// named none: one HTTP request could carry thousands of tool calls). One
// message per request still works, leading whitespace included.
func TestHTTPBatchesRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 1, time.Minute)
	tok := b.keys.sign(alice)
	sid := initSession(t, url, tok)
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"listTodos","arguments":{"limit":1}}}`
	batch := " \n\t[" + fmt.Sprintf(call, 7) + "," + fmt.Sprintf(call, 8) + "]"
	for _, tc := range []struct {
		name, sid string
		version   bool
	}{{"in a session, no version header", sid, false}, {"in a session, 2025-06-18", sid, true}, {"opening a session", "", false}} {
		req := mcpRequest(url, http.MethodPost, tok, tc.sid, "application/json", batch)
		if !tc.version {
			req.Header.Del("Mcp-Protocol-Version")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		var p problem.Problem
		mustJSON(t, string(body), &p)
		if res.StatusCode != http.StatusBadRequest || p.Kind != problem.KindBadRequest || !strings.Contains(p.Detail, "batch") ||
			res.Header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("%s: %d %v %s", tc.name, res.StatusCode, res.Header, body)
		}
	}
	// The refused batch held no session place (the cap is 1, the session
	// above holds it): deleting that session lets a new one open.
	if res, body := rawMCP(t, url, http.MethodDelete, tok, sid, "", ""); res.StatusCode >= 300 {
		t.Fatalf("DELETE: %d %s", res.StatusCode, body)
	}
	eventually(t, "a place after DELETE", func() bool {
		res, _ := rawMCP(t, url, http.MethodPost, tok, "", "application/json", "\r\n "+rawInitialize)
		if res.StatusCode == http.StatusOK {
			sid = res.Header.Get("Mcp-Session-Id")
		}
		return res.StatusCode == http.StatusOK
	})
	if res, body := rawMCP(t, url, http.MethodPost, tok, sid, "application/json", "  "+`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); res.StatusCode != http.StatusOK ||
		!strings.Contains(string(body), "listTodos") {
		t.Fatalf("one message with leading whitespace: %d %s", res.StatusCode, body)
	}
}

// TestHTTPStreamGetWithBodyRefused: a GET (the standalone stream) that
// carries a body is refused: its stream would never see the client go
// (net/http notices a closed connection only once the body is read), and
// it held a place until the session's idle timeout.
func TestHTTPStreamGetWithBodyRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	url := boundedApp(t, b, 2, time.Minute)
	tok := b.keys.sign(alice)
	sid := initSession(t, url, tok)
	req := mcpRequest(url, http.MethodGet, tok, sid, "", "hello")
	req.Header.Set("Accept", "text/event-stream")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || res.Header.Get("Content-Type") != problem.MediaType {
		t.Fatalf("GET with a body: %d %s", res.StatusCode, body)
	}
}
