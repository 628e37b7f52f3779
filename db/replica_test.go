package db_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/internal/replicatest"
)

func TestParsePosition(t *testing.T) {
	for _, s := range []string{"0/0", "16/B374D848", "FFFFFFFF/FFFFFFFF", "0/1"} {
		p, err := db.ParsePosition(s)
		if err != nil {
			t.Fatalf("ParsePosition(%q): %v", s, err)
		}
		if got := p.String(); got != s {
			t.Fatalf("ParsePosition(%q).String() = %q", s, got)
		}
	}
	for _, s := range []string{"", "/", "0/", "/0", "x/1", "1/g", "123456789/0", "0/123456789", "1 /2", "-1/2", "1/2/3", "+1/2"} {
		if _, err := db.ParsePosition(s); err == nil {
			t.Fatalf("ParsePosition(%q) accepted", s)
		}
	}
}

// replicated starts a primary and a streaming replica with table rw
// (readable and writable by anon) and a DB routing reads to the replica.
func replicated(t *testing.T, cfg *db.Config) (*pgtest.Replicated, *db.DB, *pgxpool.Pool) {
	t.Helper()
	rep := pgtest.StartReplicated(t)
	primary := pgtest.Pool(t, rep.PrimaryURL)
	replica := pgtest.Pool(t, rep.ReplicaURL)
	if _, err := primary.Exec(context.Background(), `create table rw (id serial primary key, v text not null);
		grant select, insert on rw to anon; grant usage on sequence rw_id_seq to anon`); err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &db.Config{}
	}
	cfg.Replicas = []*pgxpool.Pool{replica}
	cfg.ReplicaPoll = 10 * time.Millisecond
	d := db.New(primary, cfg)
	t.Cleanup(d.Close)
	waitRotation(t, d, true)
	return rep, d, primary
}

func waitRotation(t *testing.T, d *db.DB, want bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if st := d.ReplicaStats(); st.Replicas[0].InRotation == want {
			return
		}
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
	}
	t.Fatalf("replica in rotation did not become %v within 30s: %+v", want, d.ReplicaStats())
}

var anon = db.Caller{}

// insert writes one row as anon, tracking the commit position.
func insert(t *testing.T, d *db.DB, v string) (int, db.Position) {
	t.Helper()
	ctx, pos := db.TrackPosition(context.Background())
	var id int
	if err := d.Run(ctx, anon, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(ctx, `insert into rw (v) values ($1) returning id`, v).Scan(&id)
	}); err != nil {
		t.Fatal(err)
	}
	if *pos == 0 {
		t.Fatal("a write on a DB with replicas recorded no position")
	}
	return id, *pos
}

