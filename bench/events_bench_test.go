package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
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

// The events benchmarks run on the demo's policies: todos of a tenant,
// readable by members (tablegate.is_member), written by members; ten
// distinct member users subscribe. todos_plain is the same table and
// policies without tablegate.enable_events, the floor of the write cost.

const evTenant = "a0000000-0000-4000-8000-00000000000a"

const evSchema = `
insert into tablegate.tenants (id, name) values ('` + evTenant + `', 'A');
create table public.todos (
  id bigint generated always as identity primary key,
  tenant_id uuid not null default tablegate.current_tenant_id() references tablegate.tenants (id),
  owner_id uuid not null default auth.uid(),
  title text not null,
  done boolean not null default false
);
create table public.todos_plain (like public.todos including all);
do $$
declare t text;
begin
  foreach t in array array['todos', 'todos_plain'] loop
    execute format('alter table public.%I enable row level security', t);
    execute format('alter table public.%I force row level security', t);
    execute format($p$create policy member_read on public.%I for select to authenticated
      using (tenant_id = tablegate.current_tenant_id() and tablegate.is_member('tenant', tenant_id::text))$p$, t);
    execute format($p$create policy member_insert on public.%I for insert to authenticated
      with check (not tablegate.is_anonymous() and tenant_id = tablegate.current_tenant_id()
                  and tablegate.is_member('tenant', tenant_id::text) and owner_id = (select auth.uid()))$p$, t);
    execute format('grant select, insert on public.%I to authenticated', t);
  end loop;
end $$;
select tablegate.enable_events('public.todos');
`

type evFixture struct {
	pool    *pgxpool.Pool
	hub     *events.Hub
	todos   *rest.Resource
	plain   *rest.Resource
	srv     *httptest.Server
	users   []string // 10 member user ids
	tokens  []string
	callers []authctx.Auth
}

func newEvFixture(tb testing.TB, cfg *events.Config, notifyOff bool) *evFixture {
	tb.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(tb, pgtest.URL(tb))
	if _, err := pool.Exec(ctx, evSchema); err != nil {
		tb.Fatal(err)
	}
	f := &evFixture{pool: pool}
	if notifyOff {
		// The writer's NOTIFY off (docs/events.md): hubs poll instead.
		if _, err := pool.Exec(ctx, `do $$ begin execute format('alter database %I set tablegate.events_notify = off', current_database()); end $$`); err != nil {
			tb.Fatal(err)
		}
		pool.Reset() // new connections read the setting
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": benchKID,
		"x": b64(pad32(key.X.Bytes())), "y": b64(pad32(key.Y.Bytes()))}}})
	rv, err := authctx.New(ctx, &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: jwks}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rv.Close)
	for i := range 10 {
		u := fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		if _, err := pool.Exec(ctx, `insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{member}')`, u, evTenant); err != nil {
			tb.Fatal(err)
		}
		claims := jwt.MapClaims{"sub": u, "aud": "authenticated", "role": "authenticated", "tenant_id": evTenant,
			"exp": time.Now().Add(2 * time.Hour).Unix(), "iat": time.Now().Unix(), "is_anonymous": false}
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, claims)
		tok.Header["kid"] = benchKID
		s, err := tok.SignedString(key)
		if err != nil {
			tb.Fatal(err)
		}
		cj, _ := json.Marshal(claims)
		var m map[string]any
		_ = json.Unmarshal(cj, &m)
		f.users = append(f.users, u)
		f.tokens = append(f.tokens, s)
		f.callers = append(f.callers, authctx.NewUser(m, s, cj))
	}
	d := db.New(pool, nil)
	sel := []string{"id", "tenant_id", "owner_id", "title", "done"}
	if f.todos, err = rest.NewResource(ctx, d, "todos", &rest.Config{Select: sel}); err != nil {
		tb.Fatal(err)
	}
	if f.plain, err = rest.NewResource(ctx, d, "todos_plain", &rest.Config{Select: sel}); err != nil {
		tb.Fatal(err)
	}
	c := events.Config{}
	if cfg != nil {
		c = *cfg
	}
	c.DB = d
	if f.hub, err = events.New(ctx, &c); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.hub.Close)
	st, err := f.hub.Stream(ctx, f.todos, &events.StreamOpts{Table: true})
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /todos/events", st)
	f.srv = httptest.NewServer(rv.Middleware(mux))
	tb.Cleanup(f.srv.Close)
	return f
}

