package bench

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// The three HTTP servers of the http benchmarks, over one pool on the items
// table of setupItems (RLS on, 10 000 rows of benchUser):
//
//   - floor: a hand-written handler doing the same work with raw pgx: Bearer
//     token looked up in a map of pre-verified tokens, role + claims +
//     SELECT in ONE pgx batch, JSON encoded by hand in the shape of
//     tablegate's rows, an HMAC-signed cursor for a list;
//   - tablegate: authctx.Resolver.Middleware (ES256 JWKS inline, verified
//     once, then memo hits) in front of a rest.Resource for the table;
//   - postgrest: the floor's handler with PostgREST's round trips: BEGIN,
//     set_config, the SELECT and COMMIT each on their own.
//
// Every server mounts the table at /items: GET /items/{id} and GET /items/
// (first page, 50 rows, ordered by id, {"items": [...], "next_cursor": ...}).

const (
	benchKID   = "bench-es256"
	benchTable = "items"
	// benchPage is the list page size (rest.DefaultLimit) of every server.
	benchPage = rest.DefaultLimit
)

// httpFixture holds the servers' handlers and the caller's token.
type httpFixture struct {
	pool      *pgxpool.Pool
	token     string // ES256 access token of benchUser
	claims    string // its payload: what request.jwt.claims receives
	floor     http.Handler
	tablegate http.Handler
	postgrest http.Handler
	// protos are tablegate with the list statements of protoRepo,
	// prototypes sizing two fixes (http_proto_test.go): "tglit", "agg"
	// and "agglit".
	protos   map[string]http.Handler
	resolver *authctx.Resolver
	jwks     []byte // the inline JWKS of resolver
}

