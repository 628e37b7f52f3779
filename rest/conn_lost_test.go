package rest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// slowLostSQL holds a statement of each kind mid-flight for 30 s: a write
// (a trigger sleeping before the insert) and a read (a policy sleeping on
// each row), so that a test can kill the connection under it.
const slowLostSQL = `
create table lost_writes (id bigserial primary key, title text not null);
create function lost_sleep() returns trigger language plpgsql as $$
begin perform pg_sleep(30); return new; end $$;
create trigger lost_sleep before insert on lost_writes for each row execute function lost_sleep();
alter table lost_writes enable row level security;
create policy lost_writes_all on lost_writes for all using (true) with check (true);
grant select, insert on lost_writes to authenticated;
grant usage on sequence lost_writes_id_seq to authenticated;

create table lost_reads (id bigserial primary key, title text not null);
create function lost_slow_true() returns boolean language plpgsql volatile as $$
begin perform pg_sleep(30); return true; end $$;
alter table lost_reads enable row level security;
create policy lost_reads_read on lost_reads for select using (lost_slow_true());
grant select on lost_reads to authenticated;
insert into lost_reads (title) values ('one');
`

// cutProxy stands between the pool and Postgres: every connection the
// pool dials goes through a loopback TCP relay that cut breaks, as a
// server crash (FIN: the client reads EOF mid-message) or a network fault
// (RST: connection reset) does.
type cutProxy struct {
	mu    sync.Mutex
	sides []*net.TCPConn // the relay's end of each client connection
}

func (p *cutProxy) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	up, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		up.Close()
		return nil, err
	}
	defer ln.Close()
	client, err := d.DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		up.Close()
		return nil, err
	}
	side, err := ln.Accept()
	if err != nil {
		up.Close()
		client.Close()
		return nil, err
	}
	p.mu.Lock()
	p.sides = append(p.sides, side.(*net.TCPConn))
	p.mu.Unlock()
	go func() { _, _ = io.Copy(up, side); up.Close() }()
	go func() { _, _ = io.Copy(side, up); side.Close() }()
	return client, nil
}

// cut breaks every relayed connection: reset sends RST, else FIN.
func (p *cutProxy) cut(reset bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.sides {
		if reset {
			_ = s.SetLinger(0)
		}
		_ = s.Close()
	}
	p.sides = nil
}

// A connection lost while a statement runs — the backend terminated
// (pg_terminate_backend, as an admin or a shutdown does: 57P01), the
// server gone (EOF mid-message, as in a crash) or the connection reset —
// answers 503 with Retry-After for a write, a read and an action, never
// 500, and well before the statement timeout (so the timeout is not what
// answered).
func TestConnectionLostMidStatementIsUnavailable(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	watch := pgtest.Pool(t, u)
	if _, err := watch.Exec(context.Background(), fixtureSQL+slowLostSQL); err != nil {
		t.Fatal(err)
	}
	pc, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(pc)
	pc.MaxConns = 4
	app := fmt.Sprintf("tg-conn-lost-%d", time.Now().UnixNano())
	pc.ConnConfig.RuntimeParams["application_name"] = app
	proxy := &cutProxy{}
	pc.ConnConfig.DialFunc = proxy.dial
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	// End the sleeping statements a cut left behind on the server.
	t.Cleanup(func() {
		_, _ = watch.Exec(context.Background(), `select pg_terminate_backend(pid) from pg_stat_activity
where application_name = $1`, app)
	})
	b := &bundle{t: t, pool: pool, db: db.New(pool, &db.Config{StatementTimeout: 20 * time.Second})}
	sleep := DefineAction(ActionDef[None, None, None]{
		Method: http.MethodPost, Path: "/sleep",
		Handler: func(c *Ctx, in ActionInput[None, None]) (None, error) {
			_, err := c.DB.Exec(c, "select pg_sleep(30)")
			return None{}, err // the raw pgx error, as a handler would pass it on
		},
	})
	mux := http.NewServeMux()
	mux.Handle("/api/lost_writes", http.StripPrefix("/api/lost_writes", b.resource("lost_writes", nil)))
	mux.Handle("/api/lost_reads", http.StripPrefix("/api/lost_reads", b.resource("lost_reads", nil)))
	mux.Handle("/api/todos/", http.StripPrefix("/api/todos", b.resource("todos", &Config{Actions: map[string]*Action{"sleep": sleep}})))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)

	kills := []struct {
		name string
		kill func(pid int) error
	}{
		{"terminated", func(pid int) error {
			_, err := watch.Exec(context.Background(), "select pg_terminate_backend($1)", pid)
			return err
		}},
		{"eof", func(int) error { proxy.cut(false); return nil }},
		{"reset", func(int) error { proxy.cut(true); return nil }},
	}
	ops := []struct{ name, method, path, body string }{
		{"write", "POST", "/api/lost_writes", `{"title":"x"}`},
		{"read", "GET", "/api/lost_reads", ""},
		{"action", "POST", "/api/todos/sleep", ""},
	}
	var unexpected atomic.Int32
	for _, k := range kills {
		for _, op := range ops {
			// One at a time: a cut breaks every connection of the pool.
			t.Run(k.name+"/"+op.name, func(t *testing.T) {
				// No statement of an earlier case may still be sleeping.
				for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
					var n int
					if err := watch.QueryRow(context.Background(), `select count(*) from pg_stat_activity
where application_name = $1 and wait_event = 'PgSleep'`, app).Scan(&n); err != nil {
						t.Fatal(err)
					}
					if n == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d statements of earlier cases still sleep", n)
					}
				}
				// Connections a cut left idle in the pool are not reused.
				pool.Reset()
				done := make(chan resp, 1)
				start := time.Now()
				go func() { done <- doQuiet(s.URL, op.method, op.path, alice, op.body) }()
				var pid int
				for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
					err := watch.QueryRow(context.Background(), `select pid from pg_stat_activity
where application_name = $1 and wait_event = 'PgSleep' and state = 'active' limit 1`, app).Scan(&pid)
					if err == nil {
						break
					}
					select {
					case r := <-done:
						t.Fatalf("the %s answered before it reached Postgres: %s", op.name, r)
					default:
					}
					if time.Now().After(deadline) {
						t.Fatalf("the %s never reached Postgres: %v", op.name, err)
					}
				}
				// The sleeping backend of a cut connection still runs: end it.
				defer watch.Exec(context.Background(), "select pg_terminate_backend($1)", pid)
				if err := k.kill(pid); err != nil {
					t.Fatal(err)
				}
				var r resp
				select {
				case r = <-done:
				case <-time.After(15 * time.Second):
					t.Fatal("no answer 15 s after the connection was lost")
				}
				if r.status == 500 {
					unexpected.Add(1)
				}
				isProblem(t, r, 503, "unavailable")
				if r.header.Get("Retry-After") == "" {
					t.Errorf("no Retry-After: %v", r.header)
				}
				if !strings.Contains(r.body, "database is unavailable") {
					t.Errorf("answered %s, want the database named unavailable", r.body)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("answered after %v: the statement timeout, not the lost connection, answered", d)
				}
			})
		}
	}
	if n := unexpected.Load(); n > 0 {
		t.Errorf("%d requests answered 500", n)
	}
	// The pool recovers: the next write succeeds through new connections.
	b.exec("drop trigger lost_sleep on lost_writes")
	if r := doQuiet(s.URL, "POST", "/api/lost_writes", alice, `{"title":"after"}`); r.status != 201 {
		t.Fatalf("write after the faults: %s", r)
	}
}

