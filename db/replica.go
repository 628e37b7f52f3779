package db

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of read replica routing (see [Config]).
const (
	// DefaultMaxReplicaLag is the replay lag past which a replica leaves
	// the rotation.
	DefaultMaxReplicaLag = 5 * time.Second
	// DefaultReplicaWait bounds how long a read carrying a position waits
	// for a replica to replay past it before it goes to the primary.
	DefaultReplicaWait = 5 * time.Millisecond
	// DefaultReplicaPoll is how often each replica's state is read.
	DefaultReplicaPoll = 20 * time.Millisecond
)

// Read targets and the reasons a replica-capable read went to the primary,
// as [ReplicaStats] counts them and the metrics name them.
const (
	TargetPrimary = "primary"
	TargetReplica = "replica"

	// ReasonNoReplica: no replica was in rotation.
	ReasonNoReplica = "no_replica"
	// ReasonPosition: no replica had replayed past the read's position
	// within the wait.
	ReasonPosition = "position"
	// ReasonFallback: the replica failed during the read, which ran again
	// on the primary.
	ReasonFallback = "fallback"
)

// replica is one read replica and what its monitor last saw.
type replica struct {
	pool   *pgxpool.Pool
	name   string        // "replica0", "replica1": never the host
	up     atomic.Bool   // in rotation
	replay atomic.Uint64 // last replay position seen (0 while out)
	floor  Position      // highest replay position ever seen (the monitor's own)
	lag    atomic.Int64  // replay lag in ns, as last measured
	state  atomic.Pointer[string]
	reads  atomic.Uint64 // reads served
}

// replicaSet routes reads among replicas and watches them.
type replicaSet struct {
	list   []*replica
	next   atomic.Uint32
	maxLag time.Duration
	wait   time.Duration
	poll   time.Duration

	primaryReads [3]atomic.Uint64 // by reason: no replica, position, fallback
	waits        atomic.Uint64    // reads that waited for a replica to catch up

	mu      sync.Mutex
	samples []sample // the primary's flush position over time, oldest first
	// start is the primary's first sampled position: a replica enters
	// the rotation once it has replayed it (the schema the server started
	// with, migrations included). Zero until the primary answered.
	start atomic.Uint64

	stop      chan struct{}
	done      sync.WaitGroup
	closeOnce sync.Once
}

// sample is where the primary's log stood at a time.
type sample struct {
	at  time.Time
	pos Position
}

// Replica states as [ReplicaStats] reports them.
const (
	stateStarting    = "starting"
	stateUp          = "up"
	stateUnreachable = "unreachable"
	statePromoted    = "not_in_recovery"
	stateLagging     = "lagging"
)

var stateNames = map[string]*string{}

func init() {
	for _, s := range []string{stateStarting, stateUp, stateUnreachable, statePromoted, stateLagging} {
		stateNames[s] = &s
	}
}

func newReplicaSet(primary *pgxpool.Pool, cfg *Config) *replicaSet {
	rs := &replicaSet{maxLag: DefaultMaxReplicaLag, wait: DefaultReplicaWait, poll: DefaultReplicaPoll,
		stop: make(chan struct{})}
	if cfg.MaxReplicaLag > 0 {
		rs.maxLag = cfg.MaxReplicaLag
	}
	if cfg.ReplicaWait != 0 {
		rs.wait = max(cfg.ReplicaWait, 0)
	}
	if cfg.ReplicaPoll > 0 {
		rs.poll = cfg.ReplicaPoll
	}
	for i, p := range cfg.Replicas {
		r := &replica{pool: p, name: "replica" + strconv.Itoa(i)}
		r.state.Store(stateNames[stateStarting])
		rs.list = append(rs.list, r)
	}
	rs.done.Add(1 + len(rs.list))
	go rs.watchPrimary(primary)
	for _, r := range rs.list {
		go rs.watch(r)
	}
	return rs
}

func (rs *replicaSet) close() {
	close(rs.stop)
	rs.done.Wait()
}