// create inserts one todo through the resource's create path as caller i.
func (f *evFixture) create(ctx context.Context, r *rest.Resource, i int, title string) (int64, error) {
	res, err := r.Do(ctx, &rest.Call{Operation: rest.OpCreate, Auth: f.callers[i%len(f.callers)],
		Body: []byte(`{"title":"` + title + `"}`)})
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(res.Key, 10, 64)
}

// rawSub is a subscriber on a raw TCP connection (no client goroutines
// beyond the optional reader), so memory measured is the server's.
type rawSub struct {
	conn net.Conn
	got  atomic.Int64
}

func (f *evFixture) dial(tb testing.TB, tok string) *rawSub {
	tb.Helper()
	conn, err := net.Dial("tcp", f.srv.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /todos/events HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n\r\n", tok)
	return &rawSub{conn: conn}
}

// read counts events (and reports each key's arrival to seen).
func (s *rawSub) read(seen func(key int64)) {
	rd := bufio.NewReaderSize(s.conn, 16<<10)
	for {
		line, err := rd.ReadSlice('\n')
		if err != nil {
			return
		}
		if !bytes.HasPrefix(line, []byte("data: ")) {
			continue
		}
		s.got.Add(1)
		if seen != nil {
			if i := bytes.Index(line, []byte(`"key":"`)); i >= 0 {
				rest := line[i+7:]
				if j := bytes.IndexByte(rest, '"'); j > 0 {
					if k, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
						seen(k)
					}
				}
			}
		}
	}
}

func (f *evFixture) waitSubs(tb testing.TB, n int) {
	tb.Helper()
	for deadline := time.Now().Add(60 * time.Second); f.hub.Stats().Subscribers != n; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if time.Now().After(deadline) {
			tb.Fatalf("%d subscribers, want %d", f.hub.Stats().Subscribers, n)
		}
	}
}

// BenchmarkEvents measures commit-to-delivery throughput and latency with
// 1, 100 and 1000 subscribers spread over 10 distinct callers, the cost of
// an emitting write against the same write on a table without events, and
// the memory of an idle subscriber. b.N is ignored: each sub-benchmark is
// one measured run reported with ReportMetric.
func BenchmarkEvents(b *testing.B) {
	b.Logf("load average at start: %.2f", loadavg())
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("throughput/subs=%d", n), func(b *testing.B) { benchThroughput(b, n) })
	}
	b.Run("latency/subs=1000", benchLatency)
	b.Run("write", func(b *testing.B) { benchWrite(b, false) })
	b.Run("write/notify=off", func(b *testing.B) { benchWrite(b, true) })
	b.Run("idle", benchIdle)
}

const evWriters = 8

// benchThroughput measures the delivery pipeline alone: 2000 events
// committed at once (one transaction of one of the callers inserting 2000
// rows), then the time until every subscriber has all of them.
func benchThroughput(b *testing.B, subs int) {
	f := newEvFixture(b, &events.Config{MaxPerCaller: 1000, MaxSubscribers: 2000, Buffer: 4096, BufferBytes: 16 << 20}, false)
	var ss []*rawSub
	for i := range subs {
		s := f.dial(b, f.tokens[i%10])
		ss = append(ss, s)
		go s.read(nil)
	}
	f.waitSubs(b, subs)
	const total = 2000
	ctx := context.Background()
	d := db.New(f.pool, nil)
	err := d.Run(ctx, f.callers[0].DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, `insert into public.todos (title) select 'bench ' || g from generate_series(1, $1) g`, total)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	deadline := start.Add(180 * time.Second)
	for _, s := range ss {
		for s.got.Load() < total && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond) // sleep: poll step of the bounded wait around it
		}
		if s.got.Load() < total {
			b.Fatalf("a subscriber got %d of %d events (stats %+v)", s.got.Load(), total, f.hub.Stats())
		}
	}
	el := time.Since(start)
	st := f.hub.Stats()
	b.ReportMetric(total/el.Seconds(), "events/s")
	b.ReportMetric(float64(total*subs)/el.Seconds(), "deliveries/s")
	b.ReportMetric(float64(st.Checks), "check-statements")
	b.ReportMetric(float64(st.CutOff), "cut-off")
}

