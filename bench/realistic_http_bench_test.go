package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// realColumns are the columns the demo's todos resource returns.
var realColumns = []string{"id", "tenant_id", "owner_id", "title", "done", "created_at"}

// realHTTP is the realistic fixture over HTTP: tablegate serving the demo's
// public.todos (authctx middleware, ES256 token of the realistic caller, a
// rest.Resource with the demo's columns and no hooks), and a raw pgx
// create floor on the same table.
type realHTTP struct {
	pool   *pgxpool.Pool
	token  string
	claims []byte
	// hookToken is the caller's token with the memberships claim
	// tablegate.access_token_hook writes (its membership is read from the
	// token, not the table).
	hookToken string
	tablegate http.Handler
	// before is tablegate with rest's statements before rows were rendered
	// in Go (prevRepo): the same run's before.
	before    http.Handler
	floorPost http.Handler
	floor     http.Handler // realFloor on public.todos
	// floorOwner is realFloor on public.todos_owner: the same rows under
	// the owner policy, the floor of the same row shape.
	floorOwner http.Handler
	ids        []string // ids the caller reads (its tenant's rows)
	owned      []string // ids the caller owns (what todos_owner shows it)
}

// realInsertSQL is the create floor's statement: the demo's defaults fill
// tenant_id (current_tenant_id()) and owner_id (auth.uid()); the row comes
// back as the JSON object tablegate answers.
const realInsertSQL = `insert into public.todos (title) values ($1)
  returning json_build_object('id', id, 'tenant_id', tenant_id, 'owner_id', owner_id, 'title', title, 'done', done, 'created_at', created_at)`