// sleep waits one poll interval; false when the set is closing.
func (rs *replicaSet) sleep() bool {
	t := time.NewTimer(rs.poll)
	defer t.Stop()
	select {
	case <-rs.stop:
		return false
	case <-t.C:
		return true
	}
}

// watchPrimary samples the primary's flush position, the yardstick of
// every replica's lag.
func (rs *replicaSet) watchPrimary(primary *pgxpool.Pool) {
	defer rs.done.Done()
	keep := rs.maxLag*2 + time.Second
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var txt string
		err := primary.QueryRow(ctx, `select pg_current_wal_flush_lsn()::text`).Scan(&txt)
		cancel()
		if p, perr := ParsePosition(txt); err == nil && perr == nil {
			now := time.Now()
			rs.mu.Lock()
			rs.start.CompareAndSwap(0, uint64(p))
			if n := len(rs.samples); n == 0 || rs.samples[n-1].pos != p {
				rs.samples = append(rs.samples, sample{at: now, pos: p})
			}
			cut := 0
			for cut < len(rs.samples)-1 && now.Sub(rs.samples[cut].at) > keep {
				cut++
			}
			rs.samples = append(rs.samples[:0], rs.samples[cut:]...)
			rs.mu.Unlock()
		}
		if !rs.sleep() {
			return
		}
	}
}

// lagOf returns how long ago the primary first held WAL that a replica
// at replay has not replayed: zero when it has replayed all the primary
// had at the last sample (or nothing is known of the primary).
func (rs *replicaSet) lagOf(replay Position, now time.Time) time.Duration {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, s := range rs.samples {
		if s.pos > replay {
			return now.Sub(s.at)
		}
	}
	return 0
}

// watch reads one replica's state every poll interval and takes it out
// of rotation, or puts it back.
func (rs *replicaSet) watch(r *replica) {
	defer rs.done.Done()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		var inRecovery bool
		var txt *string
		err := r.pool.QueryRow(ctx, `select pg_is_in_recovery(), pg_last_wal_replay_lsn()::text`).Scan(&inRecovery, &txt)
		cancel()
		switch {
		case err != nil:
			r.out(stateUnreachable)
		case !inRecovery || txt == nil:
			r.out(statePromoted)
		default:
			p, perr := ParsePosition(*txt)
			if perr != nil {
				r.out(stateUnreachable)
				break
			}
			lag := rs.lagOf(p, time.Now())
			r.lag.Store(int64(lag))
			switch {
			case rs.start.Load() == 0 || p < Position(rs.start.Load()):
				// Not yet where the primary stood when the server
				// started: its schema may be older than the server's.
				r.out(stateStarting)
			case p < r.floor:
				// Back from a restart, it replays again from its last
				// restart point: until it is past what it showed before,
				// it would show older data than readers already saw.
				r.out(stateStarting)
			case lag > rs.maxLag:
				r.floor = p
				r.replay.Store(uint64(p))
				r.up.Store(false)
				r.state.Store(stateNames[stateLagging])
			default:
				r.floor = p
				r.replay.Store(uint64(p))
				r.up.Store(true)
				r.state.Store(stateNames[stateUp])
			}
		}
		if !rs.sleep() {
			return
		}
	}
}

// out takes r out of rotation and forgets its replay position: a replica
// that restarts may show older data until it has replayed again.
func (r *replica) out(state string) {
	r.up.Store(false)
	r.replay.Store(0)
	r.state.Store(stateNames[state])
}

// pick returns a replica in rotation that has replayed past min, round
// robin; nil when none has.
func (rs *replicaSet) pick(min Position) *replica {
	n := uint32(len(rs.list))
	i := rs.next.Add(1)
	for k := uint32(0); k < n; k++ {
		r := rs.list[(i+k)%n]
		if r.up.Load() && Position(r.replay.Load()) >= min {
			return r
		}
	}
	return nil
}

// anyClose reports whether some replica in rotation lags no more than
// the wait.
func (rs *replicaSet) anyClose() bool {
	for _, r := range rs.list {
		if r.up.Load() && time.Duration(r.lag.Load()) <= rs.wait {
			return true
		}
	}
	return false
}

