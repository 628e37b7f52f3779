// Command demofloor is the hand-written floor of the outside comparison
// (make bench-floor) over the demo's own table and policy: the server a
// team would write by hand for GET /api/todos/{id} of "tablegate demo",
// in the shape of the shared floor (../shared/bench-floor, rlsget -db
// batch2 -jwt es256cache) but against public.todos of the demo's database
// under its tenant-membership policy, with the demo's tokens and keys.
//
// It verifies "Authorization: Bearer <ES256 JWT>" against the demo's JWKS,
// caches verified tokens by SHA-256 until they expire, sends the claims,
// the role and the select in one pipeline (one round trip), renders the row
// as JSON in Go, and holds a pool of -conns connections. It removes only
// the differences of the shared floor that are not tablegate's doing (row
// width, table size, the policy), so that the two ratios together say how
// much of the distance is the demo's schema and how much is tablegate.
//
//	demofloor -addr 127.0.0.1:18082 -database-url "$DATABASE_URL" -jwks-url "$JWKS_URL"
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	settingsSQL = `select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`
	getSQL      = `select id, tenant_id, owner_id, title, done, created_at from public.todos where id = $1`
	listSQL     = `select id, tenant_id, owner_id, title, done, created_at from public.todos order by id limit $1`
)

// page is a list answer: the rows and, when there are more, a cursor
// (the last id).
type page struct {
	Items      []todo `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

type todo struct {
	ID        int64     `json:"id"`
	TenantID  string    `json:"tenant_id"`
	OwnerID   string    `json:"owner_id"`
	Title     string    `json:"title"`
	Done      bool      `json:"done"`
	CreatedAt time.Time `json:"created_at"`
}

type server struct {
	pool   *pgxpool.Pool
	parser *jwt.Parser
	keys   map[string]*ecdsa.PublicKey
	cache  sync.Map // [32]byte -> *cached
}

type cached struct {
	claims string
	exp    time.Time
}

func main() {
	addr := flag.String("addr", "127.0.0.1:18082", "listen address")
	dbURL := flag.String("database-url", "", "the demo's DATABASE_URL")
	jwksURL := flag.String("jwks-url", "", "the demo's JWKS_URL")
	conns := flag.Int("conns", 16, "pgx pool size")
	flag.Parse()
	if *dbURL == "" || *jwksURL == "" {
		log.Fatal("demofloor: -database-url and -jwks-url are required")
	}
	keys, err := fetchKeys(*jwksURL)
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(*dbURL)
	if err != nil {
		log.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = int32(*conns), int32(*conns)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	s := &server{pool: pool, keys: keys,
		parser: jwt.NewParser(jwt.WithValidMethods([]string{"ES256"}), jwt.WithExpirationRequired())}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/todos/{id}", s.get)
	mux.HandleFunc("GET /api/todos", s.list)
	log.Printf("demofloor on %s (pool %d)", *addr, *conns)
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// fetchKeys reads the P-256 keys of a JWKS by kid.
func fetchKeys(u string) (map[string]*ecdsa.PublicKey, error) {
	resp, err := http.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var set struct {
		Keys []struct{ Kty, Crv, Kid, X, Y string }
	}
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	keys := map[string]*ecdsa.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "EC" || k.Crv != "P-256" {
			continue
		}
		x, err1 := base64.RawURLEncoding.DecodeString(k.X)
		y, err2 := base64.RawURLEncoding.DecodeString(k.Y)
		if err1 != nil || err2 != nil || len(x) != 32 || len(y) != 32 {
			return nil, errors.New("jwks: bad EC key")
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return nil, fmt.Errorf("jwks: %w", err)
		}
		keys[k.Kid] = pub
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks: no P-256 key")
	}
	return keys, nil
}

func (s *server) claims(r *http.Request) (string, error) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return "", errors.New("no bearer token")
	}
	hk := sha256.Sum256([]byte(raw))
	if v, ok := s.cache.Load(hk); ok {
		c := v.(*cached)
		if time.Now().Before(c.exp) {
			return c.claims, nil
		}
		s.cache.Delete(hk)
	}
	t, err := s.parser.Parse(raw, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		if k, ok := s.keys[kid]; ok {
			return k, nil
		}
		return nil, errors.New("unknown kid")
	})
	if err != nil {
		return "", err
	}
	parts := strings.SplitN(raw, ".", 3)
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	exp, _ := t.Claims.GetExpirationTime()
	s.cache.Store(hk, &cached{claims: string(payload), exp: exp.Time})
	return string(payload), nil
}

func (s *server) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil {
		http.Error(w, `{"message":"bad id"}`, http.StatusBadRequest)
		return
	}
	claims, err := s.claims(r)
	if err != nil {
		http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	var t todo
	var tenant, owner [16]byte
	b := &pgx.Batch{}
	b.Queue(settingsSQL, claims)
	var scanErr error
	b.Queue(getSQL, id).QueryRow(func(row pgx.Row) error {
		scanErr = row.Scan(&t.ID, &tenant, &owner, &t.Title, &t.Done, &t.CreatedAt)
		return scanErr
	})
	err = s.pool.SendBatch(r.Context(), b).Close()
	if scanErr != nil {
		err = scanErr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		http.Error(w, `{"message":"not found"}`, http.StatusNotFound)
		return
	}
	if err != nil {
		log.Printf("error: %v", err)
		http.Error(w, `{"message":"internal"}`, http.StatusInternalServerError)
		return
	}
	t.TenantID, t.OwnerID = uuidString(tenant), uuidString(owner)
	out, err := json.Marshal(&t)
	if err != nil {
		http.Error(w, `{"message":"internal"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

// list answers GET /api/todos?limit=N (default 50, at most 1000) with
// the first N rows by id, read as the demo's list reads them: one
// pipeline, the page plus one row to know whether there are more.
func (s *server) list(w http.ResponseWriter, r *http.Request) {
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			http.Error(w, `{"message":"bad limit"}`, http.StatusBadRequest)
			return
		}
		limit = n
	}
	claims, err := s.claims(r)
	if err != nil {
		http.Error(w, `{"message":"unauthorized"}`, http.StatusUnauthorized)
		return
	}
	p := page{Items: make([]todo, 0, limit+1)}
	b := &pgx.Batch{}
	b.Queue(settingsSQL, claims)
	b.Queue(listSQL, limit+1).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var t todo
			var tenant, owner [16]byte
			if err := rows.Scan(&t.ID, &tenant, &owner, &t.Title, &t.Done, &t.CreatedAt); err != nil {
				return err
			}
			t.TenantID, t.OwnerID = uuidString(tenant), uuidString(owner)
			p.Items = append(p.Items, t)
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(r.Context(), b).Close(); err != nil {
		log.Printf("error: %v", err)
		http.Error(w, `{"message":"internal"}`, http.StatusInternalServerError)
		return
	}
	if len(p.Items) > limit {
		p.Items = p.Items[:limit]
		p.NextCursor = strconv.FormatInt(p.Items[limit-1].ID, 10)
	}
	out, err := json.Marshal(&p)
	if err != nil {
		http.Error(w, `{"message":"internal"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	_, _ = w.Write(out)
}

func uuidString(u [16]byte) string {
	const hx = "0123456789abcdef"
	var b [36]byte
	j := 0
	for i, c := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b[j] = '-'
			j++
		}
		b[j], b[j+1] = hx[c>>4], hx[c&15]
		j += 2
	}
	return string(b[:])
}
