package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/db"
)

// Channel is the LISTEN/NOTIFY channel emitting transactions notify.
const Channel = "tablegate_events"

// Defaults of [Config].
const (
	DefaultRetention      = time.Hour
	DefaultPollInterval   = time.Second
	DefaultHeartbeat      = 15 * time.Second
	DefaultBuffer         = 1024
	DefaultBufferBytes    = 4 << 20
	DefaultBatch          = 500
	DefaultMaxSubscribers = 10000
	DefaultMaxPerCaller   = 32
	DefaultMaxStream      = time.Hour
	DefaultWriteTimeout   = 10 * time.Second
	DefaultCheckTimeout   = 5 * time.Second
	DefaultMaxReplay      = 10000
)

// Config configures a [Hub]. Only DB is required; zero fields take the
// defaults above.
type Config struct {
	// DB is the database the outbox lives in. The hub reads the outbox as
	// service_role and checks visibility as each subscriber, through DB's
	// pool; it opens one more connection of its own for LISTEN.
	DB *db.DB
	// Retention is how long events stay in the outbox (default one hour):
	// the window in which Last-Event-ID resumes without gaps. Every
	// instance prunes older events once a minute.
	Retention time.Duration
	// PollInterval bounds every wait for a notification (default 1s): the
	// outbox is read at least this often even if a notification is lost,
	// and a dead listening connection is noticed within it.
	PollInterval time.Duration
	// Heartbeat is the interval of SSE comment lines that keep idle
	// streams alive through proxies (default 15s).
	Heartbeat time.Duration
	// Buffer is the number of events queued per subscriber (default
	// 1024) and BufferBytes their total size (default 4 MiB). A subscriber
	// whose queue would exceed either is cut off; it resumes with
	// Last-Event-ID from the outbox. Memory per subscriber is bounded by them.
	Buffer, BufferBytes int
	// Batch is the number of events read and checked together (default 500).
	Batch int
	// MaxSubscribers caps the open streams of this instance (default
	// 10000); MaxPerCaller caps those of one caller (default 32): one user
	// id whatever its sessions, one service key, or all callers without a
	// session together.
	// Beyond MaxSubscribers a stream answers 503 with Retry-After, beyond
	// MaxPerCaller 429 with Retry-After (the caller's own excess).
	MaxSubscribers, MaxPerCaller int
	// MaxStream ends a stream after this long (default one hour); a user's
	// stream also ends when its token expires. Clients reconnect with
	// Last-Event-ID and fresh credentials.
	MaxStream time.Duration
	// WriteTimeout bounds each write to a subscriber (default 10s); a
	// subscriber that does not read is cut off. It overrides the server's
	// WriteTimeout for the stream (http.ResponseController).
	WriteTimeout time.Duration
	// CheckTimeout bounds one batch of visibility checks (default 5s).
	CheckTimeout time.Duration
	// MaxReplay bounds the events one resuming stream replays from the
	// outbox (default 10000, counted by id). A Last-Event-ID further behind
	// the hub's position receives a "tablegate.gap" event, then the last
	// MaxReplay events. A replay reads and checks the outbox in windows of
	// Batch events, each on one of the caller's places in the pool
	// (db.Config.MaxConnsPerCaller), like the caller's own requests.
	MaxReplay int
	// ListenConfig is the connection used for LISTEN; nil copies the
	// pool's connection config.
	ListenConfig *pgx.ConnConfig
	// Logger receives errors of the background loop (never claims or
	// payloads). Nil uses slog.Default().
	Logger *slog.Logger
}

func (c *Config) validate() error {
	if c.DB == nil {
		return errors.New("events: Config.DB is required")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Retention, DefaultRetention)
	def(&c.PollInterval, DefaultPollInterval)
	def(&c.Heartbeat, DefaultHeartbeat)
	def(&c.MaxStream, DefaultMaxStream)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.CheckTimeout, DefaultCheckTimeout)
	defInt(&c.Buffer, DefaultBuffer)
	defInt(&c.BufferBytes, DefaultBufferBytes)
	defInt(&c.Batch, DefaultBatch)
	defInt(&c.MaxSubscribers, DefaultMaxSubscribers)
	defInt(&c.MaxPerCaller, DefaultMaxPerCaller)
	defInt(&c.MaxReplay, DefaultMaxReplay)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Stats are counters of a hub since it started.
type Stats struct {
	// Subscribers is the number of open streams.
	Subscribers int
	// Delivered counts events queued to subscribers (one per subscriber).
	Delivered uint64
	// CutOff counts subscribers cut off for a full queue or a failed write.
	CutOff uint64
	// Checks counts visibility statements run (one per caller identity
	// per batch).
	Checks uint64
	// Head is the position (seq) of the last event the hub read.
	Head int64
}

