package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
)

// demoSchemaBefore reads demo_schema_per_row.sql: the demo's schema with
// its policies written the way the per-statement helpers replace (helpers
// called in the row filter, is_member per row). It is the "before" of the
// policy benchmarks, run on today's helpers.
func demoSchemaBefore(tb testing.TB) string {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "demo_schema_per_row.sql"))
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// hookedClaims returns claims as tablegate.access_token_hook (a Supabase
// custom access token hook) rewrites them on pool: with the subject's
// memberships claim.
func hookedClaims(tb testing.TB, pool *pgxpool.Pool, claims []byte) []byte {
	tb.Helper()
	var out []byte
	err := pool.QueryRow(context.Background(), `select tablegate.access_token_hook(jsonb_build_object('claims', $1::jsonb)) -> 'claims'`,
		string(claims)).Scan(&out)
	if err != nil || !bytes.Contains(out, []byte(`"memberships"`)) {
		tb.Fatalf("access token hook: %s, %v", out, err)
	}
	return out
}

// ownedIDs returns the ids of the rows the realistic caller owns in table.
func ownedIDs(tb testing.TB, pool *pgxpool.Pool) []string {
	tb.Helper()
	rows, err := pool.Query(context.Background(), `select id::text from public.todos where owner_id = $1 order by id`, realCallerID)
	if err != nil {
		tb.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) < benchPage+1 {
		tb.Fatalf("owned ids: %d, %v", len(ids), err)
	}
	return ids
}

// dbStatement is a load function running one statement the way db.Read
// runs it: the caller's settings and the statement in one batch, one round
// trip. The GET statement takes the key, cycling through ids; check
// checks every answer's number of rows (a policy that hides the row must
// not look fast).
func dbStatement(pool *pgxpool.Pool, claims []byte, sql string, ids []string, check func(rows int) error) func(ctx context.Context) error {
	var n atomic.Int64
	return func(ctx context.Context) error {
		b := &pgx.Batch{}
		b.Queue("select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)", "authenticated", claims)
		got := 0
		var q *pgx.QueuedQuery
		if ids != nil {
			q = b.Queue(sql, ids[int(n.Add(1))%len(ids)])
		} else {
			q = b.Queue(sql)
		}
		q.Query(func(rows pgx.Rows) error {
			defer rows.Close()
			for rows.Next() {
				got++
			}
			return rows.Err()
		})
		if err := pool.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return check(got)
	}
}

// policyTables are the tables of the realistic fixture, one read policy each.
var policyTables = []struct{ name, table string }{
	{"owner", "public.todos_owner"},
	{"demo", "public.todos"},
	{"module", "public.todos_module"},
	{"open", "public.todos_open"},
	{"function", "public.todos_fn"},
}