// newHTTPFixture builds the three handlers over pool (a pool on a database
// prepared by setupItems).
func newHTTPFixture(tb testing.TB, pool *pgxpool.Pool) *httpFixture {
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
	now := time.Now()
	// A Supabase-shaped access token (its claims size matters: they are
	// sent to Postgres with every statement).
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "http://127.0.0.1:54321/auth/v1", "sub": benchUser, "aud": "authenticated",
		"exp": now.Add(2 * time.Hour).Unix(), "iat": now.Unix(), "email": "bench@example.com", "phone": "",
		"app_metadata":  map[string]any{"provider": "email", "providers": []string{"email"}},
		"user_metadata": map[string]any{}, "role": "authenticated", "aal": "aal1",
		"amr":        []any{map[string]any{"method": "password", "timestamp": now.Unix()}},
		"session_id": "22222222-2222-4222-8222-222222222222", "is_anonymous": false,
	})
	tok.Header["kid"] = benchKID
	signed, err := tok.SignedString(key)
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.Split(signed, ".")[1])
	if err != nil {
		tb.Fatal(err)
	}

	rv, err := authctx.New(context.Background(), &authctx.Config{VerifierConfig: authctx.VerifierConfig{JWKS: jwks}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(rv.Close)
	cursorKey := []byte("bench cursor key, 32 bytes long!")
	// Options.Caller nil: the caller the middleware resolved.
	d := db.New(pool, nil)
	res, err := rest.NewResource(context.Background(), d, benchTable, &rest.Config{CursorKey: cursorKey})
	if err != nil {
		tb.Fatal(err)
	}
	protos := map[string]http.Handler{}
	for name, mode := range map[string]protoMode{"tglit": protoTGLiteral, "agg": protoAgg, "agglit": protoAggLiteral} {
		alt, err := rest.NewResource(context.Background(), d, benchTable, &rest.Config{CursorKey: cursorKey,
			Repository: protoRepo{mode}, Operations: []rest.Operation{rest.OpList, rest.OpGet}})
		if err != nil {
			tb.Fatal(err)
		}
		protos[name] = rv.Middleware(http.StripPrefix("/"+benchTable, alt))
	}
	tokens := map[string]rawCaller{signed: {role: "authenticated", claims: string(payload)}}
	return &httpFixture{
		pool:      pool,
		token:     signed,
		claims:    string(payload),
		floor:     &rawServer{pool: pool, tokens: tokens, cursorKey: cursorKey},
		tablegate: rv.Middleware(http.StripPrefix("/"+benchTable, res)),
		postgrest: &rawServer{pool: pool, tokens: tokens, cursorKey: cursorKey, separate: true},
		protos:    protos,
		resolver:  rv,
		jwks:      jwks,
	}
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func pad32(b []byte) []byte {
	out := make([]byte, 32)
	copy(out[32-len(b):], b)
	return out
}

// rawCaller is a pre-verified caller of the raw servers' token cache.
type rawCaller struct{ role, claims string }

// rawServer is the floor (one batch per request) or, with separate, the
// PostgREST-style server (BEGIN, set_config, SELECT, COMMIT as four round
// trips). Both encode the same JSON by hand.
type rawServer struct {
	pool      *pgxpool.Pool
	mu        sync.RWMutex
	tokens    map[string]rawCaller // verified-token cache, keyed by the token
	cursorKey []byte
	separate  bool
}

const (
	rawSettingsSQL = "select set_config('role', $1, true), set_config('request.jwt.claims', $2, true)"
	rawGetSQL      = "select id, owner, title, done from items where id = $1"
	// rawListSQL takes the page size + 1 as an integer literal, as
	// tablegate's list does, so neither re-plans per request.
	rawListSQL = "select id, owner, title, done from items order by id limit "
)

func (s *rawServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		http.Error(w, `{"title":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	s.mu.RLock()
	c, ok := s.tokens[tok]
	s.mu.RUnlock()
	if !ok {
		http.Error(w, `{"title":"Unauthorized"}`, http.StatusUnauthorized)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/"+benchTable)
	if !ok || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	var body []byte
	var err error
	if rest == "" || rest == "/" {
		limit := benchPage
		if r.URL.RawQuery != "" {
			if limit, err = strconv.Atoi(r.URL.Query().Get("limit")); err != nil || limit < 1 || limit > 1000 {
				http.Error(w, `{"title":"Bad limit"}`, http.StatusBadRequest)
				return
			}
		}
		body, err = s.list(r.Context(), c, limit)
	} else {
		id, perr := strconv.ParseInt(rest[1:], 10, 64)
		if perr != nil {
			http.Error(w, `{"title":"Bad key"}`, http.StatusBadRequest)
			return
		}
		body, err = s.get(r.Context(), c, id)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		http.Error(w, `{"title":"Not Found"}`, http.StatusNotFound)
	case err != nil:
		http.Error(w, `{"title":"Internal"}`, http.StatusInternalServerError)
	default:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}
}

// query runs sql with the caller's settings: in one batch (floor) or in a
// transaction of four round trips (PostgREST), calling each for the rows.
func (s *rawServer) query(ctx context.Context, c rawCaller, each func(pgx.Rows) error, sql string, args ...any) error {
	if !s.separate {
		b := &pgx.Batch{}
		b.Queue(rawSettingsSQL, c.role, c.claims)
		b.Queue(sql, args...)
		br := s.pool.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
		rows, err := br.Query()
		if err == nil {
			err = each(rows)
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx) //nolint:errcheck // after Commit: a no-op
	if _, err := tx.Exec(ctx, rawSettingsSQL, c.role, c.claims); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	if err := each(rows); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// rawItem is one row of items.
type rawItem struct {
	id    int64
	owner pgtype.UUID
	title string
	done  bool
}

func (it *rawItem) scan(rows pgx.Rows) error {
	return rows.Scan(&it.id, &it.owner, &it.title, &it.done)
}

// appendJSON renders the row as tablegate does (keys in column order).
func (it *rawItem) appendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, it.id, 10)
	b = append(b, `,"owner":"`...)
	b = appendUUID(b, it.owner.Bytes)
	b = append(b, `","title":`...)
	b = appendJSONString(b, it.title)
	b = append(b, `,"done":`...)
	b = strconv.AppendBool(b, it.done)
	return append(b, '}')
}

func (s *rawServer) get(ctx context.Context, c rawCaller, id int64) ([]byte, error) {
	var body []byte
	err := s.query(ctx, c, func(rows pgx.Rows) error {
		defer rows.Close()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return pgx.ErrNoRows
		}
		var it rawItem
		if err := it.scan(rows); err != nil {
			return err
		}
		body = it.appendJSON(make([]byte, 0, 128))
		rows.Close()
		return rows.Err()
	}, rawGetSQL, id)
	return body, err
}

// rawListStatement is the floor's list statement for a page size; the
// default page's text is built once.
func rawListStatement(limit int) string {
	if limit == benchPage {
		return rawDefaultList
	}
	return rawListSQL + strconv.Itoa(limit+1)
}

var rawDefaultList = rawListSQL + strconv.Itoa(benchPage+1)

func (s *rawServer) list(ctx context.Context, c rawCaller, limit int) ([]byte, error) {
	var body []byte
	err := s.query(ctx, c, func(rows pgx.Rows) error {
		defer rows.Close()
		b := make([]byte, 0, 96*limit+128)
		b = append(b, `{"items":[`...)
		var it rawItem
		n := 0
		for rows.Next() {
			if n == limit { // the extra row: more follow
				n++
				break
			}
			if err := it.scan(rows); err != nil {
				return err
			}
			if n > 0 {
				b = append(b, ',')
			}
			b = it.appendJSON(b)
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		b = append(b, `],"next_cursor":`...)
		if n > limit {
			b = append(b, '"')
			b = s.appendCursor(b, it.id)
			b = append(b, '"')
		} else {
			b = append(b, "null"...)
		}
		body = append(b, '}')
		return nil
	}, rawListStatement(limit))
	return body, err
}

// appendCursor signs the last id as tablegate does: base64url(["id"]) "."
// base64url(HMAC-SHA256(key, table, order, payload)[:16]).
func (s *rawServer) appendCursor(b []byte, last int64) []byte {
	var pb [32]byte
	payload := append(strconv.AppendInt(append(pb[:0], `["`...), last, 10), `"]`...)
	m := hmac.New(sha256.New, s.cursorKey)
	m.Write([]byte(benchTable + "\x00order=id\x00"))
	m.Write(payload)
	var sum [sha256.Size]byte
	enc := base64.RawURLEncoding
	b = enc.AppendEncode(b, payload)
	b = append(b, '.')
	return enc.AppendEncode(b, m.Sum(sum[:0])[:16])
}

func appendUUID(b []byte, u [16]byte) []byte {
	const hex = "0123456789abcdef"
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[c>>4], hex[c&0xf])
	}
	return b
}

// appendJSONString quotes s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