// Hub delivers the outbox to the streams of one instance. Build it with
// [New]; it runs until [Hub.Close]. A Hub is safe for concurrent use.
type Hub struct {
	cfg  Config
	d    *db.DB
	log  *slog.Logger
	ctx  context.Context
	stop context.CancelFunc
	done chan struct{}

	mu        sync.Mutex
	head      int64
	subs      map[*subscriber]struct{} // streams events are delivered to
	open      int                      // streams whose handler runs (cut ones too)
	perCaller map[string]int           // open streams per caller

	delivered, cutOff, checks atomic.Uint64

	policies policyCache

	replayMu sync.Mutex
	replays  map[replayKey]*replayCall // window reads in flight or just done

	faultMu sync.Mutex
	failing map[string]bool // background operations failing now (logged once)

	pruning    sync.WaitGroup
	pruneEvery time.Duration
}

// service is the identity the hub reads and prunes the outbox with.
var service = db.ServiceCaller()

// New starts a hub: it reads the current end of the outbox (new streams
// without Last-Event-ID start there), then listens for notifications in
// the background. cfg may not be nil (DB is required).
func New(ctx context.Context, cfg *Config) (*Hub, error) {
	if cfg == nil {
		return nil, errors.New("events: nil Config")
	}
	c := *cfg
	if err := c.validate(); err != nil {
		return nil, err
	}
	h := &Hub{cfg: c, d: c.DB, log: c.Logger, done: make(chan struct{}),
		subs: map[*subscriber]struct{}{}, perCaller: map[string]int{},
		replays: map[replayKey]*replayCall{}, failing: map[string]bool{}, pruneEvery: pruneEvery}
	rctx, cancel := context.WithTimeout(ctx, c.CheckTimeout)
	defer cancel()
	err := h.d.Run(rctx, service, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(rctx, `select coalesce(max(seq), 0) from tablegate.events`).Scan(&h.head)
	})
	if err != nil {
		return nil, fmt.Errorf("events: read the outbox (are migrations applied?): %w", err)
	}
	h.ctx, h.stop = context.WithCancel(context.WithoutCancel(ctx))
	h.pruning.Add(1)
	go h.pruneLoop()
	go h.run()
	return h, nil
}

// Close stops the hub and ends every stream. It waits for the background
// loop, which stops within one PollInterval.
func (h *Hub) Close() {
	h.stop()
	<-h.done
	h.pruning.Wait()
	h.mu.Lock()
	for s := range h.subs {
		s.cut()
	}
	h.mu.Unlock()
}

// Config returns the hub's configuration, defaults filled in.
func (h *Hub) Config() Config { return h.cfg }

// Stats returns the hub's counters (for metrics: OpenTelemetry observable
// counters can read them).
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	n, head := len(h.subs), h.head
	h.mu.Unlock()
	return Stats{Subscribers: n, Delivered: h.delivered.Load(), CutOff: h.cutOff.Load(),
		Checks: h.checks.Load(), Head: head}
}

// run is the background loop: one listening connection, every wait
// bounded by PollInterval; while the listening connection or the outbox
// reads fail, it retries with jittered exponential backoff (100 ms to 5 s)
// and logs each failure once (see failed).
func (h *Hub) run() {
	defer close(h.done)
	var conn *pgx.Conn
	closeConn := func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
		conn = nil
	}
	defer func() {
		if conn != nil {
			closeConn()
		}
	}()
	var bo backoff
	for h.ctx.Err() == nil {
		healthy := true
		if conn == nil {
			c, err := h.listen()
			switch {
			case h.ctx.Err() != nil:
				return
			case err != nil:
				// Still deliver by polling while the listener is down.
				h.failed(opListen, err)
				healthy = false
			default:
				h.recovered(opListen)
				conn = c
			}
		}
		if conn != nil {
			wctx, cancel := context.WithTimeout(h.ctx, h.cfg.PollInterval)
			_, err := conn.WaitForNotification(wctx)
			cancel()
			if err != nil && h.ctx.Err() == nil && !pgconn.Timeout(err) {
				h.failed(opListen, err)
				closeConn()
				healthy = false
			}
		}
		if !h.drain() {
			healthy = false
		}
		if healthy {
			bo.reset()
		} else {
			h.sleep(bo.next())
		}
	}
}

// backoff is the jittered exponential wait between attempts of a failing
// background operation: 100 ms doubling to 5 s, each wait drawn between
// half and all of the current step, so that instances do not retry in step.
type backoff struct{ step time.Duration }

const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

func (b *backoff) next() time.Duration {
	if b.step == 0 {
		b.step = backoffMin
	}
	d := b.step/2 + rand.N(b.step/2+1)
	b.step = min(b.step*2, backoffMax)
	return d
}

func (b *backoff) reset() { b.step = 0 }

