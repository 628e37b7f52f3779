package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgcluster"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// clusterCPU returns the CPU time (user + system) the postmaster of c and
// every process it started (backends, WAL sender, checkpointer…) have
// used so far, read from /proc (clock ticks of 10 ms).
func clusterCPU(tb testing.TB, c *pgcluster.Cluster) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(c.Dir(), "data", "postmaster.pid"))
	if err != nil {
		tb.Fatal(err)
	}
	pm, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	entries, _ := os.ReadDir("/proc")
	var ticks int64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command's closing parenthesis: state ppid … utime(14) stime(15).
		f := strings.Fields(string(st[strings.LastIndexByte(string(st), ')')+2:]))
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		if pid != pm && ppid != pm {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

// BenchmarkReplicaRead runs one primary and one streaming replica on this
// machine (pgtest.StartReplicated) and reads items by primary key as a
// user under RLS from 16 goroutines:
//
//   - primary: a DB without replicas (every read on the primary);
//   - replica: a DB with the replica, reads without a position;
//   - replica+position: reads carrying a position the replica has passed.
//
// It reports the CPU that the primary's and the replica's Postgres
// processes spent per read (primary-cpu-µs/read, replica-cpu-µs/read),
// and the share of reads the replica served.
//
// BenchmarkReplicaRoute reports what routing and the position check cost
// a read in this process, without a round trip.
func BenchmarkReplicaRead(b *testing.B) {
	rep := pgtest.StartReplicated(b)
	primary := benchPool(b, rep.PrimaryURL)
	replica := benchPool(b, rep.ReplicaURL)
	if _, err := primary.Exec(context.Background(), `
		create table items (id bigint primary key, owner uuid not null, title text not null, done boolean not null default false);
		insert into items select g, '`+benchUser+`', 'item ' || g, g % 2 = 0 from generate_series(1, 10000) g;
		alter table items enable row level security;
		alter table items force row level security;
		create policy own on items for all to authenticated using (owner = (select auth.uid()));
		grant select, insert, update, delete on items to authenticated;
		analyze items;`); err != nil {
		b.Fatal(err)
	}
	claims := `{"role":"authenticated","sub":"` + benchUser + `"}`
	caller := authctx.NewUser(authctx.Claims{"sub": benchUser, "role": "authenticated"}, "t", []byte(claims))
	plain := db.New(primary, nil)
	routed := db.New(primary, &db.Config{Replicas: []*pgxpool.Pool{replica}})
	b.Cleanup(routed.Close)
	// A write's position, and a replica past it.
	ctx, pos := db.TrackPosition(context.Background())
	if err := routed.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
		_, err := q.Exec(ctx, `update items set done = not done where id = 1`)
		return err
	}); err != nil || *pos == 0 {
		b.Fatalf("tracked write: %v, position %v", err, *pos)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		st := routed.ReplicaStats().Replicas[0]
		if st.InRotation && st.Replay >= *pos {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("replica not in rotation past %v: %+v", *pos, st)
		}
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait around it
	}
	for _, c := range []struct {
		name string
		d    *db.DB
		ctx  context.Context
	}{
		{"primary", plain, context.Background()},
		{"replica", routed, context.Background()},
		{"replica+position", routed, db.WithPosition(context.Background(), *pos)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(8)
			r0 := routed.ReplicaStats().Replicas[0].Reads
			p0, q0 := clusterCPU(b, rep.Primary), clusterCPU(b, rep.Replica)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				id := int64(0)
				for pb.Next() {
					id = id%10000 + 1
					err := c.d.Run(c.ctx, caller.DBCaller(), db.RunOpts{ReadOnly: true}, func(q db.Querier) error {
						var got int64
						var title string
						var done bool
						return q.QueryRow(c.ctx, getSQL, id).Scan(&got, &title, &done)
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			p1, q1 := clusterCPU(b, rep.Primary), clusterCPU(b, rep.Replica)
			b.ReportMetric(float64((p1-p0).Microseconds())/float64(b.N), "primary-cpu-µs/read")
			b.ReportMetric(float64((q1-q0).Microseconds())/float64(b.N), "replica-cpu-µs/read")
			b.ReportMetric(float64(routed.ReplicaStats().Replicas[0].Reads-r0)/float64(b.N), "on-replica")
		})
	}
}

// BenchmarkReplicaRoute measures, in this process, what a read pays for
// routing: a read-only Run with a function that sends nothing, on a DB
// without replicas (the plain path), with a replica (pick one in
// rotation), and with a position the replica has passed (the position
// check against the monitor's last replay position). The difference to
// "none" is the routing overhead per read.
func BenchmarkReplicaRoute(b *testing.B) {
	rep := pgtest.StartReplicated(b)
	primary := benchPool(b, rep.PrimaryURL)
	replica := benchPool(b, rep.ReplicaURL)
	caller := authctx.NewUser(authctx.Claims{"sub": benchUser, "role": "authenticated"}, "t",
		[]byte(`{"role":"authenticated","sub":"`+benchUser+`"}`))
	plain := db.New(primary, nil)
	routed := db.New(primary, &db.Config{Replicas: []*pgxpool.Pool{replica}})
	b.Cleanup(routed.Close)
	for deadline := time.Now().Add(30 * time.Second); !routed.ReplicaStats().Replicas[0].InRotation; {
		if time.Now().After(deadline) {
			b.Fatal("replica not in rotation")
		}
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait around it
	}
	pos := routed.ReplicaStats().Replicas[0].Replay
	noop := func(db.Querier) error { return nil }
	for _, c := range []struct {
		name string
		d    *db.DB
		ctx  context.Context
	}{
		{"none", plain, context.Background()},
		{"replica", routed, context.Background()},
		{"replica+position", routed, db.WithPosition(context.Background(), pos)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := c.d.Run(c.ctx, caller.DBCaller(), db.RunOpts{ReadOnly: true}, noop); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchPool(tb testing.TB, u string) *pgxpool.Pool {
	tb.Helper()
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		tb.Fatal(err)
	}
	cfg.MaxConns = 16
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	return pool
}

// BenchmarkReplicaWritePosition measures what recording a write's commit
// position costs, on a DB with a replica: a one-statement write (db.Read:
// one more short statement after the commit) and a transaction (db.Tx:
// the position is read in the COMMIT's round trip), each without and with
// db.TrackPosition.
func BenchmarkReplicaWritePosition(b *testing.B) {
	rep := pgtest.StartReplicated(b)
	primary := benchPool(b, rep.PrimaryURL)
	replica := benchPool(b, rep.ReplicaURL)
	if _, err := primary.Exec(context.Background(), `create table w (id int primary key, n bigint not null default 0);
		insert into w select g from generate_series(1, 64) g; grant select, update on w to anon`); err != nil {
		b.Fatal(err)
	}
	d := db.New(primary, &db.Config{Replicas: []*pgxpool.Pool{replica}})
	b.Cleanup(d.Close)
	anon := authctx.Anon(authctx.ReasonNone)
	for _, c := range []struct {
		name  string
		tx    bool
		track bool
	}{{"read", false, false}, {"read+position", false, true}, {"tx", true, false}, {"tx+position", true, true}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				id := 0
				for pb.Next() {
					id = id%64 + 1
					ctx := context.Background()
					var pos *db.Position
					if c.track {
						ctx, pos = db.TrackPosition(ctx)
					}
					err := d.Run(ctx, anon.DBCaller(), db.RunOpts{Tx: c.tx}, func(q db.Querier) error {
						_, err := q.Exec(ctx, `update w set n = n + 1 where id = $1`, id)
						return err
					})
					if err != nil || (c.track && *pos == 0) {
						b.Errorf("write: %v (position recorded: %v)", err, pos != nil && *pos != 0)
						return
					}
				}
			})
		})
	}
}
