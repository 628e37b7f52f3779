package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// listRenderVariants are ways to render the first 50-row page (+1 row to
// learn whether more follow) of the realistic fixture's todos as a JSON
// array; %s is the table. Each variant's render turns the rows into the
// items' bytes in this process, so both sides of the work are counted.
var listRenderVariants = []struct {
	name, sql string
	render    func(rows pgx.Rows) ([]byte, error)
}{
	// rest before: the page aggregated in Postgres.
	{"json_agg", "SELECT coalesce(json_agg(t.*), '[]'), (array_agg(ARRAY[t.id::text]))[50:50] FROM (" + listRenderPage + ") t", renderFirstField},
	{"json_build_object", "SELECT coalesce(json_agg(json_build_object('id',t.id,'tenant_id',t.tenant_id,'owner_id',t.owner_id,'title',t.title,'done',t.done,'created_at',t.created_at)), '[]'), (array_agg(ARRAY[t.id::text]))[50:50] FROM (" + listRenderPage + ") t", renderFirstField},
	{"row_to_json", "SELECT row_to_json(t), t.id::text FROM (" + listRenderPage + ") t", renderRowPerRow},
	// rest now: the columns, rendered in Go; the order column's text for
	// the cursor.
	{"columns", "SELECT t.id,t.tenant_id,t.owner_id,t.title,t.done,t.created_at,t.id::text FROM %s t ORDER BY t.id ASC NULLS LAST LIMIT 51", renderColumns},
	{"columns+to_json(ts)", "SELECT t.id,t.tenant_id,t.owner_id,t.title,t.done,to_json(t.created_at),t.id::text FROM %s t ORDER BY t.id ASC NULLS LAST LIMIT 51", renderColumns},
}

const listRenderPage = "SELECT t.id,t.tenant_id,t.owner_id,t.title,t.done,t.created_at FROM %s t ORDER BY t.id ASC NULLS LAST LIMIT 51"

// BenchmarkListRender measures, at the database, ways of rendering a
// 50-row page of the realistic fixture's todos (six columns: bigint, two
// uuids, text, bool, timestamptz) as the realistic caller: the page
// aggregated by json_agg, by json_agg of json_build_object, one
// row_to_json per row, and the plain columns rendered to the same JSON in
// Go (what rest does), the timestamp by Go or by to_json. Each runs as
// db.Read runs a statement (settings + statement in one pgx batch) from 64
// goroutines over 16 connections, alternating rounds, on three tables with
// the same rows: public.todos (the demo's tenant + membership policy),
// todos_open (using (true)) and todos under random_page_cost = 1.1 (the
// usual setting for SSDs: the planner then reads the page through
// todos_tenant_idx, 51 rows, instead of the primary key filtered by
// tenant, ~400 rows for 51 with 8 tenants).
//
// Metrics per variant: -db-cpu-µs/op (the backends, from /proc),
// -proc-cpu-µs/op (this process: pgx and the rendering), -ops/s; load-1m.
func BenchmarkListRender(b *testing.B) {
	pool := setupRealistic(b, demoSchema(b), 0)
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["random_page_cost"] = "1.1"
	ssd, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ssd.Close)
	_, claims := realCallerAuth(b)
	for _, tc := range []struct {
		name, table string
		pool        *pgxpool.Pool
	}{
		{"demo", "public.todos", pool},
		{"open", "public.todos_open", pool},
		{"demo-rpc1.1", "public.todos", ssd},
	} {
		cpu := backendCPU(b, tc.pool)
		var subs []*loadSubject
		for _, v := range listRenderVariants {
			subs = append(subs, &loadSubject{name: v.name, backendCPU: cpu,
				fn: listRenderStatement(tc.pool, claims, fmt.Sprintf(v.sql, tc.table), v.render)})
		}
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				alternate(b, 3, time.Second, subs)
			}
			for _, s := range subs {
				n := float64(len(s.lat))
				b.ReportMetric(s.ops(), s.name+"-ops/s")
				b.ReportMetric(float64(s.dbcpu.Nanoseconds())/1e3/n, s.name+"-db-cpu-µs/op")
				b.ReportMetric(float64(s.cpu.Nanoseconds())/1e3/n, s.name+"-proc-cpu-µs/op")
			}
			b.ReportMetric(loadavg(), "load-1m")
		})
	}
}

// listRenderStatement runs sql with the caller's settings in one batch and
// renders its rows; the page must hold benchPage items.
func listRenderStatement(pool *pgxpool.Pool, claims []byte, sql string, render func(pgx.Rows) ([]byte, error)) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		b := &pgx.Batch{}
		b.Queue(rawSettingsSQL, "authenticated", claims)
		var out []byte
		b.Queue(sql).Query(func(rows pgx.Rows) error {
			var err error
			out, err = render(rows)
			return err
		})
		if err := pool.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if n := countItems(out); n != benchPage && n != benchPage+1 {
			return fmt.Errorf("page of %d items: %.80s", n, out)
		}
		return nil
	}
}

// renderFirstField copies the aggregated page.
func renderFirstField(rows pgx.Rows) ([]byte, error) {
	defer rows.Close()
	var out []byte
	for rows.Next() {
		out = append(out, rows.RawValues()[0]...)
	}
	return out, rows.Err()
}

// renderRowPerRow joins one JSON object per row into an array.
func renderRowPerRow(rows pgx.Rows) ([]byte, error) {
	defer rows.Close()
	out := append(make([]byte, 0, 16384), '[')
	for rows.Next() {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, rows.RawValues()[0]...)
	}
	return append(out, ']'), rows.Err()
}

// renderColumns renders the six binary columns as rest does (created_at
// in UTC, or copied when it arrives as JSON).
func renderColumns(rows pgx.Rows) ([]byte, error) {
	defer rows.Close()
	out := append(make([]byte, 0, 16384), '[')
	for rows.Next() {
		v := rows.RawValues()
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, `{"id":`...)
		out = strconv.AppendInt(out, int64(binary.BigEndian.Uint64(v[0])), 10)
		out = append(out, `,"tenant_id":"`...)
		out = appendUUID(out, [16]byte(v[1]))
		out = append(out, `","owner_id":"`...)
		out = appendUUID(out, [16]byte(v[2]))
		out = append(out, `","title":`...)
		out = appendJSONString(out, string(v[3]))
		out = append(out, `,"done":`...)
		out = strconv.AppendBool(out, v[4][0] == 1)
		out = append(out, `,"created_at":`...)
		if rows.FieldDescriptions()[5].DataTypeOID == 114 { // to_json
			out = append(out, v[5]...)
		} else {
			us := int64(binary.BigEndian.Uint64(v[5]))
			out = append(out, '"')
			out = time.UnixMicro(946684800e6+us).UTC().AppendFormat(out, "2006-01-02T15:04:05.999999")
			out = append(out, `+00:00"`...)
		}
		out = append(out, '}')
	}
	return append(out, ']'), rows.Err()
}
