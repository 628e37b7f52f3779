package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// frame is one SSE message, rendered once per stream and event.
type frame struct {
	id int64
	b  []byte
}

// subscriber is one open stream.
type subscriber struct {
	st       *Stream
	auth     authctx.Auth
	identity string // role and claims: who the checks run as
	caller   string // who the per-caller cap counts
	tenant   *string
	names    map[string]bool // nil: every event of the stream
	filters  []filter
	done     chan struct{}
	once     sync.Once

	mu    sync.Mutex
	queue []frame
	bytes int
	floor int64         // frames with ids up to floor are not queued (the stream has or replays them)
	wake  chan struct{} // capacity 1: the queue is not empty
}

// skipThrough stops queueing (and drops queued) frames with ids up to id.
func (s *subscriber) skipThrough(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id <= s.floor {
		return
	}
	s.floor = id
	i := 0
	for i < len(s.queue) && s.queue[i].id <= id {
		s.bytes -= len(s.queue[i].b)
		i++
	}
	s.queue = s.queue[i:]
}

// push queues frames; false when the queue would exceed its bounds (the
// subscriber is too slow and must be cut off).
func (s *subscriber) push(fs []frame, maxFrames, maxBytes int) bool {
	s.mu.Lock()
	for s.floor > 0 && len(fs) > 0 && fs[0].id <= s.floor {
		fs = fs[1:]
	}
	n := 0
	for _, f := range fs {
		n += len(f.b)
	}
	if len(s.queue)+len(fs) > maxFrames || s.bytes+n > maxBytes {
		s.mu.Unlock()
		return false
	}
	s.queue = append(s.queue, fs...)
	s.bytes += n
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return true
}

// take empties the queue.
func (s *subscriber) take() []frame {
	s.mu.Lock()
	q := s.queue
	s.queue, s.bytes = nil, 0
	s.mu.Unlock()
	return q
}

// cut closes the subscriber; true the first time.
func (s *subscriber) cut() bool {
	first := false
	s.once.Do(func() { close(s.done); first = true })
	return first
}

// identityOf keys the visibility checks: callers with the same role and
// claims see the same rows, so they share one statement per batch.
func identityOf(c authctx.Auth) string {
	switch c.Actor().Type {
	case authctx.KindUser:
		if raw := c.DBCaller().Claims(); raw != nil {
			return "u" + string(raw)
		}
		b, _ := json.Marshal(c.Claims())
		return "u" + string(b)
	case authctx.KindService:
		return "s"
	}
	return "a"
}

// roleOf is the database role a caller runs as (as package db picks it).
func roleOf(c authctx.Auth) string {
	switch c.Actor().Type {
	case authctx.KindUser:
		if r := c.DBCaller().Role(); r != "" { // the role of the claims JSON sent, like db
			return r
		}
		return db.RoleAuthenticated
	case authctx.KindService:
		return db.RoleServiceRole
	}
	return db.RoleAnon
}

// checkKind says how an event's visibility is decided.
type checkKind uint8

const (
	checkNone    checkKind = iota // keyless action event: same tenant
	checkLive                     // the row must be readable now, as the subscriber
	checkReplay                   // the subscriber's select policies admit the row as the event recorded it
	checkSkipped                  // not for this subscriber
)

// classify decides whether rec is for s and how to check it.
func (s *subscriber) classify(rec *record) checkKind {
	st := s.st
	if rec.Table != st.table {
		return checkSkipped
	}
	kind, ok := st.names[rec.Name]
	if !ok || (s.names != nil && !s.names[rec.Name]) {
		return checkSkipped
	}
	if kind == nameAction {
		switch {
		case rec.Key == nil && !eqPtr(s.tenant, rec.Tenant):
			return checkSkipped
		case rec.Key == nil:
			return checkNone
		case rec.Image == nil:
			// A table without a single-column primary key, or a key that
			// names no row: the row must be readable now.
			if !st.keyFits(*rec.Key) {
				return checkSkipped // names no row; would fail the cast
			}
			return checkLive
		}
		return checkReplay
	}
	if rec.Key == nil || rec.Image == nil {
		return checkSkipped
	}
	if len(s.filters) > 0 {
		row, err := st.row(rec)
		if err != nil || !matchAll(s.filters, row) {
			return checkSkipped
		}
	}
	return checkReplay
}

// keyCheckers validate key text for the key types whose cast a live check
// uses; any other key type is compared as text.
var keyCheckers = map[string]func(string) bool{
	"bigint":   func(k string) bool { _, err := strconv.ParseInt(k, 10, 64); return err == nil },
	"integer":  func(k string) bool { _, err := strconv.ParseInt(k, 10, 32); return err == nil },
	"smallint": func(k string) bool { _, err := strconv.ParseInt(k, 10, 16); return err == nil },
	"uuid":     validUUID,
}

