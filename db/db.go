package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Database roles the API runs as.
const (
	RoleAnon          = "anon"
	RoleAuthenticated = "authenticated"
	RoleServiceRole   = "service_role"
)

// Defaults of the time budget (see [Config]).
const (
	// DefaultStatementTimeout bounds every statement a caller's request
	// runs, set inside the request's transaction.
	DefaultStatementTimeout = 5 * time.Second
	// DefaultAcquireTimeout bounds the wait for a pooled connection.
	DefaultAcquireTimeout = 2 * time.Second
)

// Config configures a [DB]. The zero value is the closed default.
type Config struct {
	// UserRoles lists the database roles a user may run as through the
	// token's role claim. A token without a role claim runs as
	// authenticated. Default: ["authenticated"].
	UserRoles []string

	// StatementTimeout bounds each statement of a caller's request: it is
	// set with set_config('statement_timeout', …, true) in the same round
	// trip as the caller's claims, so it lives only for the request's
	// transaction and costs no extra round trip. A statement that runs
	// longer is cancelled by Postgres (SQLSTATE 57014, answered 503 with
	// Retry-After by rest.DBProblem). Zero means [DefaultStatementTimeout];
	// negative sets none (the role's or server's setting applies).
	// Override it per call with [RunOpts].
	//
	// In a transaction ([RunOpts.Tx]) it also bounds each pause between statements, while Go
	// code (a hook, an action) holds the transaction open: it is set, but
	// never below one second, as idle_in_transaction_session_timeout
	// beside the statement timeout (replacing a role's or the server's). A
	// transaction left idle longer is ended by Postgres, which releases its
	// locks and closes its connection (SQLSTATE 25P03, answered 503); the
	// work is never committed.
	StatementTimeout time.Duration

	// AcquireTimeout bounds the wait for a pooled connection when every
	// connection is busy; the request then fails with [ErrPoolBusy]
	// (answered 503 with Retry-After). Zero means [DefaultAcquireTimeout];
	// negative waits as long as the request's context allows.
	AcquireTimeout time.Duration

	// MaxConnsPerCaller bounds the pooled connections one caller holds
	// while others wait: a user (by user id), and every caller without a
	// token together. Service callers (the secret key, the server's own
	// work) are not bounded. The bound is work-conserving: a caller over
	// it still takes a connection nobody else wants (one is idle and no
	// request is queued for one), so one caller alone can use the whole
	// pool. Once the pool is full, a request over the bound waits, within
	// AcquireTimeout, for one of its caller's own connections to come
	// back, then fails with [ErrCallerBusy] (answered 429 with
	// Retry-After), while the connections coming back go to the other
	// callers queued for them: so one caller's slow or many requests never
	// keep everybody else waiting for more than one of its statements.
	// Zero means half the pool's MaxConns (at least one); negative sets no
	// bound.
	MaxConnsPerCaller int

	// Replicas are pools on read replicas of the primary (streaming
	// replicas: Supabase read replicas, RDS/Cloud SQL replicas, Patroni
	// standbys). [DB.Run] with [RunOpts.ReadOnly] runs reads on a
	// replica in rotation; everything else stays on the primary. A
	// background monitor reads each replica's state every ReplicaPoll and
	// takes out of rotation, until it recovers, a replica that does not
	// answer, is not in recovery (promoted), or lags more than
	// MaxReplicaLag. Call [DB.Close] to stop the monitor. Empty: every
	// read runs on the primary and nothing is monitored.
	Replicas []*pgxpool.Pool

	// MaxReplicaLag is the replay lag past which a replica leaves the
	// rotation. Zero means [DefaultMaxReplicaLag].
	MaxReplicaLag time.Duration

	// ReplicaWait bounds how long a read carrying a position
	// ([WithPosition]) waits for a replica to replay past it before it
	// runs on the primary. Zero means [DefaultReplicaWait]; negative
	// waits not at all.
	ReplicaWait time.Duration

	// ReplicaPoll is how often each replica's state and the primary's
	// position are read. Zero means [DefaultReplicaPoll].
	ReplicaPoll time.Duration
}

