package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
)

// Alternatives for rendering rows, in this process only (ns and
// allocations per op; Postgres's CPU is not counted: bench's
// BenchmarkListRender measures both sides). BenchmarkHandlerGet and
// BenchmarkHandlerList50 run what rest does: columns read in the driver's
// format and rendered in Go (row_json.go). Run with
//
//	go test ./rest -run '^$' -bench . -benchmem
func benchBundle(b *testing.B) (*bundle, authctx.Auth) {
	bb := setup(b)
	bb.exec(`insert into todos (owner_id, title, priority, secret)
	         select $1, 'todo number ' || i, i, md5(i::text) from generate_series(1, 200) i`, alice)
	return bb, user(alice)
}

const benchCols = `id, owner_id, title, slug, done, priority, created_at`

// benchPage keeps the last page a benchmark built, so that building it is
// part of what is measured.
var benchPage []byte

func BenchmarkList50JSONBuildObject(b *testing.B) {
	bb, caller := benchBundle(b)
	sql := `SELECT json_build_object('id',t.id,'owner_id',t.owner_id,'title',t.title,'slug',t.slug,'done',t.done,'priority',t.priority,'created_at',t.created_at), t.id::text FROM todos t ORDER BY t.id LIMIT 51`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			rows, err := q.Query(ctx, sql)
			if err != nil {
				return err
			}
			buf := make([]byte, 0, 8192)
			buf = append(buf, '[')
			for rows.Next() {
				buf = append(buf, rows.RawValues()[0]...)
				buf = append(buf, ',')
			}
			benchPage = buf
			rows.Close()
			return rows.Err()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList50RowToJSONSubselect(b *testing.B) {
	bb, caller := benchBundle(b)
	sql := `SELECT (SELECT row_to_json(x) FROM (SELECT t.id, t.owner_id, t.title, t.slug, t.done, t.priority, t.created_at) x), t.id::text FROM todos t ORDER BY t.id LIMIT 51`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			rows, err := q.Query(ctx, sql)
			if err != nil {
				return err
			}
			buf := make([]byte, 0, 8192)
			for rows.Next() {
				buf = append(buf, rows.RawValues()[0]...)
			}
			benchPage = buf
			rows.Close()
			return rows.Err()
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkList50JSONAgg(b *testing.B) {
	bb, caller := benchBundle(b)
	sql := `SELECT coalesce(json_agg(s), '[]') FROM (SELECT ` + benchCols + ` FROM todos t ORDER BY t.id LIMIT 51) s`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			var raw []byte
			return q.QueryRow(ctx, sql).Scan(&raw)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// The alternative: decode typed columns in Go and encode them with
// encoding/json (what a hand-written handler would do).
func BenchmarkList50DecodeInGo(b *testing.B) {
	bb, caller := benchBundle(b)
	sql := `SELECT ` + benchCols + ` FROM todos t ORDER BY t.id LIMIT 51`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			rows, err := q.Query(ctx, sql)
			if err != nil {
				return err
			}
			maps, err := pgx.CollectRows(rows, pgx.RowToMap)
			if err != nil {
				return err
			}
			_, err = json.Marshal(maps)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// Whole-handler benchmarks (in-process, real Postgres): allocations per
// request of the get and list paths.
func BenchmarkHandlerGet(b *testing.B) {
	bb, _ := benchBundle(b)
	res := bb.resource("todos", &Config{Select: []string{"id", "owner_id", "title", "slug", "done", "priority", "created_at"}})
	var id string
	_ = bb.pool.QueryRow(context.Background(), "select id from todos limit 1").Scan(&id)
	req := httptest.NewRequest("GET", "/"+id, nil)
	req.Header.Set("X-Test-User", alice)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		res.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

func BenchmarkHandlerList50(b *testing.B) {
	bb, _ := benchBundle(b)
	res := bb.resource("todos", &Config{Select: []string{"id", "owner_id", "title", "slug", "done", "priority", "created_at"}})
	req := httptest.NewRequest("GET", "/?limit=50", nil)
	req.Header.Set("X-Test-User", alice)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		res.ServeHTTP(w, req)
		if w.Code != http.StatusOK || !bytes.HasPrefix(w.Body.Bytes(), []byte(`{"items":[{`)) {
			b.Fatal(w.Code, w.Body.String())
		}
	}
}

func BenchmarkList50JSONAggLateral(b *testing.B) {
	bb, caller := benchBundle(b)
	sql := `SELECT coalesce(json_agg(p.r ORDER BY p.rn) FILTER (WHERE p.rn <= 50), '[]'), (json_agg(p.k) FILTER (WHERE p.rn = 50))->0, count(*)
	FROM (SELECT row_number() OVER (ORDER BY t.id) AS rn, r, json_build_array(t.id::text) AS k
	      FROM (SELECT ` + benchCols + ` FROM todos t ORDER BY t.id LIMIT 51) t, LATERAL (SELECT t.id, t.owner_id, t.title, t.slug, t.done, t.priority, t.created_at) r) p`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			var raw, k []byte
			var n int64
			return q.QueryRow(ctx, sql).Scan(&raw, &k, &n)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetJSONBuildObject(b *testing.B) {
	bb, caller := benchBundle(b)
	var id string
	_ = bb.pool.QueryRow(context.Background(), "select id from todos limit 1").Scan(&id)
	sql := `SELECT json_build_object('id',t.id,'owner_id',t.owner_id,'title',t.title,'slug',t.slug,'done',t.done,'priority',t.priority,'created_at',t.created_at) FROM todos t WHERE t.id = $1::text::uuid`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			var raw []byte
			return q.QueryRow(ctx, sql, id).Scan(&raw)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetRowToJSONLateral(b *testing.B) {
	bb, caller := benchBundle(b)
	var id string
	_ = bb.pool.QueryRow(context.Background(), "select id from todos limit 1").Scan(&id)
	sql := `SELECT row_to_json(r) FROM todos t, LATERAL (SELECT t.id, t.owner_id, t.title, t.slug, t.done, t.priority, t.created_at) r WHERE t.id = $1::text::uuid`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			var raw []byte
			return q.QueryRow(ctx, sql, id).Scan(&raw)
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetDecodeInGo(b *testing.B) {
	bb, caller := benchBundle(b)
	var id string
	_ = bb.pool.QueryRow(context.Background(), "select id from todos limit 1").Scan(&id)
	sql := `SELECT ` + benchCols + ` FROM todos t WHERE t.id = $1::text::uuid`
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		err := bb.db.Run(ctx, caller.DBCaller(), db.RunOpts{}, func(q db.Querier) error {
			rows, err := q.Query(ctx, sql, id)
			if err != nil {
				return err
			}
			m, err := pgx.CollectExactlyOneRow(rows, pgx.RowToMap)
			if err != nil {
				return err
			}
			_, err = json.Marshal(m)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
