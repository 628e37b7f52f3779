package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/streamauth"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/telemetry"
)

// StreamOpts configures a [Stream].
type StreamOpts struct {
	// Table delivers <table>.created, <table>.updated and <table>.deleted
	// for every row written to the resource's table. The table must be
	// opted in in the database (select tablegate.enable_events('<table>'),
	// in a migration); building the stream fails otherwise.
	Table bool
	// Allow lists the callers admitted (default {authctx.AllowUser}).
	// Anonymous sign-ins (authctx.AllowAnonymous) and callers without a
	// session (authctx.AllowAnon) receive nothing unless listed here.
	Allow []authctx.Allow
	// Resolver applies its cross-site rules to cookie-session streams
	// (with its trusted origins): a cross-site request relying on the
	// session cookie answers 403 CROSS_SITE_REQUEST even though the
	// method is GET, because a stream is a standing read of private
	// data. Nil applies http.CrossOriginProtection's defaults.
	Resolver *authctx.Resolver
	// Payloads maps an action event name to the JSON Schema of its
	// payload, for the description. Names must be declared by one of the
	// resource's actions.
	Payloads map[string]*jsonschema.Schema
	// Problems renders error bodies.
	Problems problem.Writer
	// IgnoreReadHooks lets a resource whose list or get runs Go hooks
	// (Hooks.AuthorizeFunc, AfterListFunc, AfterGetFunc) or is answered by
	// a custom rest.Config.Repository be streamed anyway. Events carry
	// rows as row-level security shows them; the hooks' and the
	// repository's decisions and reshaping do not apply to a stream, so
	// set it only when they neither hide rows nor columns (they log, or
	// run the same query through sqlc, say).
	IgnoreReadHooks bool
}

// nameKind is what kind of event a name is for a stream.
type nameKind uint8

const (
	nameAction nameKind = iota + 1
	nameCreated
	nameUpdated
	nameDeleted
)

// Stream serves one resource's events as Server-Sent Events; mount it
// beside the resource's routes (GET {base}/{table}/events). It is an
// [http.Handler], safe for concurrent use. Build it with [Hub.Stream].
type Stream struct {
	h        *Hub
	res      *rest.Resource
	table    string // quoted schema.table, as the outbox records it
	relname  string
	name     string // the resource's table name (payload "table")
	keyCol   string
	keyType  string
	cols     []string
	colSet   map[string]colType // selected column → its type
	names    map[string]nameKind
	allow    []authctx.Allow
	cop      *http.CrossOriginProtection
	resolver *authctx.Resolver
	payloads map[string]*jsonschema.Schema
	problems problem.Writer
}

