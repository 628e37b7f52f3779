package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
)

// tableRepository is the default [Repository]: SQL built from quoted
// identifiers (introspected once) and bound parameters only. Rows come
// back as columns and are rendered to JSON in Go as Postgres's to_json
// renders them (row_json.go), so get, list, create and update answer the
// same bytes for the same row.
type tableRepository struct {
	table  string // quoted, schema-qualified
	sel    []*column
	key    *column
	byName map[string]*column

	// stmts caches INSERT and UPDATE texts per column set (bounded).
	stmts  sync.Map // string → string
	nstmts atomic.Int32

	rowBytes atomic.Int64 // the widest mean row of a page so far, in bytes of JSON

	out       atomic.Pointer[selectOutput]
	deleteSQL string
	// writeOutput is what a create or update returns: every column as
	// to_json(t.col), which renders any value, so a write that has run
	// never fails to render its row (a one-statement write has committed
	// by then, and a 503 "try again" would write it twice).
	writeOutput string
}

// selectOutput is what the statements select for the row they answer.
type selectOutput struct {
	output string // the output expressions of the select columns of alias t
	getSQL string
	// allJSON: every column is selected as to_json(t.col), because a
	// column came back as a type it was not when the resource was built.
	allJSON bool
}

func newTableRepository(table string, sel []*column, key *column, byName map[string]*column) *tableRepository {
	tr := &tableRepository{table: table, sel: sel, key: key, byName: byName}
	tr.out.Store(tr.newOutput(false))
	tr.writeOutput = selectList(sel, true)
	tr.deleteSQL = "DELETE FROM " + table + " AS t WHERE " + key.expr + " = $1" + key.cast
	return tr
}

func (tr *tableRepository) newOutput(allJSON bool) *selectOutput {
	o := &selectOutput{output: selectList(tr.sel, allJSON), allJSON: allJSON}
	o.getSQL = "SELECT " + o.output + " FROM " + tr.table + " t WHERE " + tr.key.expr + " = $1" + tr.key.cast
	return o
}

// checkZone selects every column as to_json from the start when the
// sessions' TimeZone is one Go cannot load (a POSIX string such as
// "UTC+3"), rather than failing the first read after every start with a
// 503 (retyped): timestamps then carry Postgres's own offsets.
func (tr *tableRepository) checkZone(ctx context.Context, d *db.DB) error {
	var zone string
	if err := d.Pool().QueryRow(ctx, `SELECT pg_catalog.current_setting('TimeZone')`).Scan(&zone); err != nil {
		return fmt.Errorf("read the session TimeZone: %w", err)
	}
	if _, err := time.LoadLocation(zone); err != nil {
		tr.out.Store(tr.newOutput(true))
	}
	return nil
}

// retyped handles a row that could not be rendered because a column's
// type changed after the resource was built (ALTER TABLE … TYPE while the
// server runs): from now on every column is selected as to_json(t.col),
// which renders any type as Postgres does, and the request answers 503 so
// that its client retries. Other errors pass through.
func (tr *tableRepository) retyped(err error) error {
	if !errors.Is(err, errUnrenderable) {
		return err
	}
	if cur := tr.out.Load(); !cur.allJSON && tr.out.CompareAndSwap(cur, tr.newOutput(true)) {
		slog.Warn("rest: a column changed type since the resource was built; selecting every column as to_json from now on",
			"table", tr.table, "error", err)
	}
	return problem.New(problem.KindUnavailable, "The table changed while the server ran; try again.").
		WithHeader("Retry-After", "1").WithCause(err)
}

// queryRow runs sql, whose result starts with the output expressions of
// the select columns, and renders its one row; pgx.ErrNoRows when none.
func (tr *tableRepository) queryRow(ctx context.Context, q db.Querier, sql string, args ...any) (json.RawMessage, error) {
	rows, err := q.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, pgx.ErrNoRows
	}
	raw, err := appendRow(make([]byte, 0, 64*len(tr.sel)), tr.sel, rows.FieldDescriptions(), rows.RawValues(), sessionZone(rows))
	if err != nil {
		return nil, tr.retyped(err)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return raw, nil
}

// keyText renders a parsed key as the text parameter the SQL casts.
func keyText(key any) string {
	switch k := key.(type) {
	case int64:
		return strconv.FormatInt(k, 10)
	case string:
		return k
	}
	return fmt.Sprint(key)
}

// Get reads one row by key; ErrNotFound when missing or hidden by RLS.
func (tr *tableRepository) Get(ctx context.Context, q db.Querier, key any) (json.RawMessage, error) {
	raw, err := tr.queryRow(ctx, q, tr.out.Load().getSQL, keyText(key))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, tr.keyError(err)
	}
	return raw, nil
}

// keyError turns a data exception (class 22) of a statement whose only
// input is the key into the 400 of a malformed key: the key text is not a
// value of the key column's type (a bad date, an out-of-range number).
func (tr *tableRepository) keyError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") {
		return badKey(tr.key.Name, "a valid "+tr.key.Type).WithCause(err)
	}
	return err
}