func newRealHTTP(tb testing.TB, pool *pgxpool.Pool) *realHTTP {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	jwks, err := json.Marshal(map[string]any{"keys": []any{map[string]any{
		"kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": benchKID,
		"x": b64(pad32(key.X.Bytes())), "y": b64(pad32(key.Y.Bytes())),
	}}})
	if err != nil {
		tb.Fatal(err)
	}
	claims := realClaims(realCallerID, realCallerTenant)
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims(claims))
	tok.Header["kid"] = benchKID
	signed, err := tok.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	_, raw := realCallerAuth(tb)
	var hooked map[string]any
	if err := json.Unmarshal(hookedClaims(tb, pool, raw), &hooked); err != nil {
		tb.Fatal(err)
	}
	htok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims(hooked))
	htok.Header["kid"] = benchKID
	hookSigned, err := htok.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	rv, err := authctx.New(context.Background(), &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: jwks}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rv.Close)
	res, err := rest.NewResource(context.Background(), db.New(pool, nil), "public.todos", &rest.Config{
		Select: realColumns, CursorKey: []byte("bench cursor key, 32 bytes long!"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	prev, err := rest.NewResource(context.Background(), db.New(pool, nil), "public.todos", &rest.Config{
		Select: realColumns, CursorKey: []byte("bench cursor key, 32 bytes long!"),
		Repository: prevRepo{}, Operations: []rest.Operation{rest.OpList, rest.OpGet},
	})
	if err != nil {
		tb.Fatal(err)
	}
	rows, err := pool.Query(context.Background(), `select id::text from public.todos where tenant_id = $1 order by id`, realCallerTenant)
	if err != nil {
		tb.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		tb.Fatal(err)
	}
	floor := func(table string) *realFloor {
		return &realFloor{pool: pool, tokens: map[string][]byte{signed: raw}, cursorKey: []byte("bench cursor key, 32 bytes long!"),
			getSQL: fmt.Sprintf(realGetSQL, table), listSQL: fmt.Sprintf(realListSQL, table)}
	}
	return &realHTTP{
		pool: pool, token: signed, claims: raw, hookToken: hookSigned, ids: ids, owned: ownedIDs(tb, pool),
		tablegate:  rv.Middleware(http.StripPrefix("/todos", res)),
		before:     rv.Middleware(http.StripPrefix("/todos", prev)),
		floorPost:  &rawCreate{pool: pool, tokens: map[string][]byte{signed: raw}},
		floor:      floor("public.todos"),
		floorOwner: floor("public.todos_owner"),
	}
}

// rawCreate is the create floor: Bearer token looked up in a map of
// pre-verified tokens, the body's title decoded, role + claims + INSERT in
// one pgx batch (one round trip, one implicit transaction), the returned
// row written as it comes.
type rawCreate struct {
	pool   *pgxpool.Pool
	tokens map[string][]byte
}

func (s *rawCreate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims, ok := s.tokens[tok]
	if !ok || r.Method != http.MethodPost {
		http.Error(w, `{"title":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	var in struct {
		Title string `json:"title"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil || in.Title == "" {
		http.Error(w, `{"title":"Bad body"}`, http.StatusBadRequest)
		return
	}
	b := &pgx.Batch{}
	b.Queue(rawSettingsSQL, "authenticated", claims)
	var row []byte
	b.Queue(realInsertSQL, in.Title).QueryRow(func(r pgx.Row) error { return r.Scan(&row) })
	if err := s.pool.SendBatch(r.Context(), b).Close(); err != nil {
		http.Error(w, `{"title":"Internal"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(row)
}

// poster returns a load function that POSTs a todo to url with the token
// and insists on 201.
func poster(c *http.Client, url, token string) func(ctx context.Context) error {
	auth := "Bearer " + token
	var n atomic.Int64
	return func(ctx context.Context) error {
		body := `{"title":"bench ` + strconv.FormatInt(n.Add(1), 10) + `"}`
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", auth)
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusCreated {
			return fmt.Errorf("POST %s: status %d", url, resp.StatusCode)
		}
		return nil
	}
}

// BenchmarkHTTPRealistic serves the realistic fixture (the demo's schema
// and tenant + membership policies, 24 000 todos over 8 tenants, a caller
// who is a member; realistic_fixture_test.go) over HTTP, 64 concurrent
// keep-alive clients in this process, beside the owner-policy fixture of
// BenchmarkHTTP (items, policy owner = (select auth.uid())) in the same
// process and run, rounds alternating:
//
//   - get: tablegate GET /todos/{id} (ids of the caller's tenant) vs the
//     floor server's GET /items/{id} on the owner-policy fixture (target
//     ≥ 0.80);
//   - list: tablegate GET /todos/ (first page, 50 rows) vs the floor's
//     GET /items/ (target ≥ 0.70);
//   - create: tablegate POST /todos (no hooks: one round trip) vs a raw pgx
//     insert with the same settings on the same table (target ≥ 0.80).
//
// For get and list, floor-real is the same hand-written floor on the
// realistic fixture (realFloor): vs-floor-real = tablegate over it (the
// library's own cost), floor-real/floor = what the realistic fixture's
// policies and wider rows cost a hand-written handler. floor-owner-rows is
// that floor on todos_owner: the same six-column rows under the owner
// policy (its get reads ids the caller owns; its list the first 50 of the
// caller's 60 rows), so vs-floor-owner-rows compares tablegate with the
// floor's policy at the realistic fixture's row shape. tablegate-before is
// tablegate with rest's statements from before rows were rendered in Go
// (prevRepo), measured in the same rounds: before-ratio, -median and -cpu
// are its ratio, ratio-median and ratio-cpu. tablegate-hook is tablegate
// for a token carrying the memberships claim of tablegate.access_token_hook
// (the membership read from the token, no table probe): hook-ratio, -median
// and -cpu.
//
// Metrics: <server>-ops/s, -p50-µs, -p99-µs, -proc-cpu-µs/req (client and
// server, Postgres excluded), -db-cpu-µs/req (the Postgres backends, from
// /proc); ratio = tablegate/floor mean throughput, ratio-median the median
// of per-round ratios, ratio-cpu = the floor's total CPU per request over
// tablegate's (what the throughput ratio comes to on an unshared machine);
// load-1m.
func BenchmarkHTTPRealistic(b *testing.B) {
	items := setupItems(b)
	fx := newHTTPFixture(b, items)
	real := newRealHTTP(b, setupRealistic(b, demoSchema(b), 0))
	urls := map[string]string{}
	for name, h := range map[string]http.Handler{"floor": fx.floor, "tablegate": real.tablegate, "floor-create": real.floorPost,
		"floor-real": real.floor, "floor-owner-rows": real.floorOwner, "tablegate-before": real.before} {
		srv := httptest.NewServer(h)
		b.Cleanup(srv.Close)
		urls[name] = srv.URL
	}
	client := httpClient()
	b.Cleanup(client.CloseIdleConnections)
	itemsCPU, realCPU := backendCPU(b, items), backendCPU(b, real.pool)

	var n, m, o atomic.Int64
	nextItem := func() string { return "/items/" + strconv.FormatInt(n.Add(1)%10000+1, 10) }
	nextTodo := func() string { return "/todos/" + real.ids[int(m.Add(1))%len(real.ids)] }
	nextOwned := func() string { return "/todos/" + real.owned[int(o.Add(1))%len(real.owned)] }
	first := func() string { return "/todos/" }
	kinds := []struct {
		name                                     string
		floor, subj, real, ownRows, before, hook *loadSubject
	}{
		{"get",
			&loadSubject{name: "floor", fn: getter(client, urls["floor"], fx.token, nextItem), backendCPU: itemsCPU},
			&loadSubject{name: "tablegate", fn: getter(client, urls["tablegate"], real.token, nextTodo), backendCPU: realCPU},
			&loadSubject{name: "floor-real", fn: getter(client, urls["floor-real"], real.token, nextTodo), backendCPU: realCPU},
			&loadSubject{name: "floor-owner-rows", fn: getter(client, urls["floor-owner-rows"], real.token, nextOwned), backendCPU: realCPU},
			&loadSubject{name: "tablegate-before", fn: getter(client, urls["tablegate-before"], real.token, nextTodo), backendCPU: realCPU},
			&loadSubject{name: "tablegate-hook", fn: getter(client, urls["tablegate"], real.hookToken, nextTodo), backendCPU: realCPU}},
		{"list",
			&loadSubject{name: "floor", fn: getter(client, urls["floor"], fx.token, func() string { return "/items/" }), backendCPU: itemsCPU},
			&loadSubject{name: "tablegate", fn: getter(client, urls["tablegate"], real.token, first), backendCPU: realCPU},
			&loadSubject{name: "floor-real", fn: getter(client, urls["floor-real"], real.token, first), backendCPU: realCPU},
			&loadSubject{name: "floor-owner-rows", fn: getter(client, urls["floor-owner-rows"], real.token, first), backendCPU: realCPU},
			&loadSubject{name: "tablegate-before", fn: getter(client, urls["tablegate-before"], real.token, first), backendCPU: realCPU},
			&loadSubject{name: "tablegate-hook", fn: getter(client, urls["tablegate"], real.hookToken, first), backendCPU: realCPU}},
		{"create",
			&loadSubject{name: "floor", fn: poster(client, urls["floor-create"], real.token), backendCPU: realCPU},
			&loadSubject{name: "tablegate", fn: poster(client, urls["tablegate"]+"/todos", real.token), backendCPU: realCPU}, nil, nil, nil, nil},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			subs := []*loadSubject{k.floor, k.subj}
			for _, s := range []*loadSubject{k.real, k.ownRows, k.before, k.hook} {
				if s != nil {
					subs = append(subs, s)
				}
			}
			for b.Loop() {
				alternate(b, httpRounds, httpRound, subs)
			}
			cpu := func(s *loadSubject) float64 {
				return float64((s.cpu + s.dbcpu).Nanoseconds()) / 1e3 / float64(len(s.lat))
			}
			for _, s := range subs {
				s.report(b)
				b.ReportMetric(float64(s.dbcpu.Nanoseconds())/1e3/float64(len(s.lat)), s.name+"-db-cpu-µs/req")
			}
			b.ReportMetric(k.subj.ops()/k.floor.ops(), "ratio")
			b.ReportMetric(medianRatio(k.subj, k.floor), "ratio-median")
			b.ReportMetric(cpu(k.floor)/cpu(k.subj), "ratio-cpu")
			if k.real != nil {
				b.ReportMetric(k.subj.ops()/k.real.ops(), "vs-floor-real")
				b.ReportMetric(medianRatio(k.subj, k.real), "vs-floor-real-median")
				b.ReportMetric(cpu(k.real)/cpu(k.subj), "vs-floor-real-cpu")
				b.ReportMetric(k.real.ops()/k.floor.ops(), "floor-real/floor")
			}
			if k.before != nil {
				b.ReportMetric(k.before.ops()/k.floor.ops(), "before-ratio")
				b.ReportMetric(medianRatio(k.before, k.floor), "before-ratio-median")
				b.ReportMetric(cpu(k.floor)/cpu(k.before), "before-ratio-cpu")
			}
			if k.hook != nil {
				b.ReportMetric(k.hook.ops()/k.floor.ops(), "hook-ratio")
				b.ReportMetric(medianRatio(k.hook, k.floor), "hook-ratio-median")
				b.ReportMetric(cpu(k.floor)/cpu(k.hook), "hook-ratio-cpu")
			}
			if k.ownRows != nil {
				b.ReportMetric(k.subj.ops()/k.ownRows.ops(), "vs-floor-owner-rows")
				b.ReportMetric(medianRatio(k.subj, k.ownRows), "vs-floor-owner-rows-median")
				b.ReportMetric(cpu(k.ownRows)/cpu(k.subj), "vs-floor-owner-rows-cpu")
			}
			b.ReportMetric(loadavg(), "load-1m")
		})
	}
}

// realFloor is the floor server on the realistic fixture: the rawServer's
// work (pre-verified token map, role + claims + SELECT in one pgx batch,
// JSON written by hand, an HMAC-signed cursor) on public.todos and its
// six columns, under the demo's policies. Against it, tablegate's ratio
// is its own cost; against the owner-policy floor, the policy's and the
// wider rows' too.
type realFloor struct {
	pool            *pgxpool.Pool
	tokens          map[string][]byte
	cursorKey       []byte
	getSQL, listSQL string // realGetSQL and realListSQL on its table
}

// The floor's statements; %s is the table.
const (
	realGetSQL  = "select id, tenant_id, owner_id, title, done, created_at from %s where id = $1"
	realListSQL = "select id, tenant_id, owner_id, title, done, created_at from %s order by id limit 51"
)

func (s *realFloor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims, ok := s.tokens[tok]
	if !ok || r.Method != http.MethodGet {
		http.Error(w, `{"title":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	path, _ := strings.CutPrefix(r.URL.Path, "/todos")
	list := path == "" || path == "/"
	b := &pgx.Batch{}
	b.Queue(rawSettingsSQL, "authenticated", claims)
	out := make([]byte, 0, 1024)
	var last int64
	n := 0
	each := func(rows pgx.Rows) error {
		defer rows.Close()
		var (
			id            int64
			tenant, owner [16]byte
			title         string
			done          bool
			created       time.Time
		)
		for rows.Next() {
			if list && n == benchPage {
				n++
				break
			}
			if err := rows.Scan(&id, &tenant, &owner, &title, &done, &created); err != nil {
				return err
			}
			if n > 0 {
				out = append(out, ',')
			}
			out = append(out, `{"id":`...)
			out = strconv.AppendInt(out, id, 10)
			out = append(out, `,"tenant_id":"`...)
			out = appendUUID(out, tenant)
			out = append(out, `","owner_id":"`...)
			out = appendUUID(out, owner)
			out = append(out, `","title":`...)
			out = appendJSONString(out, title)
			out = append(out, `,"done":`...)
			out = strconv.AppendBool(out, done)
			out = append(out, `,"created_at":"`...)
			out = created.AppendFormat(out, "2006-01-02T15:04:05.999999Z07:00")
			out = append(out, `"}`...)
			last = id
			n++
		}
		rows.Close()
		return rows.Err()
	}
	if list {
		out = append(out, `{"items":[`...)
		b.Queue(s.listSQL).Query(each)
	} else {
		id, err := strconv.ParseInt(path[1:], 10, 64)
		if err != nil {
			http.Error(w, `{"title":"Bad key"}`, http.StatusBadRequest)
			return
		}
		b.Queue(s.getSQL, id).Query(each)
	}
	if err := s.pool.SendBatch(r.Context(), b).Close(); err != nil {
		http.Error(w, `{"title":"Internal"}`, http.StatusInternalServerError)
		return
	}
	if list {
		out = append(out, `],"next_cursor":`...)
		if n > benchPage {
			rs := &rawServer{cursorKey: s.cursorKey}
			out = append(out, '"')
			out = rs.appendCursor(out, last)
			out = append(out, '"')
		} else {
			out = append(out, "null"...)
		}
		out = append(out, '}')
	} else if n == 0 {
		http.Error(w, `{"title":"Not Found"}`, http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