// Stream builds the event stream of res. It fails when opts.Table is set
// and the table is not opted in (or is opted in with another key column),
// when the resource has no events at all, when Payloads names an event
// no action declares, when opts.Table is set and res serves neither list
// nor get, when res's
// list or get needs a permission, or when
// its list or get runs Go hooks or a custom Repository and
// opts.IgnoreReadHooks is not set: events are filtered by row-level
// security alone, so an authorizer's per-row decisions, a hook's
// redaction and a repository's narrower queries would not apply to them.
func (h *Hub) Stream(ctx context.Context, res *rest.Resource, opts *StreamOpts) (*Stream, error) {
	var o StreamOpts
	if opts != nil {
		o = *opts
	}
	d := res.Describe()
	st := &Stream{h: h, res: res, name: d.Table, keyCol: d.Key.Name, keyType: d.Key.Type,
		names: map[string]nameKind{}, colSet: map[string]colType{}, allow: slices.Clone(o.Allow),
		resolver: o.Resolver, payloads: o.Payloads, problems: o.Problems, cop: http.NewCrossOriginProtection()}
	if len(st.allow) == 0 {
		st.allow = []authctx.Allow{authctx.AllowUser}
	}
	// Table events carry rows: a resource that serves no read would be
	// read through its stream alone, though its rows are not meant to be
	// read over this API.
	if _, list := d.Operation(rest.OpList); !list && o.Table {
		if _, get := d.Operation(rest.OpGet); !get {
			return nil, fmt.Errorf("events: stream %s: the resource serves neither list nor get, "+
				"so its stream would be the only read of its rows: serve a read, or stream a resource of the same table that does", d.Table)
		}
	}
	// Events are filtered by row-level security only: a resource whose
	// reads an authorizer gates row by row would leak through its stream
	// the rows its list and get withhold.
	for _, op := range []rest.Operation{rest.OpList, rest.OpGet} {
		if oi, ok := d.Operation(op); ok && oi.Permission != "" {
			return nil, fmt.Errorf("events: stream %s: %s needs permission %q, which events cannot check: "+
				"stream a resource of the same table whose reads row-level security alone decides", d.Table, op, oi.Permission)
		}
		if oi, ok := d.Operation(op); ok && oi.Hooked && !o.IgnoreReadHooks {
			return nil, fmt.Errorf("events: stream %s: %s runs Go hooks, which events cannot apply: "+
				"stream a resource of the same table without read hooks, or set StreamOpts.IgnoreReadHooks "+
				"if the hooks neither hide rows nor columns", d.Table, op)
		}
		if oi, ok := d.Operation(op); ok && oi.CustomRepository && !o.IgnoreReadHooks {
			return nil, fmt.Errorf("events: stream %s: %s is answered by a custom Repository, whose queries events cannot apply: "+
				"stream a resource of the same table without one, or set StreamOpts.IgnoreReadHooks "+
				"if the repository neither hides rows nor columns", d.Table, op)
		}
	}
	for _, c := range d.Columns {
		st.cols = append(st.cols, c.Name)
		st.colSet[c.Name] = colType{name: c.TypeName}
	}
	var trigKey *string
	err := h.d.Run(ctx, service, db.RunOpts{}, func(q db.Querier) error {
		err := q.QueryRow(ctx, `select quote_ident(n.nspname) || '.' || quote_ident(c.relname), c.relname,
  (select encode(t.tgargs, 'escape') from pg_catalog.pg_trigger t where t.tgrelid = c.oid and t.tgname = 'tablegate_events')
from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
where n.nspname = $1 and c.relname = $2`, d.Schema, strings.TrimPrefix(d.Table, d.Schema+".")).Scan(&st.table, &st.relname, &trigKey)
		if err != nil {
			return err
		}
		types, err := columnTypes(ctx, q, st.table)
		for name, ct := range types {
			if _, ok := st.colSet[name]; ok {
				st.colSet[name] = ct
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("events: stream %s: %w", d.Table, err)
	}
	if o.Table {
		if trigKey == nil {
			return nil, fmt.Errorf("events: stream %s: table events need the table opted in: run select tablegate.enable_events('%s.%s') in a migration",
				d.Table, d.Schema, st.relname)
		}
		args := strings.Split(*trigKey, `\000`)
		if len(args) < 2 || args[0] != d.Key.Name {
			return nil, fmt.Errorf("events: stream %s: tablegate.enable_events used another key column than the resource's %q", d.Table, d.Key.Name)
		}
		st.names[args[1]+".created"] = nameCreated
		st.names[args[1]+".updated"] = nameUpdated
		st.names[args[1]+".deleted"] = nameDeleted
	}
	for _, oi := range d.Operations {
		if oi.Action == nil {
			continue
		}
		for _, n := range oi.Action.Emits {
			if _, ok := st.names[n]; !ok {
				st.names[n] = nameAction
			}
		}
	}
	if len(st.names) == 0 {
		return nil, fmt.Errorf("events: stream %s: no events: set StreamOpts.Table or declare Emits on an action", d.Table)
	}
	for n := range o.Payloads {
		if st.names[n] != nameAction {
			return nil, fmt.Errorf("events: stream %s: Payloads names %q, which no action declares", d.Table, n)
		}
	}
	return st, nil
}

// Names returns the event names the stream delivers, sorted.
func (st *Stream) Names() []string {
	out := make([]string, 0, len(st.names))
	for n := range st.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Resource returns the resource whose events the stream serves.
func (st *Stream) Resource() *rest.Resource { return st.res }

// Allow returns the callers the stream admits.
func (st *Stream) Allow() []authctx.Allow { return slices.Clone(st.allow) }

// EventPayload returns the JSON Schema of an event's payload for the
// description: row is true for table events, whose payload is a row of
// the resource (its selected columns); action events have the schema given
// in StreamOpts.Payloads (nil when none was given).
func (st *Stream) EventPayload(name string) (schema *jsonschema.Schema, row bool) {
	switch st.names[name] {
	case nameAction:
		return st.payloads[name], false
	case 0:
		return nil, false
	}
	return st.res.Describe().Row, true
}

func badQuery(detail string) *problem.Problem { return problem.New(problem.KindBadRequest, detail) }

// ServeHTTP serves the stream: text/event-stream, one message per event
// ("id", "event" and a JSON "data" line, see [Event]), comment lines as
// heartbeats. Query: event=<name>[,<name>...] keeps only those events;
// <column>=<op>.<value> filters table events like a list does (eq, neq,
// gt, gte, lt, lte, in.(a,b), is.null|true|false, not. prefix);
// last_event_id=<id> resumes like the Last-Event-ID header (which wins).
func (st *Stream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		st.problems.Write(w, problem.New(problem.KindMethodNotAllowed, "The event stream answers GET only."))
		return
	}
	// The resource's own rule: its Config.Caller when set, else the
	// authctx middleware's result.
	res, err := st.res.ResolveCaller(r)
	if err != nil {
		// The function's own answer (401, 503), or a database error's, as
		// on the resource's routes.
		if p, ok := problem.As(err); ok {
			st.problems.Write(w, p)
			return
		}
		if p, ok := problem.As(rest.DBProblem(err)); ok && p.Kind != problem.KindUnexpected {
			st.problems.Write(w, p)
			return
		}
		st.h.log.Error("events: the resource's caller function failed", "table", st.name, "error", err)
		st.problems.Write(w, problem.New(problem.KindUnexpected, "The server could not resolve the caller."))
		return
	}
	res.Auth = withClaimedExpiry(res.Auth)
	if p := authctx.Admit(res.Auth, st.allow...); p != nil {
		st.problems.Write(w, p)
		return
	}
	if p := streamauth.ExpiredForStream(res.Auth, time.Now()); p != nil {
		st.problems.Write(w, p)
		return
	}
	if p := st.crossSite(r, res); p != nil {
		st.problems.Write(w, p)
		return
	}
	// A Config.Caller may pass on the middleware's caller, resolved from
	// the session cookie: that cookie is judged too.
	if mw, ok := authctx.FromContext(r.Context()); ok && res.Source != authctx.SourceCookie {
		if p := st.crossSite(r, mw); p != nil {
			st.problems.Write(w, p)
			return
		}
	}
	s, last, p := st.parse(r)
	if p != nil {
		st.problems.Write(w, p)
		return
	}
	s.auth = res.Auth
	s.identity = identityOf(s.auth)
	s.caller = string(s.auth.Actor().Type) + ":" + s.auth.Actor().ID

	// The caller's active tenant, read in Postgres exactly as the writer's
	// (and checking the caller may run statements at all). A tenant the
	// caller is not a member of (removed since the token was issued) is
	// "", which no event's tenant matches: keyless action events of that
	// tenant are not for it.
	ctx, cancel := context.WithTimeout(r.Context(), st.h.cfg.CheckTimeout)
	var zone string
	// Opening a stream counts strictly against the caller's share of the
	// pool, as its replay does: one caller reconnecting many streams at
	// once never borrows the idle connections a request may borrow.
	release, err := st.h.d.Hold(ctx, s.auth.DBCaller())
	if err == nil {
		err = st.h.d.Run(ctx, s.auth.DBCaller(), unshared, func(q db.Querier) error {
			return q.QueryRow(ctx, `select case when t is null or t = tablegate.member_tenant_id() then t::text else '' end,
  current_setting('TimeZone')
from tablegate.current_tenant_id() as t`).Scan(&s.tenant, &zone)
		})
		release()
	} else if r.Context().Err() == nil {
		err = db.ErrCallerBusy
	}
	cancel()
	if err != nil {
		st.problems.Write(w, problem.From(rest.DBProblem(err)))
		return
	}
	loc, err := time.LoadLocation(zone)
	for i := range s.filters {
		switch {
		case err != nil && s.filters[i].zoneless():
			st.problems.Write(w, badQuery(fmt.Sprintf("Filter %s: give the time a zone (Z, +01:00): "+
				"the database's TimeZone %q is not one the stream can read.", s.filters[i].col, truncate(zone))))
			return
		case err == nil && loc != time.UTC:
			s.filters[i].localize(loc)
		}
	}
	head, err := st.h.register(s)
	if err != nil {
		p := problem.New(problem.KindUnavailable, "Too many open event streams; retry later.")
		switch {
		case errors.Is(err, errClosed):
			p = problem.New(problem.KindUnavailable, "The event stream is shutting down; reconnect with Last-Event-ID.")
		case errors.Is(err, errCallerFull):
			p = problem.New(problem.KindTooManyRequests, "This caller has too many open event streams; close one first.")
		}
		st.problems.Write(w, p.WithHeader("Retry-After", "5"))
		return
	}
	defer st.h.release(s)
	st.serve(w, r, res.Auth, s, last, head)
}

// crossSite refuses cookie-credentialed cross-site streams (see
// StreamOpts.Resolver).
func (st *Stream) crossSite(r *http.Request, res authctx.Result) *problem.Problem {
	if res.Source != authctx.SourceCookie {
		return nil
	}
	// Judge the request as if it changed state: the stream is a standing
	// read of private data.
	r2 := r.Clone(r.Context())
	r2.Method = http.MethodPost
	if st.resolver != nil {
		return st.resolver.CheckCrossSite(r2, res)
	}
	if err := st.cop.Check(r2); err != nil {
		return problem.WithCode(problem.CodeCrossSiteRequest,
			"A cross-site request may not rely on the session cookie; send the token as a Bearer header.")
	}
	return nil
}

// withClaimedExpiry returns a, with the expiry of its exp claim when it is
// a user whose ExpiresAt is unset (a custom caller built with
// authctx.NewUser): a stream must end when its token does.
func withClaimedExpiry(a authctx.Auth) authctx.Auth {
	if a.User == nil || !a.User.ExpiresAt.IsZero() {
		return a
	}
	var exp float64
	switch v := a.User.Claims["exp"].(type) {
	case float64:
		exp = v
	case int64:
		exp = float64(v)
	case int:
		exp = float64(v)
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			return a
		}
		exp = f
	default:
		return a
	}
	if exp <= 0 || exp > 1<<40 { // not a time a token expires at
		return a
	}
	u := *a.User
	u.ExpiresAt = time.Unix(int64(exp), 0)
	a.User = &u
	return a
}

// parse reads the query and Last-Event-ID.
func (st *Stream) parse(r *http.Request) (*subscriber, int64, *problem.Problem) {
	s := &subscriber{st: st, wake: make(chan struct{}, 1), done: make(chan struct{})}
	last := int64(-1)
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, 0, badQuery("The query string is malformed.")
	}
	if len(q) > MaxFilters+2 {
		return nil, 0, badQuery(fmt.Sprintf("At most %d filters.", MaxFilters))
	}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		vs := q[k]
		typ, isColumn := st.colSet[k]
		switch {
		case k == "event":
			s.names = map[string]bool{}
			for _, v := range vs {
				for _, n := range strings.Split(v, ",") {
					if _, ok := st.names[n]; !ok {
						return nil, 0, badQuery(fmt.Sprintf("Parameter event: %q is not an event of this stream.", truncate(n)))
					}
					s.names[n] = true
				}
			}
		case k == "last_event_id":
			id, err := strconv.ParseInt(vs[0], 10, 64)
			if err != nil || id < 0 {
				return nil, 0, badQuery("Parameter last_event_id must be a non-negative integer.")
			}
			last = id
		case isColumn:
			for _, v := range vs {
				if len(s.filters) >= MaxFilters {
					return nil, 0, badQuery(fmt.Sprintf("At most %d filters.", MaxFilters))
				}
				f, err := parseTyped(k, typ, v)
				if err != nil {
					return nil, 0, badQuery(err.Error())
				}
				s.filters = append(s.filters, f)
			}
		default:
			return nil, 0, badQuery(fmt.Sprintf("Unknown parameter %q: filter on a selected column, event or last_event_id.", truncate(k)))
		}
	}
	if h := r.Header.Get("Last-Event-ID"); h != "" {
		id, err := strconv.ParseInt(strings.TrimSpace(h), 10, 64)
		if err != nil || id < 0 {
			return nil, 0, badQuery("Last-Event-ID must be a non-negative integer (an event id of this stream).")
		}
		last = id
	}
	return s, last, nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// serve writes the stream until the client leaves, the subscriber is cut
// off, the hub closes, the token expires or MaxStream passes.
func (st *Stream) serve(w http.ResponseWriter, r *http.Request, auth authctx.Auth, s *subscriber, last, head int64) {
	cfg := &st.h.cfg
	rc := http.NewResponseController(w)
	// A stream outlives the server's read and write timeouts: clear the
	// read deadline and bound every write on its own.
	_ = rc.SetReadDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		// A writer that cannot set deadlines keeps the server's own.
		_ = rc.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 2000\n: connected\n\n")) {
		st.h.cut(s)
		return
	}
	tel := telemetry.FromContext(r.Context())
	// The stream ends at MaxStream or when the token expires, replay
	// included.
	life := cfg.MaxStream
	if auth.User != nil && !auth.User.ExpiresAt.IsZero() {
		life = min(life, time.Until(auth.User.ExpiresAt))
	}
	end := time.NewTimer(life)
	defer end.Stop()
	sent := head
	if last >= 0 {
		ctx, cancel := context.WithTimeout(r.Context(), life)
		go func() {
			// A cut (the hub closing) ends the replay's waits too.
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		var ok bool
		sent, ok = st.catchUp(ctx, s, last, head, write)
		over := ctx.Err() != nil
		cancel()
		if !ok {
			if !over { // a failed write or check, not the stream's end
				st.h.cut(s)
			}
			return
		}
	}
	beat := time.NewTicker(cfg.Heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-s.wake:
			for _, f := range s.take() {
				if f.id <= sent {
					continue
				}
				if !write(f.b) {
					st.h.cut(s)
					return
				}
				tel.EventsDelivered(r.Context(), 1)
				sent = f.id
			}
		case <-beat.C:
			if !write([]byte(": heartbeat\n\n")) {
				st.h.cut(s)
				return
			}
		case <-s.done:
			return
		case <-r.Context().Done():
			return
		case <-end.C:
			return
		}
	}
}