// BenchmarkPolicyDB measures, at the database, the statements rest sends
// for GET /{id} and for a 50-row first page of a list, on the realistic
// fixture (realistic_fixture_test.go), under each read policy: the owner
// policy (the floor), the demo's tenant + membership policy (the view
// tablegate.member_tenant), the policies of
// enable_tenant_policies(require_membership), none (using (true)) and the
// demo's policy before the views ("function": member_tenant_id()).
// "before" runs the demo's schema with its per-row policies
// (demo_schema_per_row.sql) on the same helpers, in the same run;
// "demo-hook" is the demo's policy for a token carrying the memberships
// claim tablegate.access_token_hook writes (no memberships table probe).
//
// Each statement runs as db.Read runs it (settings + statement in one pgx
// batch) from 64 goroutines over 16 connections, in alternating rounds.
// Metrics: <policy>-ops/s; <policy>/owner = throughput ratio to the owner
// policy (targets: demo get ≥ 0.80, demo list ≥ 0.70) and
// <policy>/owner-median, the median of the per-round ratios;
// <policy>-db-cpu-µs/op, the CPU time of the Postgres backends per
// statement (from /proc), and <policy>-cpu-µs/op, that plus this process's
// CPU time (client and pgx) per statement; <policy>/owner-cpu = the owner's
// cpu-µs/op over the policy's: what the throughput ratio comes to when the
// machine is not shared (on a machine whose other jobs take most of the
// CPU, throughput ratios swing by ±30% from run to run; CPU per statement
// does not); load-1m.
func BenchmarkPolicyDB(b *testing.B) {
	pool := setupRealistic(b, demoSchema(b), 0)
	before := setupRealistic(b, demoSchemaBefore(b), 0)
	_, claims := realCallerAuth(b)
	hooked := hookedClaims(b, pool, claims)
	ids := ownedIDs(b, pool)
	one := func(n int) error {
		if n != 1 {
			return fmt.Errorf("%d rows, want 1", n)
		}
		return nil
	}
	page := func(n int) error {
		if n != benchPage+1 {
			return fmt.Errorf("page of %d rows", n)
		}
		return nil
	}
	for _, kind := range []string{"get", "list"} {
		b.Run(kind, func(b *testing.B) {
			var subs []*loadSubject
			add := func(name string, p *pgxpool.Pool, table string, claims []byte) {
				get, list := restStatements(b, p, table, mustInt(ids[0]))
				fn := dbStatement(p, claims, list, nil, page)
				if kind == "get" {
					fn = dbStatement(p, claims, get, ids, one)
				}
				subs = append(subs, &loadSubject{name: name, fn: fn, backendCPU: backendCPU(b, p)})
			}
			for _, pt := range policyTables {
				add(pt.name, pool, pt.table, claims)
			}
			add("before", before, "public.todos", claims)
			add("demo-hook", pool, "public.todos", hooked)
			for b.Loop() {
				alternate(b, 4, time.Second, subs)
			}
			perOp := func(s *loadSubject) float64 {
				return float64((s.cpu + s.dbcpu).Nanoseconds()) / 1e3 / float64(len(s.lat))
			}
			for _, s := range subs {
				b.ReportMetric(s.ops(), s.name+"-ops/s")
				b.ReportMetric(float64(s.dbcpu.Nanoseconds())/1e3/float64(len(s.lat)), s.name+"-db-cpu-µs/op")
				b.ReportMetric(perOp(s), s.name+"-cpu-µs/op")
				if s != subs[0] {
					b.ReportMetric(s.ops()/subs[0].ops(), s.name+"/owner")
					b.ReportMetric(medianRatio(s, subs[0]), s.name+"/owner-median")
					b.ReportMetric(perOp(subs[0])/perOp(s), s.name+"/owner-cpu")
				}
			}
			b.ReportMetric(loadavg(), "load-1m")
		})
	}
}

// backendCPU returns a function summing the CPU time (user + system) the
// Postgres backends of pool's connections have used, read from /proc (the
// server runs on this machine). It opens every connection of the pool
// first, so the set of backends is fixed.
func backendCPU(tb testing.TB, pool *pgxpool.Pool) func() time.Duration {
	tb.Helper()
	ctx := context.Background()
	var conns []*pgxpool.Conn
	var pids []uint32
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			tb.Fatal(err)
		}
		conns = append(conns, c)
		pids = append(pids, c.Conn().PgConn().PID())
	}
	for _, c := range conns {
		c.Release()
	}
	tick := time.Second / 100 // USER_HZ on Linux
	return func() time.Duration {
		var total time.Duration
		for _, pid := range pids {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil {
				continue // a backend that ended: its time is lost
			}
			f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			total += time.Duration(ut+st) * tick
		}
		return total
	}
}