func (c *Config) validate() error {
	if c == nil {
		return nil
	}
	if c.StatementTimeout > 0 && c.StatementTimeout < time.Millisecond {
		return fmt.Errorf("db: StatementTimeout %v is below 1ms", c.StatementTimeout)
	}
	for i, p := range c.Replicas {
		if p == nil {
			return fmt.Errorf("db: Replicas[%d] is nil", i)
		}
	}
	for _, r := range c.UserRoles {
		if r == "" {
			return errors.New("db: UserRoles holds an empty role")
		}
	}
	return nil
}

// DB runs statements bound to a caller. It is safe for concurrent use.
type DB struct {
	pool           *pgxpool.Pool
	userRoles      []string
	timeout        string // statement_timeout in ms as text; "" sets none
	timeoutArg     any    // timeout boxed once (no allocation per request); nil for none
	acquireTimeout time.Duration
	shares         *shares     // nil: no bound per caller
	replicas       *replicaSet // nil: every read on the primary
}

// New returns a DB over pool. cfg may be nil. New panics on an invalid
// cfg (a StatementTimeout below one millisecond, an empty role), a
// programming error found at start.
func New(pool *pgxpool.Pool, cfg *Config) *DB {
	if err := cfg.validate(); err != nil {
		panic(err.Error())
	}
	d := &DB{pool: pool, userRoles: []string{RoleAuthenticated},
		timeout: timeoutText(DefaultStatementTimeout), acquireTimeout: DefaultAcquireTimeout}
	if cfg != nil {
		if len(cfg.UserRoles) > 0 {
			d.userRoles = slices.Clone(cfg.UserRoles)
		}
		if cfg.StatementTimeout != 0 {
			d.timeout = timeoutText(cfg.StatementTimeout)
		}
		if cfg.AcquireTimeout != 0 {
			d.acquireTimeout = cfg.AcquireTimeout
		}
	}
	if d.timeout != "" {
		d.timeoutArg = d.timeout
	}
	perCaller := 0
	if cfg != nil {
		perCaller = cfg.MaxConnsPerCaller
	}
	d.shares = newShares(pool, perCaller)
	if cfg != nil && len(cfg.Replicas) > 0 {
		d.replicas = newReplicaSet(pool, cfg)
	}
	return d
}

// StatementTimeout returns the statement timeout in force without
// per-call options (0 when none is set).
func (d *DB) StatementTimeout() time.Duration {
	if d.timeout == "" {
		return 0
	}
	ms, _ := strconv.ParseInt(d.timeout, 10, 64)
	return time.Duration(ms) * time.Millisecond
}

// timeoutText renders a statement timeout as Postgres reads it (an integer
// number of milliseconds); "" for none.
func timeoutText(t time.Duration) string {
	if t <= 0 {
		return ""
	}
	ms := t.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10)
}

// boxTimeout returns the statement_timeout parameter of t, nil for none.
func boxTimeout(t time.Duration) any {
	if txt := timeoutText(t); txt != "" {
		return txt
	}
	return nil
}

// timeoutFor returns the statement_timeout parameter of one call (a
// string boxed once), nil for none.
func (d *DB) timeoutFor(o *RunOpts) any {
	switch {
	case o.StatementTimeout == 0:
		return d.timeoutArg
	case o.arg != nil || o.StatementTimeout < 0:
		return o.arg
	}
	return boxTimeout(o.StatementTimeout)
}

// Pool returns the underlying pool (for work that is not caller-bound,
// such as migrations and introspection).
func (d *DB) Pool() *pgxpool.Pool { return d.pool }

// Querier runs statements. It has the method set of sqlc's generated DBTX
// interface, so sqlc queries run on it unchanged.
type Querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// minIdleMillis is the least bound of a pause inside a transaction (ms):
// a tight statement budget (a 100 ms list) must not end transactions for a
// hook's ordinary work or a scheduling delay under load.
const minIdleMillis = "1000"