// columnTypes reads the types of table's columns as filters compare them:
// a domain's base type (through domains over domains), named as rest names
// it (schema-qualified outside pg_catalog, so that a type of yours named
// uuid is not read as one; the citext extension's type, in whatever
// schema, is citext), and an enum's labels in declared order.
func columnTypes(ctx context.Context, q db.Querier, table string) (map[string]colType, error) {
	rows, err := q.Query(ctx, `with recursive b as (
  select a.attname, t.oid, t.typtype, t.typbasetype, 0 as n
  from pg_catalog.pg_attribute a join pg_catalog.pg_type t on t.oid = a.atttypid
  where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped
  union all
  select b.attname, t.oid, t.typtype, t.typbasetype, b.n + 1
  from b join pg_catalog.pg_type t on t.oid = b.typbasetype
  where b.typtype = 'd' and b.n < 64)
select b.attname,
  case when n.nspname = 'pg_catalog' then t.typname
       when exists (select from pg_catalog.pg_depend d join pg_catalog.pg_extension x on x.oid = d.refobjid
                    where d.classid = 'pg_catalog.pg_type'::regclass and d.objid = t.oid and d.deptype = 'e'
                      and x.extname = 'citext' and t.typname = 'citext') then 'citext'
       else n.nspname || '.' || t.typname end,
  case when t.typtype = 'e' then array(select e.enumlabel::text from pg_catalog.pg_enum e
    where e.enumtypid = t.oid order by e.enumsortorder) end
from b join pg_catalog.pg_type t on t.oid = b.oid join pg_catalog.pg_namespace n on n.oid = t.typnamespace
where b.typtype <> 'd'`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types := map[string]colType{}
	for rows.Next() {
		var name string
		var ct colType
		if err := rows.Scan(&name, &ct.name, &ct.labels); err != nil {
			return nil, err
		}
		types[name] = ct
	}
	return types, rows.Err()
}
