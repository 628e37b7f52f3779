package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tablegate/tablegate/db"
)

// sqlArgs collects bound parameters and hands out their placeholders.
type sqlArgs struct{ vals []any }

func (a *sqlArgs) add(v any) string {
	a.vals = append(a.vals, v)
	return "$" + strconv.Itoa(len(a.vals))
}

var (
	cmpSQL = map[FilterOp]string{FilterEq: " = ", FilterNeq: " <> ", FilterGt: " > ",
		FilterGte: " >= ", FilterLt: " < ", FilterLte: " <= "}
	isSQL = map[string]string{"null": " IS NULL", "true": " IS TRUE", "false": " IS FALSE", "unknown": " IS UNKNOWN"}
)

// where renders the filters (ANDed) and, when after is set, the keyset
// condition. Column names come from the introspected set; every value is
// a parameter cast from text to the column's type.
func (tr *tableRepository) where(b *strings.Builder, args *sqlArgs, lq *ListQuery, keyset bool) error {
	first := true
	and := func() {
		if first {
			b.WriteString(" WHERE ")
			first = false
		} else {
			b.WriteString(" AND ")
		}
	}
	for _, f := range lq.Filters {
		c, ok := tr.byName[f.Column]
		if !ok {
			return fmt.Errorf("unknown filter column %q", f.Column)
		}
		and()
		col := c.expr
		if f.Not {
			b.WriteString("NOT ")
		}
		b.WriteByte('(')
		switch f.Op {
		case FilterEq, FilterNeq, FilterGt, FilterGte, FilterLt, FilterLte:
			b.WriteString(col)
			b.WriteString(cmpSQL[f.Op])
			b.WriteString(args.add(f.Value))
			b.WriteString(c.cast)
		case FilterLike, FilterIlike:
			b.WriteString(col)
			if f.Op == FilterLike {
				b.WriteString("::text LIKE ")
			} else {
				b.WriteString("::text ILIKE ")
			}
			b.WriteString(args.add(f.Value))
			b.WriteString("::text")
		case FilterIn:
			b.WriteString(col)
			b.WriteString(" = ANY(")
			b.WriteString(args.add(f.Values))
			b.WriteString("::text[]")
			b.WriteString(c.cast[len("::text"):])
			b.WriteString("[])")
		case FilterIs:
			b.WriteString(col)
			b.WriteString(isSQL[f.Value])
		default:
			return fmt.Errorf("unknown filter operator %q", f.Op)
		}
		b.WriteByte(')')
	}
	if keyset && lq.After != nil {
		and()
		if err := tr.keyset(b, args, lq); err != nil {
			return err
		}
	}
	return nil
}

// keyset renders "after the cursor row" for the order terms:
// OR over i of (t1 = v1 AND … AND t(i-1) = v(i-1) AND ti after vi), with
// NULL placement handled per term. When every term is NOT NULL and sorts
// the same way, it is the row comparison (t1, …, tn) > (v1, …, vn).
func (tr *tableRepository) keyset(b *strings.Builder, args *sqlArgs, lq *ListQuery) error {
	cols := make([]*column, len(lq.Order))
	params := make([]string, len(lq.Order))
	simple := true
	for i, o := range lq.Order {
		c, ok := tr.byName[o.Column]
		if !ok {
			return fmt.Errorf("unknown order column %q", o.Column)
		}
		cols[i] = c
		v := lq.After[i]
		if v == nil {
			simple = false
			continue
		}
		params[i] = args.add(cursorText(v)) + c.cast
		if !c.NotNull && c != tr.key {
			simple = false
		}
		if o.Desc != lq.Order[0].Desc {
			simple = false
		}
	}
	if simple {
		op := " > "
		if lq.Order[0].Desc {
			op = " < "
		}
		b.WriteByte('(')
		for i, c := range cols {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(c.expr)
		}
		b.WriteString(")" + op + "(")
		b.WriteString(strings.Join(params, ","))
		b.WriteByte(')')
		return nil
	}
	var ors []string
	for i, o := range lq.Order {
		var conj []string
		for j := 0; j < i; j++ {
			col := cols[j].expr
			if lq.After[j] == nil {
				conj = append(conj, col+" IS NULL")
			} else {
				conj = append(conj, col+" = "+params[j])
			}
		}
		col := cols[i].expr
		var after string
		if lq.After[i] == nil {
			if !o.nullsFirst() {
				continue // nothing sorts after NULL when NULLs come last
			}
			after = col + " IS NOT NULL"
		} else {
			cmp := " > "
			if o.Desc {
				cmp = " < "
			}
			after = col + cmp + params[i]
			if !o.nullsFirst() && !cols[i].NotNull {
				after = "(" + after + " OR " + col + " IS NULL)"
			}
		}
		conj = append(conj, after)
		ors = append(ors, "("+strings.Join(conj, " AND ")+")")
	}
	if len(ors) == 0 {
		b.WriteString("FALSE")
		return nil
	}
	b.WriteString("(" + strings.Join(ors, " OR ") + ")")
	return nil
}