// Background operations whose failures are logged once per outage.
const (
	opListen   = "listen for notifications"
	opSequence = "number the outbox"
	opRead     = "read the outbox"
	opPrune    = "prune the outbox"
	opCheck    = "check visibility"
)

// failed logs op's failure when op was working until now; later failures
// of the same outage are not logged (the loops retry with backoff; a
// failed check ends the affected streams, whose clients resume).
func (h *Hub) failed(op string, err error) {
	h.faultMu.Lock()
	first := !h.failing[op]
	h.failing[op] = true
	h.faultMu.Unlock()
	if first {
		h.log.Warn("events: "+op+" failed (not logged again until it works)", "error", redactedErr(err))
	}
}

// recovered logs that op works again, once, after it failed.
func (h *Hub) recovered(op string) {
	h.faultMu.Lock()
	was := h.failing[op]
	delete(h.failing, op)
	h.faultMu.Unlock()
	if was {
		h.log.Info("events: " + op + " works again")
	}
}

func (h *Hub) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.ctx.Done():
	}
}

func (h *Hub) listen() (*pgx.Conn, error) {
	cfg := h.cfg.ListenConfig
	if cfg == nil {
		cfg = h.d.Pool().Config().ConnConfig
	}
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg.Copy())
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(ctx, "listen "+Channel); err != nil {
		_ = conn.Close(ctx)
		return nil, err
	}
	return conn, nil
}

// record is one outbox row.
type record struct {
	ID      int64
	Name    string
	Table   string
	Key     *string
	Tenant  *string
	Actor   *string
	At      time.Time
	Payload json.RawMessage
	Image   json.RawMessage
}

const readSQL = `select seq, name, tbl, key, tenant::text, actor, at, payload, image
from tablegate.events where seq > $1 and seq <= $2 order by seq limit $3`