// valueError turns an error a type's input function raised for a value
// of a write into the 400 of a value Postgres could not read as its
// column's type: a syntax error (42601: tsvector, tsquery, ltree), a name
// too long (42622: an ltree label) or a size limit (54000: a tsvector
// word). The statement's own SQL is fixed, so such an error without a
// context comes from reading a value; one raised inside a function (a
// trigger's dynamic SQL) has a context and stays the server's error.
func valueError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Where == "" && pe.InternalQuery == "" &&
		(pe.Code == "42601" || pe.Code == "42622" || pe.Code == "54000") {
		return problem.New(problem.KindBadRequest, "A value has the wrong format or size for its column.").WithCause(err)
	}
	return err
}

// Delete deletes one row by key; ErrNotFound when no row was deleted.
func (tr *tableRepository) Delete(ctx context.Context, q db.Querier, key any) error {
	tag, err := q.Exec(ctx, tr.deleteSQL, keyText(key))
	if err != nil {
		return tr.keyError(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// sortedColumns returns the value names in a stable order, checked
// against the table (values from hooks are checked by the resource).
func (tr *tableRepository) sortedColumns(values Row) ([]*column, error) {
	cols := make([]*column, 0, len(values))
	for k := range values {
		c, ok := tr.byName[k]
		if !ok {
			return nil, fmt.Errorf("unknown column %q", k)
		}
		cols = append(cols, c)
	}
	sort.Slice(cols, func(i, j int) bool { return cols[i].Name < cols[j].Name })
	return cols, nil
}

func writeColumnList(b *strings.Builder, cols []*column) {
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.ident)
	}
}

const maxCachedStmts = 1024

// cached returns the statement for key, building and caching it once.
func (tr *tableRepository) cached(key string, build func() string) string {
	if v, ok := tr.stmts.Load(key); ok {
		return v.(string)
	}
	sql := build()
	if tr.nstmts.Load() < maxCachedStmts {
		if _, loaded := tr.stmts.LoadOrStore(key, sql); !loaded {
			tr.nstmts.Add(1)
		}
	}
	return sql
}

func stmtKey(op byte, cols []*column) string {
	var b strings.Builder
	b.WriteByte(op)
	for _, c := range cols {
		b.WriteByte(0)
		b.WriteString(c.Name)
	}
	return b.String()
}

// Create inserts through json_populate_record, so Postgres converts every
// JSON value to its column type with its own input rules.
func (tr *tableRepository) Create(ctx context.Context, q db.Querier, values Row) (json.RawMessage, error) {
	cols, err := tr.sortedColumns(values)
	if err != nil {
		return nil, err
	}
	sql := tr.cached(stmtKey('i', cols), func() string {
		var b strings.Builder
		b.WriteString("INSERT INTO ")
		b.WriteString(tr.table)
		b.WriteString(" AS t ")
		if len(cols) == 0 {
			b.WriteString("DEFAULT VALUES")
		} else {
			b.WriteByte('(')
			writeColumnList(&b, cols)
			b.WriteString(") SELECT ")
			writeColumnList(&b, cols)
			b.WriteString(" FROM json_populate_record(NULL::")
			b.WriteString(tr.table)
			b.WriteString(", $1::json)")
		}
		b.WriteString(" RETURNING ")
		b.WriteString(tr.writeOutput)
		return b.String()
	})
	var args []any
	if len(cols) > 0 {
		body, err := json.Marshal(values)
		if err != nil {
			return nil, err
		}
		args = append(args, string(body))
	}
	raw, err := tr.queryRow(ctx, q, sql, args...)
	return raw, valueError(err)
}

// Update sets the given columns through json_populate_record, like Create.
func (tr *tableRepository) Update(ctx context.Context, q db.Querier, key any, values Row) (json.RawMessage, error) {
	cols, err := tr.sortedColumns(values)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 { // nothing to set: answer with the current row
		return tr.Get(ctx, q, key)
	}
	sql := tr.cached(stmtKey('u', cols), func() string {
		var b strings.Builder
		b.WriteString("UPDATE ")
		b.WriteString(tr.table)
		b.WriteString(" AS t SET (")
		writeColumnList(&b, cols)
		b.WriteString(") = (SELECT ")
		writeColumnList(&b, cols)
		b.WriteString(" FROM json_populate_record(NULL::")
		b.WriteString(tr.table)
		b.WriteString(", $2::json)) WHERE ")
		b.WriteString(tr.key.expr)
		b.WriteString(" = $1")
		b.WriteString(tr.key.cast)
		b.WriteString(" RETURNING ")
		b.WriteString(tr.writeOutput)
		return b.String()
	})
	body, err := json.Marshal(values)
	if err != nil {
		return nil, err
	}
	raw, err := tr.queryRow(ctx, q, sql, keyText(key), string(body))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, valueError(err)
	}
	return raw, nil
}