// anyUp reports whether some replica is in rotation.
func (rs *replicaSet) anyUp() bool {
	for _, r := range rs.list {
		if r.up.Load() {
			return true
		}
	}
	return false
}

// await asks the replicas in rotation directly for their replay position
// until one has replayed past min or the wait is over. Replicas that lag
// more than the wait are not asked: they would not get there in time.
func (rs *replicaSet) await(ctx context.Context, min Position) *replica {
	if rs.wait <= 0 || !rs.anyClose() {
		return nil
	}
	rs.waits.Add(1)
	wctx, cancel := context.WithTimeout(ctx, rs.wait)
	defer cancel()
	for {
		for _, r := range rs.list {
			if !r.up.Load() || time.Duration(r.lag.Load()) > rs.wait {
				continue
			}
			var txt *string
			if err := r.pool.QueryRow(wctx, `select pg_last_wal_replay_lsn()::text`).Scan(&txt); err != nil || txt == nil {
				continue
			}
			if p, err := ParsePosition(*txt); err == nil && p >= min && r.up.Load() {
				// Later reads at p need not ask again (the monitor
				// overwrites it with its next look).
				if cur := r.replay.Load(); cur != 0 && uint64(p) > cur {
					r.replay.CompareAndSwap(cur, uint64(p))
				}
				return r
			}
		}
		select {
		case <-wctx.Done():
			return nil
		case <-time.After(time.Millisecond):
		}
	}
}

// route picks the replica a read at min runs on; nil sends it to the
// primary, counted with its reason.
func (rs *replicaSet) route(ctx context.Context, min Position) *replica {
	if r := rs.pick(min); r != nil {
		return r
	}
	if min != 0 {
		if r := rs.await(ctx, min); r != nil {
			return r
		}
		if rs.anyUp() {
			rs.primaryReads[1].Add(1)
			return nil
		}
	}
	rs.primaryReads[0].Add(1)
	return nil
}

// replicaError marks a failure to get a replica connection.
type replicaError struct{ err error }

func (e *replicaError) Error() string { return "db: replica: " + e.err.Error() }
func (e *replicaError) Unwrap() error { return e.err }

// replicaFault reports whether a read failed because of the replica
// rather than the request, so that it runs again on the primary: no
// connection, a connection lost, a server shutting down or starting (then
// down is true: the replica leaves the rotation until its monitor sees it
// well), a query cancelled by a conflict with recovery, or a write
// refused because a standby is read-only (the replica itself is fine).
func replicaFault(ctx context.Context, err error) (retry, down bool) {
	if err == nil || ctx.Err() != nil {
		return false, false
	}
	var re *replicaError
	if errors.As(err, &re) {
		return true, true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"), strings.HasPrefix(pe.Code, "57P"), pe.Code == "53300":
			return true, true
		case pe.Code == "40001", pe.Code == "25006",
			pe.Code == "42P01", pe.Code == "42703", pe.Code == "42883":
			// A conflict with recovery, a write refused by a standby, or
			// a relation, column or function the replica has not
			// replayed yet (a migration just applied).
			return true, false
		}
		return false, false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	lost := errors.As(err, &ne) || errors.As(err, &ce) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) || pgconn.Timeout(err) ||
		strings.Contains(err.Error(), "conn closed")
	return lost, lost
}

// acquireReplica takes a connection of replica r within the acquire
// timeout. Replicas are not bounded per caller: a read that cannot have a
// replica connection goes to the primary, where the caller's share
// applies.
func (d *DB) acquireReplica(ctx context.Context, r *replica) (lease, error) {
	actx := ctx
	if d.acquireTimeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, d.acquireTimeout)
		defer cancel()
	}
	conn, err := r.pool.Acquire(actx)
	if err != nil {
		return lease{}, &replicaError{err}
	}
	return lease{conn: conn, d: d}, nil
}

// HasReplicas reports whether the DB routes reads to read replicas
// ([Config.Replicas]).
func (d *DB) HasReplicas() bool { return d != nil && d.replicas != nil }