// read returns up to limit events with after < seq <= upto, in seq order.
func (h *Hub) read(ctx context.Context, after, upto int64, limit int) ([]*record, error) {
	var out []*record
	err := h.d.Run(ctx, service, db.RunOpts{}, func(q db.Querier) error {
		rows, err := q.Query(ctx, readSQL, after, upto, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r := &record{}
			if err := rows.Scan(&r.ID, &r.Name, &r.Table, &r.Key, &r.Tenant, &r.Actor, &r.At, &r.Payload, &r.Image); err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// sequence numbers the committed events that have no seq yet (see
// tablegate.sequence_events; hubs take turns under its lock). It returns
// false when the database failed.
func (h *Hub) sequence() bool {
	for h.ctx.Err() == nil {
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.CheckTimeout)
		var n int
		err := h.d.Run(ctx, service, db.RunOpts{}, func(q db.Querier) error {
			// Numbering commits without waiting for its WAL flush: it does
			// not compete with the writers' commits. Should Postgres crash
			// before the flush, the rows are numbered again with higher
			// numbers: a client may then see an event twice, never miss one.
			var off string
			return q.QueryRow(ctx, `select set_config('synchronous_commit', 'off', true), tablegate.sequence_events($1)`,
				h.cfg.Batch).Scan(&off, &n)
		})
		cancel()
		if err != nil {
			if h.ctx.Err() == nil {
				h.failed(opSequence, err)
			}
			return false
		}
		h.recovered(opSequence)
		if n < h.cfg.Batch {
			return true
		}
	}
	return true
}

// drain numbers new events, then reads and dispatches every event after
// head. It returns false when the database failed.
func (h *Hub) drain() bool {
	if !h.sequence() {
		return false
	}
	for h.ctx.Err() == nil {
		h.mu.Lock()
		head := h.head
		h.mu.Unlock()
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.CheckTimeout)
		recs, err := h.read(ctx, head, 1<<62, h.cfg.Batch)
		cancel()
		if err != nil {
			if h.ctx.Err() == nil {
				h.failed(opRead, err)
			}
			return false
		}
		h.recovered(opRead)
		if len(recs) == 0 {
			return true
		}
		h.dispatch(recs)
		if len(recs) < h.cfg.Batch {
			return true
		}
	}
	return true
}

// dispatch advances head over recs and queues them to the subscribers
// registered before the advance; later subscribers catch up from the
// outbox up to the new head, so each event reaches each stream once.
func (h *Hub) dispatch(recs []*record) {
	h.mu.Lock()
	subs := make([]*subscriber, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.head = recs[len(recs)-1].ID
	h.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(h.ctx, h.cfg.CheckTimeout)
	out, failed := h.deliver(ctx, recs, subs)
	cancel()
	for _, s := range failed {
		// The check failed: end the stream; the client resumes from the
		// outbox with Last-Event-ID.
		h.cut(s)
	}
	for s, frames := range out {
		if len(frames) == 0 {
			continue
		}
		if s.push(frames, h.cfg.Buffer, h.cfg.BufferBytes) {
			h.delivered.Add(uint64(len(frames)))
		} else {
			h.cut(s)
		}
	}
}

// register adds a subscriber and returns the head it must catch up to.
func (h *Hub) register(s *subscriber) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ctx.Err() != nil {
		return 0, errClosed
	}
	if h.open >= h.cfg.MaxSubscribers {
		return 0, errFull
	}
	if h.perCaller[s.caller] >= h.cfg.MaxPerCaller {
		return 0, errCallerFull
	}
	h.subs[s] = struct{}{}
	h.open++
	h.perCaller[s.caller]++
	return h.head, nil
}

// unregister stops delivering to s. Its stream still counts against the
// caps until its handler returns and calls release: a stream that was cut
// off while it still replays or writes holds its place.
func (h *Hub) unregister(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
}

// release is unregister when the stream's handler returns: s no longer
// counts against MaxSubscribers and MaxPerCaller. Call it once per
// successful register.
func (h *Hub) release(s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.subs, s)
	h.open--
	if h.perCaller[s.caller]--; h.perCaller[s.caller] <= 0 {
		delete(h.perCaller, s.caller)
	}
}

// cut ends a subscriber's stream (queue full, failed write or check).
func (h *Hub) cut(s *subscriber) {
	if s.cut() {
		h.cutOff.Add(1)
	}
	h.unregister(s)
}

var (
	errClosed = errors.New("events: hub closed")
	errFull   = errors.New("events: too many subscribers")
	// errCallerFull: the caller has MaxPerCaller streams open.
	errCallerFull = errors.New("events: too many streams of one caller")
)

// pruneLoop prunes the outbox once a minute, beside the delivery loop:
// a long prune never holds up delivery.
func (h *Hub) pruneLoop() {
	defer h.pruning.Done()
	for h.ctx.Err() == nil {
		h.prune()
		h.sleep(h.pruneEvery)
	}
}

// prune deletes the oldest events, in number order, up to the first one
// still within Retention (in batches, one instance at a time), and records
// the highest pruned number.
func (h *Hub) prune() {
	// Batches of pruneBatch rows, one short transaction each, until a batch
	// is not full: an outbox written faster than one batch a minute would
	// grow without bound. At most pruneBatches a pass, so that a huge
	// backlog is spread over several minutes; a short pause between
	// batches leaves the disk and the pool to delivery and requests.
	for i := range pruneBatches {
		if i > 0 {
			h.sleep(prunePause)
		}
		ctx, cancel := context.WithTimeout(h.ctx, h.cfg.CheckTimeout)
		n, err := h.pruneBatch(ctx)
		cancel()
		if err != nil {
			if h.ctx.Err() == nil {
				h.failed(opPrune, err)
			}
			return
		}
		h.recovered(opPrune)
		if n < pruneBatch {
			return
		}
	}
}

// pruneBatch and pruneBatches bound one prune pass, prunePause spaces its
// batches and pruneEvery its passes (variables for tests).
var (
	pruneBatch   = 2000
	pruneBatches = 100
	prunePause   = 5 * time.Millisecond
	pruneEvery   = time.Minute
)

// pruneBatch deletes one batch of the oldest events and returns how many.
func (h *Hub) pruneBatch(ctx context.Context) (int, error) {
	var n int
	err := h.d.Run(ctx, service, db.RunOpts{Tx: true}, func(q db.Querier) error {
		var got bool
		if err := q.QueryRow(ctx, `select pg_try_advisory_xact_lock(7263102, 20)`).Scan(&got); err != nil || !got {
			return err
		}
		// Prune the oldest events by number, up to the first one still
		// within the retention: the horizon then never passes a retained
		// event (an event of a long transaction carries an old time but a
		// late number, and waits behind the events numbered before it).
		return q.QueryRow(ctx, `with first as (
  select id, seq, at from tablegate.events where seq is not null order by seq limit $2),
keep as (
  select coalesce((select min(seq) from first where at >= now() - make_interval(secs => $1)),
                  (select max(seq) + 1 from first)) as seq),
d as (
  delete from tablegate.events where id in (select id from first where seq < (select seq from keep))
  returning seq),
u as (
  update tablegate.event_horizon set pruned = greatest(pruned, (select max(seq) from d))
  where exists (select 1 from d))
select count(*) from d`, h.cfg.Retention.Seconds(), pruneBatch).Scan(&n)
	})
	return n, err
}

// horizon returns the highest pruned id.
func (h *Hub) horizon(ctx context.Context) (int64, error) {
	var p int64
	err := h.d.Run(ctx, service, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(ctx, `select pruned from tablegate.event_horizon`).Scan(&p)
	})
	return p, err
}
