package main

// Attacks on the demo's HTTP handler, in process, against real Postgres:
// each test reproduces a hole an outside attacker found and proves it
// closed. The handler is built exactly as "tablegate demo" builds it
// (demoResolverConfig, buildDemoAPI, demoServer.handler).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/authstub"
	"github.com/tablegate/tablegate/internal/demo"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// demoApp is the demo's handler served by an httptest server over a fresh
// database holding the demo schema.
type demoApp struct {
	t           *testing.T
	url         string
	pool        *pgxpool.Pool
	ks          *keySet
	issuer      string
	gotrue      *authstub.Server
	publishable string
	secret      string
	// client keeps up to 64 idle connections (bursts reuse them).
	client *http.Client
}

// demoAppOptions tune newDemoApp; nil for the defaults.
type demoAppOptions struct {
	// MaxConns caps the database pool (default 4).
	MaxConns int32
}

func newDemoApp(t *testing.T, o *demoAppOptions) *demoApp {
	t.Helper()
	ctx := context.Background()
	maxConns := int32(4)
	if o != nil && o.MaxConns > 0 {
		maxConns = o.MaxConns
	}
	pc, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	pc.MaxConns = maxConns
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, demoSchemaSQL); err != nil {
		t.Fatalf("demo schema: %v", err)
	}
	ks := testKeySet(t, algES256)
	var h atomic.Pointer[http.Handler]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*h.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	a := &demoApp{t: t, url: srv.URL, pool: pool, ks: ks, issuer: srv.URL + "/auth/v1",
		publishable: "sb_publishable_attack", secret: "sb_secret_attack",
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}}
	t.Cleanup(a.client.CloseIdleConnections)
	ds := &demo.Routes{JWKS: ks.PublicJWKS()}
	gotrue := newAuthStub(t, authstub.Config{Keys: ks, Issuer: a.issuer, APIKey: a.publishable})
	ds.Auth = demoAuth{gotrue}
	a.gotrue = gotrue
	first := demoHandler(ds) // the JWKS, before the resolver fetches it
	h.Store(&first)
	rv, err := authctx.New(t.Context(), demoResolverConfig(srv.URL, a.issuer+"/.well-known/jwks.json", a.secret, a.publishable, false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rv.Close)
	parts, err := demo.BuildAPI(ctx, db.New(pool, nil), rv, srv.URL, a.issuer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(parts.Hub.Close)
	ds.API = parts
	full := rv.Middleware(rv.CrossSite(demoHandler(ds)))
	h.Store(&full)
	return a
}

// token mints a demo access token for sub acting in tenant.
func (a *demoApp) token(sub, tenant string, roles ...string) string {
	a.t.Helper()
	tok, err := mintToken(a.ks, tokenSpec{Sub: sub, Tenant: tenant, Roles: roles, Issuer: a.issuer, TTL: time.Hour}, time.Now())
	if err != nil {
		a.t.Fatal(err)
	}
	return tok
}

// call sends one request with the given headers and an optional JSON body.
func (a *demoApp) call(method, path string, header map[string]string, body any) response {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return response{resp.StatusCode, resp.Header, b}
}

// as sends a request with a Bearer token.
func (a *demoApp) as(tok, method, path string, body any) response {
	a.t.Helper()
	return a.call(method, path, map[string]string{"Authorization": "Bearer " + tok}, body)
}

// TestAttackRefreshQueryAPIKey: the demo's refresh grant accepted any
// apikey given in the query string. Every apikey the request carries,
// header or query, must now be the publishable key.
func TestAttackRefreshQueryAPIKey(t *testing.T) {
	t.Parallel()
	a := newDemoApp(t, nil)
	_, refresh, err := a.gotrue.SignIn(tokenSpec{Sub: demoUserID, Tenant: demoTenantA, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	post := func(query string, header map[string]string) response {
		req, _ := http.NewRequest("POST", a.url+"/auth/v1/token?grant_type=refresh_token"+query,
			strings.NewReader(`{"refresh_token":"`+refresh+`"}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b}
	}
	for _, c := range []struct {
		name   string
		query  string
		header map[string]string
	}{
		{"query key wrong", "&apikey=anything", nil},
		{"query key empty", "&apikey=", nil},
		{"header right, query wrong", "&apikey=anything", map[string]string{"apikey": a.publishable}},
		{"header wrong, query right", "&apikey=" + a.publishable, map[string]string{"apikey": "sb_publishable_wrong"}},
		{"secret key is not the publishable key", "&apikey=" + a.secret, nil},
		{"no key", "", nil},
		{"malformed query", "&apikey=%zz", nil},
	} {
		if r := post(c.query, c.header); r.status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401: %s", c.name, r.status, r.body)
		}
	}
	// The refresh token is still unused: the right key in the query works.
	if r := post("&apikey="+a.publishable, nil); r.status != http.StatusOK {
		t.Fatalf("right query key: %d %s", r.status, r.body)
	}
	// Every other demo auth endpoint that takes an apikey checks it too.
	for _, path := range []string{"/auth/v1/token?grant_type=password", "/auth/v1/token?grant_type=pkce",
		"/auth/v1/otp", "/auth/v1/verify", "/auth/v1/logout"} {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		r := a.call("POST", path+sep+"apikey=anything", map[string]string{"apikey": a.publishable}, map[string]any{})
		if r.status != http.StatusUnauthorized {
			t.Errorf("POST %s with a wrong query apikey: %d %s", path, r.status, r.body)
		}
	}
}

// TestAttackTokenClaims: the demo accepted tokens with aud=evil, a foreign
// iss, an iat ten years ahead or an exp in year 10000 (signed with the
// demo's key). Each is refused now; the demo's own tokens still work.
func TestAttackTokenClaims(t *testing.T) {
	t.Parallel()
	a := newDemoApp(t, nil)
	now := time.Now()
	mint := func(extra map[string]any) string {
		tok, err := mintToken(a.ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA, Issuer: a.issuer, TTL: time.Hour, Extra: extra}, now)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	if r := a.as(mint(nil), "GET", "/api/todos", nil); r.status != http.StatusOK {
		t.Fatalf("the demo's own token: %d %s", r.status, r.body)
	}
	for name, extra := range map[string]map[string]any{
		"aud evil":           {"aud": "evil"},
		"no aud":             {"aud": []string{}},
		"foreign iss":        {"iss": "https://evil.example/auth/v1"},
		"iat 10 years ahead": {"iat": now.AddDate(10, 0, 0).Unix()},
		"exp in year 10000":  {"exp": time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).Unix()},
		"iat as a string":    {"iat": "0"},
	} {
		r := a.as(mint(extra), "GET", "/api/todos", nil)
		if r.status != http.StatusUnauthorized {
			t.Errorf("%s: %d %s, want 401", name, r.status, r.body)
		}
	}
}

// TestAttackConnectionsArePinned: serve set only ReadHeaderTimeout, so an
// idle keep-alive connection or a body sent a byte at a time stayed open
// indefinitely. With read and idle timeouts (here shortened by flags) the
// server closes both; a streaming response that lifts its own deadlines
// with http.ResponseController outlives them.
func TestAttackConnectionsArePinned(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	dir := t.TempDir()
	ks := testKeySet(t, algES256)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(ks.PublicJWKS()) }))
	defer jwks.Close()
	cfgPath := dir + "/tablegate.json"
	cfgJSON := `{"auth":{"jwks_url":"` + jwks.URL + `"},"tables":{"tenants":{"table":"tablegate.tenants"}},
	  "timeouts":{"read":"400ms","idle":"10s"}}`
	if err := os.WriteFile(cfgPath, []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var out, errb syncBuffer
		e := &env{stdout: &out, stderr: &errb, getenv: func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }}
		done <- run(ctx, e, []string{"serve", "--config", cfgPath, "--addr", addr, "--idle-timeout", "300ms"})
	}()
	defer func() { cancel(); <-done }()
	var err error
	if !within(10*time.Second, func() bool {
		var resp *http.Response
		if resp, err = http.Get("http://" + addr + "/livez"); err == nil {
			resp.Body.Close()
		}
		return err == nil
	}) {
		t.Fatalf("serve did not start: %v", err)
	}
	// closedWithin reports whether the server closes conn within d.
	closedWithin := func(conn net.Conn, d time.Duration) bool {
		_ = conn.SetReadDeadline(time.Now().Add(d))
		buf := make([]byte, 4096)
		for {
			if _, err := conn.Read(buf); err != nil {
				var ne net.Error
				return !(errors.As(err, &ne) && ne.Timeout())
			}
		}
	}
	// An idle keep-alive connection: one request, then silence.
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	_, _ = io.WriteString(idle, "GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
	if !closedWithin(idle, 3*time.Second) {
		t.Error("an idle keep-alive connection stayed open 3 s with --idle-timeout 300ms")
	}
	// A body trickling in a byte at a time.
	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	_, _ = io.WriteString(slow, "POST /api/tenants HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	stop := make(chan struct{})
	go func() {
		for i := 0; i < 50; i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := slow.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	closed := closedWithin(slow, 3*time.Second)
	close(stop)
	if !closed {
		t.Error("a body sent a byte every 100 ms kept its connection 3 s with a read timeout of 400ms")
	}
}

// Extra identities of the approval attacks: a user in both tenants and an
// approver of tenant B.
const (
	bothUserID     = "66666666-6666-4666-8666-666666666666"
	approverBID    = "77777777-7777-4777-8777-777777777777"
	globalApprover = "88888888-8888-4888-8888-888888888888"
)

// approvalOf returns approval.id of a 403 APPROVAL_REQUIRED answer.
func approvalOf(t *testing.T, what string, r response) string {
	t.Helper()
	var p struct {
		Code     string `json:"code"`
		Approval struct {
			ID string `json:"id"`
		} `json:"approval"`
	}
	if r.status != http.StatusForbidden || json.Unmarshal(r.body, &p) != nil || p.Code != "APPROVAL_REQUIRED" || p.Approval.ID == "" {
		t.Fatalf("%s: want 403 APPROVAL_REQUIRED, got %d %s", what, r.status, r.body)
	}
	return p.Approval.ID
}

// approvalIDs lists the ids a caller sees at GET /api/approvals.
func (a *demoApp) approvalIDs(tok string) []string {
	a.t.Helper()
	r := a.as(tok, "GET", "/api/approvals", nil)
	if r.status != http.StatusOK {
		a.t.Fatalf("list approvals: %d %s", r.status, r.body)
	}
	var page struct {
		Items []struct {
			ID       string  `json:"id"`
			TenantID *string `json:"tenant_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(r.body, &page); err != nil {
		a.t.Fatal(err)
	}
	var ids []string
	for _, it := range page.Items {
		ids = append(ids, it.ID)
	}
	return ids
}

// TestAttackApprovalsCrossTenants: approvals had no tenant. A tenant-A
// approver listed and approved tenant B's approvals, and an approval
// granted while a user acted in tenant A was spent in tenant B. Two

// tenants, a user in both, an approver of each.
func TestAttackApprovalsCrossTenants(t *testing.T) {
	t.Parallel()
	a := newDemoApp(t, nil)
	if _, err := a.pool.Exec(context.Background(), `insert into tablegate.memberships (user_id, scope, scope_id, roles) values
	  ($1, 'tenant', $3, '{member}'), ($1, 'tenant', $4, '{member}'), ($2, 'tenant', $4, '{member,approver}')`,
		bothUserID, approverBID, demoTenantA, demoTenantB); err != nil {
		t.Fatal(err)
	}
	// The demo's tokens: APPROVER_TOKEN and OTHER_TENANT_TOKEN as printed.
	approverA := a.token(demoApproverID, demoTenantA, "approver")
	approverB := a.token(approverBID, demoTenantB, "approver")
	other := a.token(demoOtherUserID, demoTenantB)
	bothInA := a.token(bothUserID, demoTenantA)
	bothInB := a.token(bothUserID, demoTenantB)
	// A claim role "approver" without an approver membership of the tenant.
	global := a.token(globalApprover, demoTenantB, "approver")
	purge := func(tok string) response { return a.as(tok, "POST", "/api/todos/purge", nil) }

	// The reproduction of the report: tenant B's approval, seen and
	// decided by tenant A's approver.
	idB := approvalOf(t, "tenant B purge", purge(other))
	if ids := a.approvalIDs(approverA); slices.Contains(ids, idB) {
		t.Errorf("tenant A's approver lists tenant B's approval %s", idB)
	}
	if r := a.as(approverA, "GET", "/api/approvals/"+idB, nil); r.status != http.StatusNotFound {
		t.Errorf("tenant A's approver reads tenant B's approval: %d %s", r.status, r.body)
	}
	if r := a.as(approverA, "POST", "/api/approvals/"+idB+"/approve", nil); r.status != http.StatusNotFound {
		t.Errorf("tenant A's approver approves tenant B's approval: %d %s", r.status, r.body)
	}
	if r := a.as(global, "POST", "/api/approvals/"+idB+"/approve", nil); r.status != http.StatusForbidden {
		t.Errorf("a global claim-role approver, no approver of tenant B, approves: %d %s", r.status, r.body)
	}
	if again := approvalOf(t, "tenant B purge, still pending", purge(other)); again != idB {
		t.Errorf("pending approval not reused: %s vs %s", again, idB)
	}
	// Tenant B's own approver decides it; the requester then passes once.
	if ids := a.approvalIDs(approverB); !slices.Contains(ids, idB) {
		t.Errorf("tenant B's approver does not list %s: %v", idB, ids)
	}
	if r := a.as(approverB, "POST", "/api/approvals/"+idB+"/approve", nil); r.status != http.StatusOK {
		t.Fatalf("tenant B's approver approves: %d %s", r.status, r.body)
	}
	if r := purge(other); r.status != http.StatusOK {
		t.Fatalf("approved purge: %d %s", r.status, r.body)
	}

	// A user in both tenants: an approval granted in tenant A is not spent
	// in tenant B, and tenant B's approver cannot decide it.
	idA := approvalOf(t, "both-tenant user in A", purge(bothInA))
	if r := a.as(approverB, "POST", "/api/approvals/"+idA+"/approve", nil); r.status != http.StatusNotFound {
		t.Errorf("tenant B's approver approves tenant A's approval: %d %s", r.status, r.body)
	}
	if r := a.as(approverA, "POST", "/api/approvals/"+idA+"/approve", nil); r.status != http.StatusOK {
		t.Fatalf("tenant A's approver approves: %d %s", r.status, r.body)
	}
	inB := approvalOf(t, "the approval of tenant A used in tenant B", purge(bothInB))
	if inB == idA {
		t.Fatalf("tenant B attempt got tenant A's approval %s", idA)
	}
	if ids := a.approvalIDs(bothInB); slices.Contains(ids, idA) || !slices.Contains(ids, inB) {
		t.Errorf("the user acting in B lists %v (A's %s must be hidden, B's %s shown)", ids, idA, inB)
	}
	if r := purge(bothInA); r.status != http.StatusOK {
		t.Fatalf("the approval spent in its own tenant: %d %s", r.status, r.body)
	}
	if next := approvalOf(t, "single use", purge(bothInA)); next == idA {
		t.Fatal("approval spent twice")
	}
}

// TestAttackApprovalBurstStarvesPool: each refused approval-gated request
// held its pooled connection while it waited for a second one to record
// the approval, so a dozen concurrent purges stalled every tenant for
// seconds and ended in 503s (on main: tenant A's list p50 5 s, p99 15 s,
// 103 answers 503). Now: waves of 32 concurrent approval-gated requests (32
// distinct users, so nothing is merged) on a pool of 8 while tenant A
// lists its todos; tenant A's p99 stays under 10x its idle latency and
// nothing answers 503. Idle and busy samples alternate round by round, so
// that the machine's other load weighs on both alike. A bounded test (at
// most 20 rounds, 60 s), not a benchmark.
//
// Not parallel: the package's other demo tests would compete for the same
// two cores and blur what is measured here.
func TestAttackApprovalBurstStarvesPool(t *testing.T) {
	a := newDemoApp(t, &demoAppOptions{MaxConns: 8})
	lister := a.token(demoUserID, demoTenantA)
	statuses := map[int]int{}
	var mu sync.Mutex
	list := func() time.Duration {
		start := time.Now()
		r := a.as(lister, "GET", "/api/todos", nil)
		d := time.Since(start)
		mu.Lock()
		statuses[r.status]++
		mu.Unlock()
		return d
	}
	attackers := make([]string, 32)
	for i := range attackers {
		attackers[i] = a.token(fmt.Sprintf("9%07d-0000-4000-8000-%012d", i, i), demoTenantB)
	}
	wave := func(during func()) {
		var wg, sending sync.WaitGroup
		start := make(chan struct{})
		for _, tok := range attackers {
			wg.Add(1)
			sending.Add(1)
			go func() {
				defer wg.Done()
				<-start
				sending.Done()
				r := a.as(tok, "POST", "/api/todos/purge", nil)
				mu.Lock()
				statuses[r.status]++
				mu.Unlock()
			}()
		}
		close(start)
		sending.Wait() // the wave is in flight: every attacker is sending
		during()
		wg.Wait()
	}
	// Warm up: connections, verified-token memo, plans of both sides.
	for i := 0; i < 5; i++ {
		list()
	}
	wave(func() {})
	var idle, busy []time.Duration
	deadline := time.Now().Add(60 * time.Second)
	for round := 0; round < 40 && time.Now().Before(deadline); round++ {
		for i := 0; i < 5; i++ {
			idle = append(idle, list())
		}
		wave(func() {
			for i := 0; i < 5; i++ {
				busy = append(busy, list())
			}
		})
	}
	slices.Sort(idle)
	slices.Sort(busy)
	pct := func(d []time.Duration, p int) time.Duration { return d[(len(d)-1)*p/100] }
	t.Logf("tenant A list: idle p50 %v p99 %v; during the bursts p50 %v p99 %v max %v (%d samples each); statuses %v",
		pct(idle, 50), pct(idle, 99), pct(busy, 50), pct(busy, 99), busy[len(busy)-1], len(busy), statuses)
	if statuses[http.StatusServiceUnavailable] > 0 {
		t.Errorf("%d answers were 503", statuses[http.StatusServiceUnavailable])
	}
	for s, n := range statuses {
		if s != http.StatusOK && s != http.StatusForbidden {
			t.Errorf("unexpected status %d (%d times)", s, n)
		}
	}
	// Like for like: each percentile against the same one measured idle.
	// The limit never drops below noiseFloor: on a shared two-core machine
	// (CI runs other packages' tests beside this one) 32 concurrent
	// requests under -race alone put the busy p99 near 100 ms (measured
	// 85-97 ms at load 13), while the starvation this guards against cost
	// p50 5 s, p99 15 s and 503s.
	const noiseFloor = time.Second
	for _, p := range []int{50, 99} {
		if got, limit := pct(busy, p), max(10*pct(idle, p), noiseFloor); got > limit {
			t.Errorf("tenant A's list p%d %v during the bursts exceeds max(10x its idle p%d, %v) = %v", p, got, p, noiseFloor, limit)
		}
	}
}

// TestAttackResponsesCached: authenticated REST responses carried no
// Cache-Control and no Vary, so a shared cache could keep one caller's
// rows. Every REST and action response to a caller with credentials is
// now private, no-store and varies on Authorization and Cookie.
func TestAttackResponsesCached(t *testing.T) {
	t.Parallel()
	a := newDemoApp(t, nil)
	user := a.token(demoUserID, demoTenantA)
	created := a.as(user, "POST", "/api/todos", map[string]any{"title": "cache me not"})
	if created.status != http.StatusCreated {
		t.Fatalf("create: %d %s", created.status, created.body)
	}
	id := fmt.Sprint(created.json(t)["id"])
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/api/todos", nil},
		{"GET", "/api/todos/" + id, nil},
		{"PATCH", "/api/todos/" + id, map[string]any{"done": true}},
		{"GET", "/api/todos/export", nil},
		{"POST", "/api/todos/" + id + "/complete", nil},
		{"POST", "/api/todos/purge", nil}, // 403 APPROVAL_REQUIRED
		{"GET", "/api/todos/999999", nil}, // 404
		{"DELETE", "/api/todos/" + id, nil},
	} {
		r := a.as(user, c.method, c.path, c.body)
		cc, vary := r.header.Get("Cache-Control"), strings.Join(r.header.Values("Vary"), ", ")
		if !strings.Contains(cc, "no-store") || !strings.Contains(cc, "private") {
			t.Errorf("%s %s (%d): Cache-Control %q", c.method, c.path, r.status, cc)
		}
		if !strings.Contains(vary, "Authorization") || !strings.Contains(vary, "Cookie") {
			t.Errorf("%s %s (%d): Vary %q", c.method, c.path, r.status, vary)
		}
	}
	if cc := created.header.Get("Cache-Control"); cc != "private, no-store" {
		t.Errorf("create: Cache-Control %q", cc)
	}
}

// TestAttackMCPSessionHijack: MCP sessions were not bound to their
// caller: with a leaked Mcp-Session-Id another user (another tenant) could
// call tools on it or DELETE it. Another caller now gets 404 for that
// session; its owner keeps it.
func TestAttackMCPSessionHijack(t *testing.T) {
	t.Parallel()
	a := newDemoApp(t, nil)
	owner := a.token(demoUserID, demoTenantA)
	other := a.token(demoOtherUserID, demoTenantB)
	rpc := func(tok, method, sid, body string) response {
		h := map[string]string{"Authorization": "Bearer " + tok, "Accept": "application/json, text/event-stream",
			"Content-Type": "application/json", "Mcp-Protocol-Version": "2025-06-18"}
		if sid != "" {
			h["Mcp-Session-Id"] = sid
		}
		req, _ := http.NewRequest(method, a.url+"/mcp", strings.NewReader(body))
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := a.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{resp.StatusCode, resp.Header, b}
	}
	init := rpc(owner, "POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	sid := init.header.Get("Mcp-Session-Id")
	if init.status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", init.status, init.body)
	}
	if r := rpc(owner, "POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status >= 300 {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"todos_list","arguments":{}}}`
	for _, c := range []struct{ name, method, body string }{
		{"tools/list", "POST", list},
		{"tools/call", "POST", call},
		{"GET stream", "GET", ""},
		{"DELETE", "DELETE", ""},
	} {
		if r := rpc(other, c.method, sid, c.body); r.status != http.StatusNotFound {
			t.Errorf("another tenant's user, %s on the session: %d %s", c.name, r.status, r.body)
		}
	}
	// The owner (same subject and kind) still has the session.
	if r := rpc(owner, "POST", sid, list); r.status != http.StatusOK || !strings.Contains(string(r.body), "todos") {
		t.Fatalf("owner after the attempts: %d %s", r.status, r.body)
	}
	if r := rpc(owner, "DELETE", sid, ""); r.status >= 300 {
		t.Fatalf("owner deletes: %d %s", r.status, r.body)
	}
	if r := rpc(owner, "POST", sid, list); r.status != http.StatusNotFound {
		t.Errorf("deleted session: %d %s", r.status, r.body)
	}
}

// TestAttackCursorReplay: a list cursor was bound to the table and query
// only, so another tenant replaying it got an ordering oracle on values
// hidden from it. A cursor now opens only for the caller it was sealed to
// (subject, role, tenant); a refreshed token of the same caller keeps
// paging.
func TestAttackCursorReplay(t *testing.T) {
	t.Parallel()
	a := newDemoApp(t, nil)
	if _, err := a.pool.Exec(context.Background(), `insert into tablegate.memberships (user_id, scope, scope_id, roles)
	  values ($1, 'tenant', $2, '{member}')`, demoUserID, demoTenantB); err != nil {
		t.Fatal(err)
	}
	user := a.token(demoUserID, demoTenantA)
	page := a.as(user, "GET", "/api/todos?order=title.asc&limit=1", nil)
	cur, _ := page.json(t)["next_cursor"].(string)
	if page.status != http.StatusOK || cur == "" {
		t.Fatalf("first page: %d %s", page.status, page.body)
	}
	next := "/api/todos?order=title.asc&limit=1&cursor=" + url.QueryEscape(cur)
	for name, tok := range map[string]string{
		"another tenant's user":           a.token(demoOtherUserID, demoTenantB),
		"the same user in tenant B":       a.token(demoUserID, demoTenantB),
		"another user of the same tenant": a.token(demoAdminID, demoTenantA, "admin"),
	} {
		if r := a.as(tok, "GET", next, nil); r.status != http.StatusBadRequest {
			t.Errorf("%s replays the cursor: %d %s", name, r.status, r.body)
		}
	}
	// Another token of the same caller, issued at another second (iat has
	// whole seconds), as a refresh gives.
	again, err := mintToken(a.ks, tokenSpec{Sub: demoUserID, Tenant: demoTenantA, Issuer: a.issuer, TTL: time.Hour}, time.Now().Add(-2*time.Second))
	if err != nil || again == user {
		t.Fatalf("another token of the same caller: %v", err)
	}
	if r := a.as(again, "GET", next, nil); r.status != http.StatusOK {
		t.Fatalf("the same caller with a refreshed token: %d %s", r.status, r.body)
	}
}