// benchLatency: 1000 subscribers (10 callers), 200 events/s for 5 s;
// commit-to-delivery latency over every (event, subscriber) pair.
func benchLatency(b *testing.B) {
	f := newEvFixture(b, &events.Config{MaxPerCaller: 1000, MaxSubscribers: 2000}, false)
	const subs = 1000
	var committed sync.Map // key → time the commit returned
	var mu sync.Mutex
	lat := make([]time.Duration, 0, 1000*subs)
	var ss []*rawSub
	for i := range subs {
		s := f.dial(b, f.tokens[i%10])
		ss = append(ss, s)
		go s.read(func(k int64) {
			now := time.Now()
			if t, ok := committed.Load(k); ok {
				d := max(now.Sub(t.(time.Time)), 0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	f.waitSubs(b, subs)
	ctx := context.Background()
	const rate, dur = 200, 5 * time.Second
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	n := 0
	for end := time.Now().Add(dur); time.Now().Before(end); n++ {
		<-tick.C
		// The commit time is stored before the write's result is known, a
		// few hundred µs late at most: latency is slightly under-, never
		// over-stated relative to the commit.
		k, err := f.create(ctx, f.todos, n, "lat")
		if err != nil {
			b.Fatal(err)
		}
		committed.Store(k, time.Now())
	}
	want := int64(n)
	deadline := time.Now().Add(60 * time.Second)
	for _, s := range ss {
		for s.got.Load() < want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait around it
		}
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(lat)
	if len(lat) == 0 {
		b.Fatal("no latencies")
	}
	p := func(q float64) float64 { return float64(lat[int(q*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(p(0.50), "p50-ms")
	b.ReportMetric(p(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat))/float64(n*subs), "delivered-fraction")
}

// benchWrite compares the create path on the events table with the same
// create on todos_plain: one writer (latency ratio) and 8 writers.
func benchWrite(b *testing.B, notifyOff bool) {
	f := newEvFixture(b, &events.Config{PollInterval: 100 * time.Millisecond}, notifyOff)
	ctx := context.Background()
	for _, writers := range []int{1, evWriters} {
		run := func(r *rest.Resource, d time.Duration) float64 {
			var ops atomic.Int64
			var wg sync.WaitGroup
			end := time.Now().Add(d)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Now().Before(end) {
						if _, err := f.create(ctx, r, w, "w"); err != nil {
							b.Error(err)
							return
						}
						ops.Add(1)
					}
				}()
			}
			wg.Wait()
			return float64(ops.Load()) / d.Seconds()
		}
		run(f.plain, 300*time.Millisecond) // warm
		run(f.todos, 300*time.Millisecond)
		// Alternate short rounds and take the median of the per-round
		// ratios: the machine is shared, and its load swings within seconds.
		var plain, emitting float64
		var ratios []float64
		const rounds = 12
		for range rounds {
			p := run(f.plain, 400*time.Millisecond)
			e := run(f.todos, 400*time.Millisecond)
			plain, emitting = plain+p, emitting+e
			ratios = append(ratios, p/e)
		}
		slices.Sort(ratios)
		b.ReportMetric((ratios[rounds/2-1]+ratios[rounds/2])/2, fmt.Sprintf("median-cost-x-w%d", writers))
		b.ReportMetric(plain/rounds, fmt.Sprintf("plain-writes/s-w%d", writers))
		b.ReportMetric(emitting/rounds, fmt.Sprintf("emitting-writes/s-w%d", writers))
		b.ReportMetric(plain/emitting, fmt.Sprintf("cost-x-w%d", writers))
	}
}

// benchIdle opens 1000 idle streams on raw connections (no client-side
// goroutines) and reports the server's heap + stack growth per stream.
func benchIdle(b *testing.B) {
	f := newEvFixture(b, &events.Config{MaxPerCaller: 1000, MaxSubscribers: 2000, Heartbeat: time.Hour}, false)
	const subs = 1000
	measure := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse + m.StackInuse
	}
	before := measure()
	g0 := runtime.NumGoroutine()
	for i := range subs {
		f.dial(b, f.tokens[i%10])
	}
	f.waitSubs(b, subs)
	after := measure()
	b.ReportMetric(float64(after-before)/subs, "bytes/idle-sub")
	b.ReportMetric(float64(runtime.NumGoroutine()-g0)/subs, "goroutines/idle-sub")
}