// onReplica runs fn, which writes nothing, on a replica in rotation (one
// that has replayed past the context's position when it carries one), else
// on the primary; see [RunOpts.ReadOnly].
func (d *DB) onReplica(ctx context.Context, c Caller, opts *RunOpts, fn func(q Querier) error) error {
	rs := d.replicas
	if r := rs.route(ctx, PositionOf(ctx)); r != nil {
		s, err := d.settingsFor(c)
		if err != nil {
			return err
		}
		s.timeout = d.timeoutFor(opts)
		s.key = callerKey{}
		if opts.Tx {
			var l lease
			if l, err = d.acquireReplica(ctx, r); err == nil {
				err = d.txOn(ctx, l, s, fn)
			}
		} else {
			err = fn(&readQuerier{d: d, s: s, r: r})
		}
		retry, down := replicaFault(ctx, err)
		if !retry {
			if err == nil {
				r.reads.Add(1)
			}
			noteTarget(ctx, r.name)
			return err
		}
		if down {
			r.out(stateUnreachable)
		}
		rs.primaryReads[2].Add(1)
	}
	noteTarget(ctx, TargetPrimary)
	return d.run(ctx, c, opts, fn)
}

// recordPosition reads the primary's position after a committed write
// into p. A failure leaves p zero: the write stands, the client's next
// read simply carries no position.
func (d *DB) recordPosition(ctx context.Context, p *Position) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	var txt string
	if err := d.pool.QueryRow(ctx, positionSQL).Scan(&txt); err != nil {
		return
	}
	*p, _ = ParsePosition(txt)
}

// commitTracked commits the transaction on conn and reads the position
// after the commit in the same round trip: Postgres runs a COMMIT of a
// pipeline at once, so the statement after it sees the commit done.
func commitTracked(ctx context.Context, conn *pgxpool.Conn, p *Position) error {
	b := &pgx.Batch{}
	b.Queue("commit")
	b.Queue(positionSQL)
	br := conn.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		return err
	}
	var txt string
	if err := br.QueryRow().Scan(&txt); err == nil {
		*p, _ = ParsePosition(txt)
	}
	return br.Close()
}

// ReplicaState is what [DB.ReplicaStats] reports of one replica.
type ReplicaState struct {
	// Name is "replica0", "replica1", … in [Config.Replicas] order.
	Name string
	// InRotation reports whether reads are routed to it.
	InRotation bool
	// State is up, starting, unreachable, not_in_recovery or lagging.
	State string
	// Lag is its replay lag as last measured.
	Lag time.Duration
	// Replay is the last replay position seen (zero while out of rotation).
	Replay Position
	// Reads counts the reads it served.
	Reads uint64
}

// ReplicaStats is a snapshot of read routing.
type ReplicaStats struct {
	// Replicas are the replicas in [Config.Replicas] order.
	Replicas []ReplicaState
	// PrimaryReads counts replica-capable reads the primary served, by
	// reason: ReasonNoReplica, ReasonPosition, ReasonFallback.
	PrimaryReads map[string]uint64
	// Waits counts reads that waited for a replica to replay past their
	// position.
	Waits uint64
}

// ReplicaStats returns the routing counters and each replica's state;
// the zero value without replicas.
func (d *DB) ReplicaStats() ReplicaStats {
	rs := d.replicas
	if rs == nil {
		return ReplicaStats{}
	}
	st := ReplicaStats{Waits: rs.waits.Load(), PrimaryReads: map[string]uint64{
		ReasonNoReplica: rs.primaryReads[0].Load(), ReasonPosition: rs.primaryReads[1].Load(),
		ReasonFallback: rs.primaryReads[2].Load()}}
	for _, r := range rs.list {
		st.Replicas = append(st.Replicas, ReplicaState{Name: r.name, InRotation: r.up.Load(), State: *r.state.Load(),
			Lag: time.Duration(r.lag.Load()), Replay: Position(r.replay.Load()), Reads: r.reads.Load()})
	}
	return st
}

// Close stops the monitor of the read replicas. It closes no pool (the
// caller owns them). A DB without replicas has nothing to stop.
func (d *DB) Close() {
	if d.replicas != nil {
		d.replicas.closeOnce.Do(d.replicas.close)
	}
}