// settingsSQL sets the caller into the current transaction only;
// settingsTimeoutSQL also sets the request's statement timeout, and
// settingsTxTimeoutSQL, for a transaction that Go holds open between
// statements, the same budget for each pause.
const (
	settingsSQL          = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)`
	settingsTimeoutSQL   = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('statement_timeout', $3, true)`
	settingsTxTimeoutSQL = `select set_config('role', $1, true), set_config('request.jwt.claims', $2, true), set_config('statement_timeout', $3, true), set_config('idle_in_transaction_session_timeout', greatest($3::text::int, ` + minIdleMillis + `)::text, true)`
)

// Static claims of callers without a token.
var (
	anonClaims    = []byte(`{"role":"anon"}`)
	serviceClaims = []byte(`{"role":"service_role"}`)
)

// settings are the resolved role and claims of one caller.
type settings struct {
	key     callerKey // the caller's share of the pool (shareKey)
	role    string
	claims  []byte // sent as text; pgx encodes []byte without a copy
	timeout any    // statement_timeout (ms) as a boxed string; nil sets none
}

// settingsFor resolves the database role and claims JSON of a caller. The
// role follows the role claim of the JSON actually sent, so the role and
// what auth.jwt()/auth.role() read in policies never disagree.
func (d *DB) settingsFor(c Caller) (settings, error) {
	switch c.kind {
	case callerUser:
		if c.claims == nil {
			return settings{}, errNoClaims
		}
		role := RoleAuthenticated
		if c.claimed {
			if !slices.Contains(d.userRoles, c.role) {
				return settings{}, ErrRoleNotAllowed
			}
			role = c.role
		}
		return settings{key: shareKey(c), role: role, claims: c.claims}, nil
	case callerService:
		return settings{role: RoleServiceRole, claims: serviceClaims}, nil
	default:
		return settings{key: shareKey(c), role: RoleAnon, claims: anonClaims}, nil
	}
}

// runStatements runs fn with a Querier that sends every statement
// together with the caller settings in one pipelined round trip (one
// implicit transaction per statement, no BEGIN or COMMIT: Postgres commits
// when the round trip ends, and an error of the statement or of its commit
// rolls it back).
func (d *DB) runStatements(ctx context.Context, s settings, fn func(q Querier) error) error {
	if d.replicas != nil {
		if p := trackedPosition(ctx); p != nil {
			if err := fn(&readQuerier{d: d, s: s}); err != nil {
				return err
			}
			d.recordPosition(ctx, p)
			return nil
		}
	}
	return fn(&readQuerier{d: d, s: s})
}

// readQuerier prefixes each statement with the caller settings.
type readQuerier struct {
	d *DB
	s settings
	r *replica // the replica it reads on; nil: the primary
}

// acquire takes the connection of one statement.
func (q *readQuerier) acquire(ctx context.Context) (lease, error) {
	if q.r != nil {
		return q.d.acquireReplica(ctx, q.r)
	}
	return q.d.acquire(ctx, q.s.key)
}

func (q *readQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	l, err := q.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer l.release()
	return execPrefixed(ctx, l.conn, false, q.s, sql, args)
}

func (q *readQuerier) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	l, err := q.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := queryPrefixed(ctx, l.conn, false, q.s, sql, args)
	if err != nil {
		l.release()
		return nil, err
	}
	rows.(*batchRows).lease = l
	return rows, nil
}

func (q *readQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := q.Query(ctx, sql, args...)
	return &prefixedRow{rows: rows, err: err}
}

// batchBuf is the batch of one prefixed call: reused (sync.Pool) once its
// results are closed, so that a call allocates no batch, no queued
// queries and no argument list for the settings.
type batchBuf struct {
	b    pgx.Batch
	q    [3]pgx.QueuedQuery
	p    [3]*pgx.QueuedQuery
	args [3]any
}