// countItems counts the elements of the JSON array the list statement
// returns (top-level objects).
func countItems(raw []byte) int {
	depth, n := 0, 0
	inStr, esc := false, false
	for _, c := range raw {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case inStr:
		case c == '{':
			if depth == 1 {
				n++
			}
			depth++
		case c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return n
}

func mustInt(s string) int64 {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

// helperCalls are the helpers whose cost per call BenchmarkHelpers
// measures, each in an expression that refers to the row (g) so that
// Postgres evaluates it once per row rather than once per statement.
// before, when set, is the per-row expression the helper replaces in a
// policy.
var helperCalls = []struct{ name, expr, before string }{
	{"auth.uid", `auth.uid()::text`, ""},
	{"auth.jwt", `auth.jwt()::text`, ""},
	{"current_tenant_id", `tablegate.current_tenant_id()::text`, ""},
	{"claim_text", `tablegate.claim_text('tenant_id')`, ""},
	{"claim_array", `tablegate.claim_array('roles')::text`, ""},
	{"is_anonymous", `tablegate.is_anonymous()::text`, ""},
	{"is_full_user", `tablegate.is_full_user()::text`, ""},
	{"has_role", `tablegate.has_role('member')::text`, ""},
	{"is_approver", `tablegate.is_approver()::text`, ""},
	{"is_member", `tablegate.is_member('tenant', case when g > 0 then '` + realCallerTenant + `' end)::text`, ""},
	{"is_member_role", `tablegate.is_member('tenant', case when g > 0 then '` + realCallerTenant + `' end, 'member')::text`, ""},
	{"tenant_topic_allowed", `tablegate.tenant_topic_allowed(case when g > 0 then 'tenant:` + realCallerTenant + `:todos' end)::text`, ""},
	{"member_tenant_id", `(case when g > 0 then tablegate.member_tenant_id() end)::text`,
		`(case when g > 0 and tablegate.is_member('tenant', tablegate.current_tenant_id()::text) then tablegate.current_tenant_id() end)::text`},
	{"full_member_tenant_id", `(case when g > 0 then tablegate.full_member_tenant_id() end)::text`,
		`(case when g > 0 and not tablegate.is_anonymous() and tablegate.is_member('tenant', tablegate.current_tenant_id()::text) then tablegate.current_tenant_id() end)::text`},
	// The views, read in a sub-select that refers to the row so that it
	// runs once per row; before is the pair they replace.
	{"member_tenant_view", `(select id from tablegate.member_tenant where g > 0)::text`,
		`(case when g > 0 and tablegate.is_member('tenant', tablegate.current_tenant_id()::text) then tablegate.current_tenant_id() end)::text`},
	{"full_member_tenant_view", `(select id from tablegate.full_member_tenant where g > 0)::text`,
		`(case when g > 0 and not tablegate.is_anonymous() and tablegate.is_member('tenant', tablegate.current_tenant_id()::text) then tablegate.current_tenant_id() end)::text`},
}

// helperRows is how many rows each helper statement evaluates, and
// helperReps how many times each statement runs per measurement.
const (
	helperRows = 5000
	helperReps = 8
)

// BenchmarkHelpers measures each SQL helper's cost per call, in
// microseconds of Postgres backend CPU (from /proc, so other jobs on the
// machine hardly move it), as the realistic caller (role authenticated,
// the demo's claims, a membership row): the CPU time of
// select count(*) from generate_series(1, 5000) g where g::text || <helper> <> ”
// minus the same statement without the helper, divided by 5000. "before"
// evaluates the helper's before expression (the per-row form it replaces)
// on a database with the per-row demo schema, interleaved in the same run.
//
// Metrics: <helper>-µs/call and <helper>-before-µs/call; load-1m.
func BenchmarkHelpers(b *testing.B) {
	cur := setupRealistic(b, demoSchema(b), 0)
	old := setupRealistic(b, demoSchemaBefore(b), 0)
	caller, _ := realCallerAuth(b)
	type side struct {
		d   *db.DB
		cpu func() time.Duration
	}
	sides := []side{{db.New(cur, nil), backendCPU(b, cur)}, {db.New(old, nil), backendCPU(b, old)}}
	cpuOf := func(s side, expr string) time.Duration {
		sql := fmt.Sprintf(`select count(*) from generate_series(1, %d) g where g::text || coalesce(%s, '') <> ''`, helperRows, expr)
		c0 := s.cpu()
		for range helperReps {
			var n int64
			err := s.d.Run(context.Background(), caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
				return q.QueryRow(context.Background(), sql).Scan(&n)
			})
			if err != nil || n != helperRows {
				b.Fatalf("%s: %d, %v", sql, n, err)
			}
		}
		return s.cpu() - c0
	}
	perCall := func(d time.Duration) float64 {
		return float64(d.Nanoseconds()) / 1e3 / (helperRows * helperReps)
	}
	for b.Loop() {
		for _, h := range helperCalls {
			for i, suffix := range []string{"", "-before"} {
				var best float64 = -1
				expr := h.expr
				if i == 1 && h.before != "" {
					expr = h.before
				}
				for range 2 { // the lesser of two: a descheduled backend only adds
					v := perCall(cpuOf(sides[i], expr) - cpuOf(sides[i], `''`))
					if best < 0 || v < best {
						best = v
					}
				}
				b.ReportMetric(best, h.name+suffix+"-µs/call")
			}
		}
	}
	b.ReportMetric(loadavg(), "load-1m")
}