// keyFits reports whether key can be a value of the stream's key column
// (true for key types without a checker).
func (st *Stream) keyFits(key string) bool {
	if f, ok := keyCheckers[st.keyType]; ok {
		return f(key)
	}
	return true
}

// validUUID accepts the text forms Postgres reads as uuid: 32 hex digits,
// optionally in 8-4-4-4-12 groups and braces.
func validUUID(k string) bool {
	k = strings.TrimSuffix(strings.TrimPrefix(k, "{"), "}")
	if len(k) == 36 {
		if k[8] != '-' || k[13] != '-' || k[18] != '-' || k[23] != '-' {
			return false
		}
		k = strings.ReplaceAll(k, "-", "")
	}
	if len(k) != 32 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func eqPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// identityCheck collects what one caller identity must have checked.
type identityCheck struct {
	auth    authctx.Auth
	live    map[*Stream][]*record
	replay  map[*Stream][]*record
	seen    map[int64]bool
	visible map[int64]bool
	failed  bool
}

// deliver decides, for each subscriber, which of recs it receives, with
// one statement per distinct caller identity. Subscribers whose check
// failed are returned in failed (their streams must end).
func (h *Hub) deliver(ctx context.Context, recs []*record, subs []*subscriber) (map[*subscriber][]frame, []*subscriber) {
	type cand struct {
		rec  *record
		kind checkKind
	}
	cands := make(map[*subscriber][]cand, len(subs))
	checks := map[string]*identityCheck{}
	for _, s := range subs {
		for _, rec := range recs {
			k := s.classify(rec)
			if k == checkSkipped {
				continue
			}
			cands[s] = append(cands[s], cand{rec, k})
			if k == checkNone {
				continue
			}
			ic := checks[s.identity]
			if ic == nil {
				ic = &identityCheck{auth: s.auth, live: map[*Stream][]*record{}, replay: map[*Stream][]*record{},
					seen: map[int64]bool{}, visible: map[int64]bool{}}
				checks[s.identity] = ic
			}
			if ic.seen[rec.ID] {
				continue
			}
			ic.seen[rec.ID] = true
			if k == checkLive {
				ic.live[s.st] = append(ic.live[s.st], rec)
			} else {
				ic.replay[s.st] = append(ic.replay[s.st], rec)
			}
		}
	}
	// One statement per identity, a few identities at a time.
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for _, ic := range checks {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := h.check(ctx, ic); err != nil {
				ic.failed = true
				h.failed(opCheck, err)
			}
		}()
	}
	wg.Wait()
	if len(checks) > 0 {
		ok := true
		for _, ic := range checks {
			ok = ok && !ic.failed
		}
		if ok {
			h.recovered(opCheck)
		}
	}

	out := make(map[*subscriber][]frame, len(cands))
	var failed []*subscriber
	rendered := map[*Stream]map[int64][]byte{}
	for s, cs := range cands {
		var ic *identityCheck
		if c := checks[s.identity]; c != nil {
			ic = c
			if c.failed {
				failed = append(failed, s)
				continue
			}
		}
		for _, c := range cs {
			if c.kind != checkNone && !ic.visible[c.rec.ID] {
				continue
			}
			m := rendered[s.st]
			if m == nil {
				m = map[int64][]byte{}
				rendered[s.st] = m
			}
			b, ok := m[c.rec.ID]
			if !ok {
				var err error
				if b, err = s.st.render(c.rec); err != nil {
					h.log.Warn("events: render event", "id", c.rec.ID, "error", err)
					continue
				}
				m[c.rec.ID] = b
			}
			out[s] = append(out[s], frame{id: c.rec.ID, b: b})
		}
	}
	return out, failed
}