var batchBufs = sync.Pool{New: func() any { return new(batchBuf) }}

// free clears bb (no reference outlives the call) and keeps it for another.
func (bb *batchBuf) free() {
	*bb = batchBuf{}
	batchBufs.Put(bb)
}

// Boxed once: the roles every caller without a role claim of its own
// runs as (boxing a role per call would allocate).
var (
	argAuthenticated any = RoleAuthenticated
	argAnon          any = RoleAnon
	argServiceRole   any = RoleServiceRole
)

func roleArg(role string) any {
	switch role {
	case RoleAuthenticated:
		return argAuthenticated
	case RoleAnon:
		return argAnon
	case RoleServiceRole:
		return argServiceRole
	}
	return role
}

// prefixBatch queues [begin,] settings and the statement. Each queued
// query is written whole (a composite literal), which also clears what
// pgx noted on it in an earlier use.
func prefixBatch(begin bool, s settings, sql string, args []any) *batchBuf {
	bb := batchBufs.Get().(*batchBuf)
	n := 0
	if begin {
		bb.q[n] = pgx.QueuedQuery{SQL: "begin"}
		n++
	}
	bb.args = [3]any{roleArg(s.role), s.claims, s.timeout}
	switch {
	case s.timeout != nil && begin:
		bb.q[n] = pgx.QueuedQuery{SQL: settingsTxTimeoutSQL, Arguments: bb.args[:3]}
	case s.timeout != nil:
		bb.q[n] = pgx.QueuedQuery{SQL: settingsTimeoutSQL, Arguments: bb.args[:3]}
	default:
		bb.q[n] = pgx.QueuedQuery{SQL: settingsSQL, Arguments: bb.args[:2]}
	}
	n++
	bb.q[n] = pgx.QueuedQuery{SQL: sql, Arguments: args}
	n++
	for k := range n {
		bb.p[k] = &bb.q[k]
	}
	bb.b.QueuedQueries = bb.p[:n]
	return bb
}

// sendPrefixed sends the prefixed batch on conn and consumes the prefix
// results. Give back the returned batchBuf after closing the results.
func sendPrefixed(ctx context.Context, conn *pgxpool.Conn, begin bool, s settings, sql string, args []any) (pgx.BatchResults, *batchBuf, error) {
	bb := prefixBatch(begin, s, sql, args)
	br := conn.SendBatch(ctx, &bb.b)
	if begin {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			bb.free()
			return nil, nil, err
		}
	}
	if _, err := br.Exec(); err != nil {
		_ = br.Close()
		bb.free()
		return nil, nil, err
	}
	return br, bb, nil
}

func execPrefixed(ctx context.Context, conn *pgxpool.Conn, begin bool, s settings, sql string, args []any) (pgconn.CommandTag, error) {
	br, bb, err := sendPrefixed(ctx, conn, begin, s, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	bb.free()
	return tag, err
}

func queryPrefixed(ctx context.Context, conn *pgxpool.Conn, begin bool, s settings, sql string, args []any) (pgx.Rows, error) {
	br, bb, err := sendPrefixed(ctx, conn, begin, s, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		bb.free()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br, bb: bb}, nil
}

// batchRows closes the batch when the rows are closed, and releases the
// connection of a read (lease; its conn is nil inside a transaction).
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	bb     *batchBuf // the batch, given back once br is closed
	lease  lease
	closed bool
	err    error
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	if err := r.br.Close(); err != nil && r.Rows.Err() == nil {
		r.err = err
	}
	if r.bb != nil {
		r.bb.free()
		r.bb = nil
	}
	if r.lease.conn != nil {
		r.lease.release()
		r.lease = lease{}
	}
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return err
	}
	return r.err
}

// prefixedRow is the pgx.Row of a prefixed query.
type prefixedRow struct {
	rows pgx.Rows
	err  error
}

func (r *prefixedRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
