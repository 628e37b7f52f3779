package bench

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/events"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

const evTenantB = "b0000000-0000-4000-8000-00000000000b"

// BenchmarkEventReplayFairness measures what one user's event replays cost
// another tenant: the other tenant's list p50 while one user reconnects 32
// streams with Last-Event-ID: 0 over 12 000 retained events, against its
// p50 while the same user floods lists over 32 connections, and alone. The
// pool has 8 connections (each caller may hold 4, the default half).
// b.N is ignored: one measured run of three phases, reported with
// ReportMetric (ms; replay/flood as a ratio).
//
//	go test -run '^$' -bench EventReplayFairness -benchtime 1x ./bench/
func BenchmarkEventReplayFairness(b *testing.B) {
	const (
		retained = 12000
		conns    = 32
		phase    = 4 * time.Second
	)
	ctx := context.Background()
	url := pgtest.URL(b)
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	pcfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, evSchema); err != nil {
		b.Fatal(err)
	}
	attacker := "00000000-0000-4000-8000-000000000001"
	victim := "00000000-0000-4000-8000-000000000002"
	if _, err := pool.Exec(ctx, `create index on public.todos (tenant_id, id);
insert into tablegate.tenants (id, name) values ('`+evTenantB+`', 'B');
insert into tablegate.memberships (user_id, scope, scope_id, roles) values
  ('`+attacker+`', 'tenant', '`+evTenant+`', '{member}'), ('`+victim+`', 'tenant', '`+evTenantB+`', '{member}');
insert into public.todos (tenant_id, owner_id, title) select '`+evTenant+`', '`+attacker+`', 'replayed ' || g from generate_series(1, `+strconv.Itoa(retained)+`) g;
insert into public.todos (tenant_id, owner_id, title) select '`+evTenantB+`', '`+victim+`', 'victim ' || g from generate_series(1, 200) g`); err != nil {
		b.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": benchKID,
		"x": b64(pad32(key.X.Bytes())), "y": b64(pad32(key.Y.Bytes()))}}})
	rv, err := authctx.New(ctx, &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: jwks}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rv.Close)
	token := func(sub, tenant string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{"sub": sub, "aud": "authenticated",
			"role": "authenticated", "tenant_id": tenant, "exp": time.Now().Add(2 * time.Hour).Unix(),
			"iat": time.Now().Unix(), "is_anonymous": false})
		tok.Header["kid"] = benchKID
		s, err := tok.SignedString(key)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	attackerTok, victimTok := token(attacker, evTenant), token(victim, evTenantB)
	d := db.New(pool, nil)
	todos, err := rest.NewResource(ctx, d, "todos", &rest.Config{Select: []string{"id", "tenant_id", "owner_id", "title", "done"}})
	if err != nil {
		b.Fatal(err)
	}
	hub, err := events.New(ctx, &events.Config{DB: d})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(hub.Close)
	st, err := hub.Stream(ctx, todos, &events.StreamOpts{Table: true})
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/todos/", http.StripPrefix("/todos", todos))
	mux.Handle("GET /todos/events", st)
	srv := httptest.NewServer(rv.Middleware(mux))
	b.Cleanup(srv.Close)
	for deadline := time.Now().Add(60 * time.Second); hub.Stats().Head < retained+200; time.Sleep(50 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			b.Fatalf("the hub read %d events", hub.Stats().Head)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * conns}}
	get := func(ctx context.Context, path, tok string, hdr ...string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		return client.Do(req)
	}
	// victimP50 lists as the other tenant, one request after another, for
	// a phase, while load runs until its context ends.
	victimP50 := func(name string, load func(ctx context.Context)) float64 {
		lctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		if load != nil {
			for range conns {
				wg.Add(1)
				go func() { defer wg.Done(); load(lctx) }()
			}
			time.Sleep(300 * time.Millisecond) // sleep: the load runs for a while before the measurement
		}
		var lat []time.Duration
		var failed int
		for end := time.Now().Add(phase); time.Now().Before(end); {
			start := time.Now()
			resp, err := get(ctx, "/todos/?limit=20", victimTok)
			if err != nil {
				failed++
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				failed++
			}
			lat = append(lat, time.Since(start))
		}
		cancel()
		wg.Wait()
		slices.Sort(lat)
		p50 := float64(lat[len(lat)/2].Microseconds()) / 1000
		b.Logf("%s: other tenant's list p50 %.1f ms, max %v, %d lists, %d not 200", name, p50, lat[len(lat)-1], len(lat), failed)
		return p50
	}
	var replays, replayed atomic.Int64
	replay := func(ctx context.Context) {
		for ctx.Err() == nil {
			resp, err := get(ctx, "/todos/events", attackerTok, "Last-Event-ID", "0")
			if err != nil {
				continue
			}
			// Read until the last retained event, then reconnect.
			sc := bufio.NewScanner(resp.Body)
			n := 0
			for sc.Scan() {
				if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					n++
					if v, _ := strconv.ParseInt(id, 10, 64); v >= retained { // the attacker's last event
						break
					}
				}
			}
			resp.Body.Close()
			replayed.Add(int64(n))
			replays.Add(1)
		}
	}
	var floods atomic.Int64
	flood := func(ctx context.Context) {
		for ctx.Err() == nil {
			resp, err := get(ctx, "/todos/?limit=100", attackerTok)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			floods.Add(1)
		}
	}
	b.ResetTimer()
	alone := victimP50("alone", nil)
	floodP50 := victimP50("REST flood (32 connections)", flood)
	replayP50 := victimP50("replays (32 streams, Last-Event-ID: 0)", replay)
	b.StopTimer()
	b.Logf("flood: %d lists; replays: %d finished, %d events", floods.Load(), replays.Load(), replayed.Load())
	b.ReportMetric(alone, "alone-p50-ms")
	b.ReportMetric(floodP50, "flood-p50-ms")
	b.ReportMetric(replayP50, "replay-p50-ms")
	b.ReportMetric(replayP50/floodP50, "replay/flood")
}