// check runs one identity's visibility statement: a union of the live
// row checks and the deleted-row policy replays of every table involved.
func (h *Hub) check(ctx context.Context, ic *identityCheck) error {
	err := h.checkSet(ctx, ic, ic.live, ic.replay)
	if !isDataError(err) {
		return err
	}
	// One event's recorded image no longer fits its table (a column's type
	// changed since), or its key no longer casts: the statement failed for
	// every event of the batch. Check them one at a time; an event that
	// still fails is not delivered, and the others are.
	one := func(st *Stream, r *record, replay bool) error {
		set := map[*Stream][]*record{st: {r}}
		var err error
		if replay {
			err = h.checkSet(ctx, ic, nil, set)
		} else {
			err = h.checkSet(ctx, ic, set, nil)
		}
		if isDataError(err) {
			h.log.Warn("events: an event no longer fits its table's row type; not delivered", "id", r.ID, "sqlstate", sqlState(err))
			return nil
		}
		return err
	}
	for st, recs := range ic.live {
		for _, r := range recs {
			if err := one(st, r, false); err != nil {
				return err
			}
		}
	}
	for st, recs := range ic.replay {
		for _, r := range recs {
			if err := one(st, r, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// redactedErr is err for the log: a database error by its SQLSTATE only
// (its message may quote a row value), others as they are.
func redactedErr(err error) any {
	if c := sqlState(err); c != "" {
		return "database error, SQLSTATE " + c
	}
	return err
}

// unshared runs the hub's checks outside the subscribers' shares.
var unshared = db.RunOpts{Unshared: true}

// isDataError reports an error of the values a check statement reads (an
// image or key that no longer casts to the table's types: SQLSTATE classes
// 22 and 23, 42804), not of the database or the connection.
func isDataError(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23") || pgErr.Code == "42804"
}

// sqlState is err's SQLSTATE, or "" when it has none: what the hub logs of
// a database error, whose message may quote row values.
func sqlState(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// checkSet runs one statement that marks, in ic.visible, the events of
// live and replay the identity's policies admit.
func (h *Hub) checkSet(ctx context.Context, ic *identityCheck, live, replay map[*Stream][]*record) error {
	role := roleOf(ic.auth)
	var parts []string
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	for _, st := range sortedStreams(live) {
		pol, err := h.policies.get(ctx, h, st.table, role)
		if err != nil {
			return err
		}
		if !pol.canSelect {
			continue
		}
		recs := live[st]
		ids, keys := make([]int64, len(recs)), make([]string, len(recs))
		for i, r := range recs {
			ids[i], keys[i] = r.ID, *r.Key
		}
		// Keys of the types keyFits checks are cast (the key's index
		// serves); others are compared as text, so that no key text can
		// fail the statement of every stream checked with it.
		col := "t." + pgx.Identifier{st.keyCol}.Sanitize()
		match := col + " = e.k::" + st.keyType
		if _, ok := keyCheckers[st.keyType]; !ok {
			match = col + "::text = e.k"
		}
		parts = append(parts, fmt.Sprintf(
			`select e.id from unnest(%s::bigint[], %s::text[]) as e(id, k) where exists (select 1 from %s as t where %s)`,
			arg(ids), arg(keys), st.table, match))
	}
	for _, st := range sortedStreams(replay) {
		pol, err := h.policies.get(ctx, h, st.table, role)
		if err != nil {
			return err
		}
		if pol.predicate == "false" {
			continue
		}
		recs := replay[st]
		ids, imgs := make([]int64, len(recs)), make([]string, len(recs))
		for i, r := range recs {
			ids[i], imgs[i] = r.ID, string(r.Image)
		}
		parts = append(parts, fmt.Sprintf(
			`select e.id from unnest(%s::bigint[], %s::jsonb[]) as e(id, r) where exists (select 1 from jsonb_populate_record(null::%s, e.r) as %s where %s)`,
			arg(ids), arg(imgs), st.table, pgx.Identifier{st.relname}.Sanitize(), pol.predicate))
	}
	if len(parts) == 0 {
		return nil
	}
	h.checks.Add(1)
	sql := strings.Join(parts, "\nunion all\n")
	// Outside the subscriber's share of the pool: every subscriber's
	// delivery waits on this check, so a subscriber keeping its own share
	// busy must not hold it up (nor end its own streams).
	return h.d.Run(ctx, ic.auth.DBCaller(), unshared, func(q db.Querier) error {
		rows, err := q.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ic.visible[id] = true
		}
		return rows.Err()
	})
}

func sortedStreams(m map[*Stream][]*record) []*Stream {
	out := make([]*Stream, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].table < out[j].table })
	return out
}

// policy is what a role may see of a table, for the checks.
type policy struct {
	canSelect bool
	// predicate is the SQL condition the role's select policies put on a
	// row ("true" without row-level security, "false" when nothing is
	// visible), evaluated against a deleted row's last version.
	predicate string
	at        time.Time
}

// policyCache holds policies per table and role for policyTTL.
type policyCache struct {
	mu sync.Mutex
	m  map[string]policy
}

const policyTTL = 10 * time.Second

const policySQL = `select has_table_privilege($2::name, c.oid, 'SELECT'),
  c.relrowsecurity, coalesce(r.rolbypassrls, false),
  coalesce((select string_agg('(' || p.qual || ')', ' or ' order by p.policyname) from pg_catalog.pg_policies p
    where p.schemaname = n.nspname and p.tablename = c.relname and p.permissive = 'PERMISSIVE'
      and p.cmd in ('SELECT', 'ALL') and p.qual is not null
      and exists (select 1 from unnest(p.roles) ro where ro = 'public' or pg_has_role($2::name, ro, 'USAGE'))), ''),
  coalesce((select string_agg('(' || p.qual || ')', ' and ' order by p.policyname) from pg_catalog.pg_policies p
    where p.schemaname = n.nspname and p.tablename = c.relname and p.permissive = 'RESTRICTIVE'
      and p.cmd in ('SELECT', 'ALL') and p.qual is not null
      and exists (select 1 from unnest(p.roles) ro where ro = 'public' or pg_has_role($2::name, ro, 'USAGE'))), '')
from pg_catalog.pg_class c
join pg_catalog.pg_namespace n on n.oid = c.relnamespace
left join pg_catalog.pg_roles r on r.rolname = $2::name
where c.oid = $1::regclass`

func (pc *policyCache) get(ctx context.Context, h *Hub, table, role string) (policy, error) {
	k := table + "\x00" + role
	pc.mu.Lock()
	p, ok := pc.m[k]
	pc.mu.Unlock()
	if ok && time.Since(p.at) < policyTTL {
		return p, nil
	}
	var sel, rls, bypass bool
	var perm, restr string
	err := h.d.Run(ctx, service, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(ctx, policySQL, table, role).Scan(&sel, &rls, &bypass, &perm, &restr)
	})
	if err != nil {
		return policy{}, fmt.Errorf("read policies of %s: %w", table, err)
	}
	p = policy{canSelect: sel, at: time.Now()}
	switch {
	case !sel:
		p.predicate = "false"
	case !rls || bypass:
		p.predicate = "true"
	case perm == "":
		p.predicate = "false"
	case restr == "":
		p.predicate = "(" + perm + ")"
	default:
		p.predicate = "(" + perm + ") and " + restr
	}
	pc.mu.Lock()
	if pc.m == nil {
		pc.m = map[string]policy{}
	}
	pc.m[k] = p
	pc.mu.Unlock()
	return p, nil
}

// Event is the data of one SSE message (its "data:" line, as JSON).
type Event struct {
	// ID is the outbox id: increasing, the SSE id and the Last-Event-ID
	// to resume after.
	ID int64 `json:"id"`
	// Name is the event name: <table>.created|updated|deleted or an
	// action's declared name.
	Name string `json:"name"`
	// Table is the resource's table.
	Table string `json:"table"`
	// Key is the key of the row the event is about, as text; null for
	// keyless action events.
	Key *string `json:"key"`
	// Tenant is the writer's active tenant, or null.
	Tenant *string `json:"tenant"`
	// Actor is the writer's user id (sub claim), or null.
	Actor *string `json:"actor"`
	// Time is when the event was written.
	Time time.Time `json:"time"`
	// Payload is the row (the resource's selected columns; for deletes its
	// last version) for table events, the emitted payload for action events.
	Payload json.RawMessage `json:"payload"`
}

// render builds the SSE message of rec for this stream.
func (st *Stream) render(rec *record) ([]byte, error) {
	ev := Event{ID: rec.ID, Name: rec.Name, Table: st.name, Key: rec.Key, Tenant: rec.Tenant,
		Actor: rec.Actor, Time: rec.At.UTC(), Payload: rec.Payload}
	if st.names[rec.Name] != nameAction {
		row, err := st.project(rec)
		if err != nil {
			return nil, err
		}
		ev.Payload = row
	}
	if ev.Payload == nil {
		ev.Payload = json.RawMessage("null")
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(data) + len(rec.Name) + 40)
	b.WriteString("id: ")
	b.WriteString(strconv.FormatInt(rec.ID, 10))
	b.WriteString("\nevent: ")
	b.WriteString(sseSafe(rec.Name))
	b.WriteString("\ndata: ")
	b.Write(data) // json.Marshal never emits raw newlines
	b.WriteString("\n\n")
	return b.Bytes(), nil
}

func sseSafe(s string) string {
	return strings.NewReplacer("\r", "", "\n", "").Replace(s)
}

// row decodes a table event's row image.
func (st *Stream) row(rec *record) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(rec.Image, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// project keeps the resource's selected columns of a row image, in
// select order.
func (st *Stream) project(rec *record) (json.RawMessage, error) {
	m, err := st.row(rec)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range st.cols {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(c)
		b.Write(k)
		b.WriteByte(':')
		if v, ok := m[c]; ok {
			b.Write(v)
		} else {
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