// doQuiet is do without a testing.TB (for goroutines).
func doQuiet(base, method, path, who, body string) resp {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		return resp{status: -1, body: err.Error()}
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("X-Test-User", who)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return resp{status: -1, body: err.Error()}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, string(b)}
}

// Postgres crashes (a backend killed with SIGKILL, on a throwaway cluster
// of the test's own: the postmaster then ends every other backend and
// recovers) while a write and a read run: the write whose backend died
// reads EOF mid-statement, the read is ended by the crash (57P02); both
// answer 503 with Retry-After, and once Postgres has recovered the next
// write succeeds.
func TestPostgresCrashUnderWritesIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, _ := pgtest.Cluster(t)
	pc, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	db.ConfigurePool(pc)
	pc.MaxConns = 4
	pc.ConnConfig.RuntimeParams["application_name"] = "tg-crash"
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := db.Migrate(ctx, pool); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, fixtureSQL+slowLostSQL); err != nil {
		t.Fatal(err)
	}
	watch := pgtest.Pool(t, u)
	// The throwaway cluster commits asynchronously (synchronous_commit
	// off): a checkpoint puts the schema where crash recovery finds it.
	if _, err := watch.Exec(ctx, "checkpoint"); err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, pool: pool, db: db.New(pool, &db.Config{StatementTimeout: 20 * time.Second})}
	mux := http.NewServeMux()
	mux.Handle("/api/lost_writes", http.StripPrefix("/api/lost_writes", b.resource("lost_writes", nil)))
	mux.Handle("/api/lost_reads", http.StripPrefix("/api/lost_reads", b.resource("lost_reads", nil)))
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)

	write, read := make(chan resp, 1), make(chan resp, 1)
	go func() { write <- doQuiet(s.URL, "POST", "/api/lost_writes", alice, `{"title":"x"}`) }()
	go func() { read <- doQuiet(s.URL, "GET", "/api/lost_reads", alice, "") }()
	var writer int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		var n int
		err := watch.QueryRow(ctx, `select count(*), coalesce(min(pid) filter (where query like '%lost_writes%'), 0) from pg_stat_activity
where application_name = 'tg-crash' and wait_event = 'PgSleep'`).Scan(&n, &writer)
		if err == nil && n == 2 && writer != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the write and the read never both ran in Postgres (%d, %v)", n, err)
		}
	}
	if err := syscall.Kill(writer, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan resp{"write": write, "read": read} {
		select {
		case r := <-ch:
			isProblem(t, r, 503, "unavailable")
			if r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "database is unavailable") {
				t.Errorf("%s during the crash: %s %v", name, r, r.header)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: no answer 15 s after the crash", name)
		}
	}
	// Recovered: the pool reconnects and writes go through.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if _, err := watch.Exec(ctx, "drop trigger if exists lost_sleep on lost_writes"); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("Postgres did not recover: %v", err)
		}
	}
	var r resp
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) { // sleep: poll step of the bounded wait around it
		if r = doQuiet(s.URL, "POST", "/api/lost_writes", alice, `{"title":"after"}`); r.status == 201 || time.Now().After(deadline) {
			break
		}
		if r.status != 503 {
			t.Fatalf("write during recovery: %s", r)
		}
	}
	if r.status != 201 {
		t.Fatalf("write after recovery: %s", r)
	}
}