func cursorText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func (tr *tableRepository) orderBy(b *strings.Builder, lq *ListQuery) error {
	b.WriteString(" ORDER BY ")
	for i, o := range lq.Order {
		c, ok := tr.byName[o.Column]
		if !ok {
			return fmt.Errorf("unknown order column %q", o.Column)
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(c.expr)
		if o.Desc {
			b.WriteString(" DESC")
		} else {
			b.WriteString(" ASC")
		}
		if o.nullsFirst() {
			b.WriteString(" NULLS FIRST")
		} else {
			b.WriteString(" NULLS LAST")
		}
	}
	return nil
}

// List runs ONE statement: the page (limit+1 rows, to learn whether more
// follow) is read by an ordered, limited sub-select and aggregated with
// json_agg in Postgres, together with the order values of the limit-th row
// as text (for the cursor) and, with count=exact, the number of matching
// rows. The extra row is cut from the array in Go (one pass over its
// bytes, no decoding). Measured on a 50-row page: about half the time of
// one JSON object per row, and ~30x fewer allocations than decoding typed
// columns in Go (see json_bench_test.go).
//
// The aggregates take no ORDER BY of their own: Postgres feeds a plain
// aggregate the rows of a sub-select that has ORDER BY and LIMIT in that
// order (the sub-select cannot be flattened or run in parallel above its
// LIMIT, and the only join, the LATERAL, is a nested loop over it), and
// both aggregates read that one stream, so the cursor values always belong
// to the last item returned. The SQL standard does not promise this;
// PostgreSQL's documentation says it "will usually work" and PostgREST
// relies on it. The ordered form, json_agg(t.* ORDER BY …) plus the same
// for the cursor array, sorts the page twice more (PostgreSQL 15 sorts
// each ordered aggregate on its own): ~0.02 ms more per 50-row page, and
// 0.60–0.73 of the raw floor over HTTP against 0.71–0.76 (bench/BENCHMARKS.md).
// The cursor walks in list_test.go and hostile_test.go check the order.
func (tr *tableRepository) List(ctx context.Context, q db.Querier, lq *ListQuery) (*RawPage, error) {
	// The page size is written into the statement as an integer literal
	// (validated: 1..MaxLimit). As a parameter it made Postgres re-plan the
	// statement on every request (custom plans only; ~40% of the list's
	// database time); as a literal the cached generic plan is reused. The
	// price is one prepared statement per distinct page size and connection.
	if lq.Limit < 1 {
		return nil, fmt.Errorf("rest: list limit %d out of range", lq.Limit)
	}
	var order strings.Builder
	if err := tr.orderBy(&order, lq); err != nil {
		return nil, err
	}
	// The rows are aggregated as the sub-select's records (row_to_json's
	// form). An order column that is not selected (the key may not be) is
	// read by the sub-select too, so then the items are built from the
	// selected columns alone through a LATERAL.
	inSel := make(map[string]bool, len(tr.sel))
	for _, c := range tr.sel {
		inSel[c.Name] = true
	}
	var extra []*column
	for _, o := range lq.Order {
		if c := tr.byName[o.Column]; !inSel[c.Name] {
			extra = append(extra, c)
			inSel[c.Name] = true
		}
	}
	args := &sqlArgs{}
	limit := strconv.Itoa(lq.Limit)
	var b strings.Builder
	b.Grow(512)
	if len(extra) == 0 {
		b.WriteString("SELECT coalesce(json_agg(t.*")
	} else {
		b.WriteString("SELECT coalesce(json_agg(_tg_row.*")
	}
	// The order values of the limit-th row, each as text: a 1×k slice of
	// the aggregate of ARRAY[...] (empty when fewer rows).
	b.WriteString("), '[]'), (array_agg(ARRAY[")
	for i, o := range lq.Order {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("t.")
		b.WriteString(tr.byName[o.Column].ident)
		b.WriteString("::text")
	}
	b.WriteString("]))[")
	b.WriteString(limit)
	b.WriteByte(':')
	b.WriteString(limit)
	b.WriteByte(']')
	if lq.Count {
		b.WriteString(", (SELECT count(*) FROM ")
		b.WriteString(tr.table)
		b.WriteString(" t")
		if err := tr.where(&b, args, lq, false); err != nil {
			return nil, err
		}
		b.WriteByte(')')
	}
	b.WriteString(" FROM (SELECT ")
	for i, c := range tr.sel {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("t.")
		b.WriteString(c.ident)
	}
	for _, c := range extra {
		b.WriteString(",t.")
		b.WriteString(c.ident)
	}
	b.WriteString(" FROM ")
	b.WriteString(tr.table)
	b.WriteString(" t")
	if err := tr.where(&b, args, lq, true); err != nil {
		return nil, err
	}
	b.WriteString(order.String())
	b.WriteString(" LIMIT ")
	b.WriteString(strconv.Itoa(lq.Limit + 1))
	b.WriteString(") t")
	if len(extra) > 0 {
		b.WriteString(", LATERAL (SELECT ")
		for i, c := range tr.sel {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString("t.")
			b.WriteString(c.ident)
		}
		b.WriteString(") _tg_row")
	}

	var items []byte
	var last []*string
	var count int64
	dest := []any{&items, &last}
	if lq.Count {
		dest = append(dest, &count)
	}
	if err := q.QueryRow(ctx, b.String(), args.vals...).Scan(dest...); err != nil {
		return nil, err
	}
	page := &RawPage{ItemsJSON: items}
	if lq.Count {
		page.Count = &count
	}
	if cut, more := cutArray(items, lq.Limit); more {
		if len(last) != len(lq.Order) {
			return nil, fmt.Errorf("rest: list: %d cursor values for %d order terms", len(last), len(lq.Order))
		}
		page.ItemsJSON = cut
		page.Next = make([]any, len(last))
		for i, v := range last {
			if v != nil {
				page.Next[i] = *v
			}
		}
	}
	return page, nil
}

// cutArray returns the JSON array a cut to its first n elements (n ≥ 1),
// reusing a's bytes; ok is false when a has no more than n elements. One
// pass over the bytes up to the n-th element's end, tracking nesting and
// skipping each string with bytes.IndexByte; nothing is decoded.
func cutArray(a []byte, n int) (cut []byte, ok bool) {
	depth, k := 0, 0
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case '"':
			j := i + 1
			for {
				q := bytes.IndexByte(a[j:], '"')
				if q < 0 {
					return nil, false
				}
				j += q
				bs := 0 // an even run of backslashes before it: the closing quote
				for p := j - 1; p > i && a[p] == '\\'; p-- {
					bs++
				}
				if bs%2 == 0 {
					break
				}
				j++
			}
			i = j
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 1 {
				k++
				if k == n {
					a[i] = ']'
					return a[:i+1], true
				}
			}
		}
	}
	return nil, false
}