// count reads how many rows of id exist, as a replica-capable read at pos.
func count(t *testing.T, d *db.DB, id int, pos db.Position) int {
	t.Helper()
	ctx := db.WithPosition(context.Background(), pos)
	var n int
	if err := d.Run(ctx, anon, db.RunOpts{ReadOnly: true}, func(q db.Querier) error {
		return q.QueryRow(ctx, `select count(*) from rw where id = $1`, id).Scan(&n)
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestReplicaReadYourWrites: behind a replica that replays 500 ms late,
// every read carrying its write's position sees the write (from the
// primary, after a bounded wait); a read whose position the replica has
// passed, and a read without one, are served by the replica; a Tx commit
// records its position in the commit's round trip.
func TestReplicaReadYourWrites(t *testing.T) {
	rep, d, _ := replicated(t, &db.Config{ReplicaWait: 2 * time.Millisecond})
	if err := rep.Replica.SetApplyDelay(500 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	replicaReads := func() uint64 { return d.ReplicaStats().Replicas[0].Reads }

	stale := 0
	const n = 100
	var lastID int
	var lastPos db.Position
	before := d.ReplicaStats()
	for i := 0; i < n; i++ {
		id, pos := insert(t, d, "x")
		if count(t, d, id, pos) != 1 {
			stale++
		}
		lastID, lastPos = id, pos
	}
	after := d.ReplicaStats()
	if stale != 0 {
		t.Fatalf("%d of %d reads after the caller's own write missed it", stale, n)
	}
	t.Logf("%d read-after-write: replica served %d, primary %d (position not replayed), waits %d", n,
		after.Replicas[0].Reads-before.Replicas[0].Reads,
		after.PrimaryReads[db.ReasonPosition]-before.PrimaryReads[db.ReasonPosition], after.Waits-before.Waits)

	// Once the replica has replayed past the position, it serves the read.
	if err := replicatest.WaitReplayed(context.Background(), d, nil, lastPos); err != nil {
		t.Fatal(err)
	}
	r0 := replicaReads()
	if count(t, d, lastID, lastPos) != 1 {
		t.Fatal("the replica, past the position, did not show the row")
	}
	if replicaReads() != r0+1 {
		t.Fatalf("a read whose position the replica has passed was not served by it: %+v", d.ReplicaStats())
	}
	// Without a position, a read goes to the replica (and may be stale).
	r0 = replicaReads()
	_ = count(t, d, lastID, 0)
	if replicaReads() != r0+1 {
		t.Fatalf("a read without a position was not served by the replica: %+v", d.ReplicaStats())
	}

	// The request's span names where each read ran.
	for _, c := range []struct {
		pos  db.Position
		want string
	}{{0, "replica0"}, {^db.Position(0), "primary"}} {
		sp := &recordingSpan{}
		ctx := trace.ContextWithSpan(db.WithPosition(context.Background(), c.pos), sp)
		if err := d.Run(ctx, anon, db.RunOpts{ReadOnly: true}, func(q db.Querier) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if len(sp.attrs) != 1 || string(sp.attrs[0].Key) != db.TargetAttr || sp.attrs[0].Value.AsString() != c.want {
			t.Fatalf("span attributes of a read at %v: %v, want %s=%s", c.pos, sp.attrs, db.TargetAttr, c.want)
		}
	}

	// A Tx records the position after its commit.
	ctx, pos := db.TrackPosition(context.Background())
	var id int
	if err := d.Run(ctx, anon, db.RunOpts{Tx: true}, func(q db.Querier) error {
		return q.QueryRow(ctx, `insert into rw (v) values ('tx') returning id`).Scan(&id)
	}); err != nil {
		t.Fatal(err)
	}
	if *pos == 0 || *pos < lastPos {
		t.Fatalf("Tx recorded position %v (last write at %v)", *pos, lastPos)
	}
	if count(t, d, id, *pos) != 1 {
		t.Fatal("a read at a Tx's position missed its row")
	}
	// The position read in the commit's round trip is past the commit:
	// the replica, once at it, shows the row.
	if err := rep.Replica.SetApplyDelay(0); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for d.ReplicaStats().Replicas[0].Replay < *pos && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // sleep: poll step of the bounded wait above
	}
	rp := pgtest.Pool(t, rep.ReplicaURL)
	var got int
	if err := rp.QueryRow(context.Background(), `select count(*) from rw where id = $1`, id).Scan(&got); err != nil || got != 1 {
		t.Fatalf("replica at the Tx's position: count %d, %v", got, err)
	}
}

// TestReplicaStoppedUnderLoad: readers keep reading a row they wrote
// (carrying its position) while the replica stops and starts again: no
// read fails or misses the row, reads move to the primary while the
// replica is down and back to it once it returns.
func TestReplicaStoppedUnderLoad(t *testing.T) {
	rep, d, _ := replicated(t, nil)
	id, pos := insert(t, d, "x")
	rctx := db.WithPosition(context.Background(), pos)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var reads, failures atomic.Int64
	var firstErr atomic.Value
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				var n int
				err := d.Run(rctx, anon, db.RunOpts{ReadOnly: true}, func(q db.Querier) error {
					return q.QueryRow(rctx, `select count(*) from rw where id = $1`, id).Scan(&n)
				})
				reads.Add(1)
				if err != nil || n != 1 {
					failures.Add(1)
					firstErr.CompareAndSwap(nil, errors.Join(err, errors.New("or the row was missing")))
				}
			}
		}()
	}
	time.Sleep(300 * time.Millisecond) // sleep: the readers run for a while in each phase (both servers up, replica down, back up)
	s0 := d.ReplicaStats()
	if err := rep.Replica.StopServer(); err != nil {
		t.Fatal(err)
	}
	waitRotation(t, d, false)
	time.Sleep(300 * time.Millisecond) // sleep: the readers run for a while with the replica down
	s1 := d.ReplicaStats()
	if err := rep.Replica.StartServer(); err != nil {
		t.Fatal(err)
	}
	waitRotation(t, d, true)
	time.Sleep(300 * time.Millisecond) // sleep: the readers run for a while with the replica back
	cancel()
	wg.Wait()
	s2 := d.ReplicaStats()
	t.Logf("reads %d; before stop: replica %d; while stopped: replica +%d, primary +%d (fallback +%d); after restart: replica +%d",
		reads.Load(), s0.Replicas[0].Reads, s1.Replicas[0].Reads-s0.Replicas[0].Reads,
		s1.PrimaryReads[db.ReasonNoReplica]-s0.PrimaryReads[db.ReasonNoReplica], s1.PrimaryReads[db.ReasonFallback],
		s2.Replicas[0].Reads-s1.Replicas[0].Reads)
	if f := failures.Load(); f != 0 {
		t.Fatalf("%d of %d reads failed while the replica stopped: %v", f, reads.Load(), firstErr.Load())
	}
	if s0.Replicas[0].Reads == 0 {
		t.Fatal("the replica served no read before it stopped")
	}
	if s1.PrimaryReads[db.ReasonNoReplica] == s0.PrimaryReads[db.ReasonNoReplica] {
		t.Fatal("the primary served no read while the replica was down")
	}
	if s2.Replicas[0].Reads == s1.Replicas[0].Reads {
		t.Fatal("reads did not move back to the replica after it returned")
	}
}

// TestReplicaPromotedLeavesRotation: a replica that is promoted (no
// longer in recovery: its data diverges from the primary's from then on)
// leaves the rotation and reads go to the primary; a replica lagging past
// MaxReplicaLag leaves it too.
func TestReplicaPromotedLeavesRotation(t *testing.T) {
	rep, d, _ := replicated(t, &db.Config{MaxReplicaLag: 300 * time.Millisecond})
	if err := rep.Replica.SetApplyDelay(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	insert(t, d, "lag")
	waitRotation(t, d, false)
	if st := d.ReplicaStats().Replicas[0]; st.State != "lagging" || st.Lag <= 300*time.Millisecond {
		t.Fatalf("a replica 2 s behind: %+v", st)
	}
	if err := rep.Replica.SetApplyDelay(0); err != nil {
		t.Fatal(err)
	}
	waitRotation(t, d, true)

	if err := rep.Replica.Promote(); err != nil {
		t.Fatal(err)
	}
	waitRotation(t, d, false)
	if st := d.ReplicaStats().Replicas[0]; st.State != "not_in_recovery" {
		t.Fatalf("a promoted replica: %+v", st)
	}
	p0 := d.ReplicaStats().PrimaryReads[db.ReasonNoReplica]
	id, pos := insert(t, d, "after promotion")
	if count(t, d, id, pos) != 1 || count(t, d, id, 0) != 1 {
		t.Fatal("reads after the promotion missed a row of the primary")
	}
	if d.ReplicaStats().PrimaryReads[db.ReasonNoReplica] != p0+2 {
		t.Fatalf("reads after the promotion did not go to the primary: %+v", d.ReplicaStats())
	}
}

// recordingSpan records the attributes set on it.
type recordingSpan struct {
	noop.Span
	attrs []attribute.KeyValue
}

func (s *recordingSpan) IsRecording() bool { return true }

func (s *recordingSpan) SetAttributes(kv ...attribute.KeyValue) { s.attrs = append(s.attrs, kv...) }
