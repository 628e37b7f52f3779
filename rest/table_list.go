package rest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/problem"
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
// follow) as the select columns' output expressions, followed by the text
// of each order column (the cursor is made of the limit-th row's), rendered
// to one JSON array in Go. With count=exact the page is joined to the count
// of matching rows, so that an empty page still carries it:
//
//	SELECT c.n, t.* FROM (SELECT count(*) FROM tbl t WHERE <filters>) c(n)
//	  LEFT JOIN LATERAL (SELECT true, <page>) t ON true
//
// The one-row count is the outer side of a nested loop (no other join
// method can run ON true), which returns the page in its order; the
// leading true tells a page row from the NULLs of an empty page.
func (tr *tableRepository) List(ctx context.Context, q db.Querier, lq *ListQuery) (*RawPage, error) {
	// The page size is written into the statement as an integer literal
	// (validated: 1..MaxLimit). As a parameter it made Postgres re-plan the
	// statement on every request (custom plans only; ~40% of the list's
	// database time); as a literal the cached generic plan is reused. The
	// price is one prepared statement per distinct page size and connection.
	if lq.Limit < 1 {
		return nil, fmt.Errorf("rest: list limit %d out of range", lq.Limit)
	}
	args := &sqlArgs{}
	var b strings.Builder
	b.Grow(512)
	skip := 0 // fields before the page's: the count and the marker
	if lq.Count {
		skip = 2
		b.WriteString("SELECT c.n, t.* FROM (SELECT count(*) FROM ")
		b.WriteString(tr.table)
		b.WriteString(" t")
		if err := tr.where(&b, args, lq, false); err != nil {
			return nil, err
		}
		b.WriteString(") c(n) LEFT JOIN LATERAL (SELECT true,")
	} else {
		b.WriteString("SELECT ")
	}
	out := tr.out.Load()
	b.WriteString(out.output)
	// The cursor carries each order column's text form. An integer, uuid
	// or text column that is selected anyway gives it from its own field
	// (orderText); any other is selected once more as ::text.
	from := make([]int, len(lq.Order)) // the select column giving the text, or -1
	extra := 0
	for i, o := range lq.Order {
		c, ok := tr.byName[o.Column]
		if !ok {
			return nil, fmt.Errorf("unknown order column %q", o.Column)
		}
		from[i] = -1
		if k := slices.Index(tr.sel, c); k >= 0 && !out.allJSON && textFromField(c.typeOID) {
			from[i] = k
			continue
		}
		b.WriteString(",t.")
		b.WriteString(c.ident)
		b.WriteString("::text")
		extra++
	}
	b.WriteString(" FROM ")
	b.WriteString(tr.table)
	b.WriteString(" t")
	if err := tr.where(&b, args, lq, true); err != nil {
		return nil, err
	}
	if err := tr.orderBy(&b, lq); err != nil {
		return nil, err
	}
	b.WriteString(" LIMIT ")
	b.WriteString(strconv.Itoa(lq.Limit + 1))
	if lq.Count {
		b.WriteString(") t ON true")
	}

	rows, err := q.Query(ctx, b.String(), args.vals...)
	if err != nil {
		return nil, filterValueError(err, lq)
	}
	defer rows.Close()
	zone := sessionZone(rows)
	page := &RawPage{}
	items := append(make([]byte, 0, int(tr.rowBytes.Load()+1)*lq.Limit+2), '[')
	var last []any // the order values of the limit-th row
	n := 0
	for rows.Next() {
		fds, vals := rows.FieldDescriptions(), rows.RawValues()
		if len(vals) != skip+len(tr.sel)+extra {
			return nil, fmt.Errorf("rest: list: %d fields", len(vals))
		}
		if lq.Count {
			if page.Count == nil {
				count, err := int8Value(&fds[0], vals[0])
				if err != nil {
					return nil, fmt.Errorf("rest: list count: %w", err)
				}
				page.Count = &count
			}
			if vals[1] == nil {
				break // an empty page: the count alone
			}
		}
		if n == lq.Limit { // the extra row: more follow
			page.Next = last
			break
		}
		if n > 0 {
			items = append(items, ',')
		}
		if items, err = appendRow(items, tr.sel, fds[skip:], vals[skip:], zone); err != nil {
			return nil, tr.retyped(err)
		}
		if n++; n == lq.Limit {
			if last, err = orderValues(from, fds[skip:], vals[skip:], len(tr.sel)); err != nil {
				return nil, tr.retyped(err)
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, filterValueError(err, lq)
	}
	page.ItemsJSON = append(items, ']')
	// Size the next page's buffer after the widest rows so far (up to 2 KiB
	// a row), so that it need not grow.
	if n > 0 && int64(len(items)/n) > tr.rowBytes.Load() {
		tr.rowBytes.Store(min(int64(len(items)/n), 2048))
	}
	return page, nil
}

// filterValueError turns a data exception (class 22) of a list that takes
// filter or cursor values into a 400: those values are cast to their
// columns' types, so a date out of range is the caller's (it answered 422
// "A value is out of range or invalid for its column", naming nothing). A
// list without them, and an error raised inside a function (a policy's
// helper: it has a context), stay the database's.
func filterValueError(err error, lq *ListQuery) error {
	valued := lq.After != nil
	for _, f := range lq.Filters {
		valued = valued || f.Op != FilterIs // is.null, is.true: no value to blame
	}
	if !valued {
		return err
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && strings.HasPrefix(pe.Code, "22") && pe.Where == "" && pe.InternalQuery == "" {
		return problem.New(problem.KindBadRequest, "A filter value is not valid for its column's type.").WithCause(err)
	}
	return err
}

// textFromField reports whether a column of this type gives its ::text
// form from its own selected field (orderText): integers, uuid, text and
// varchar, not a domain over them (its oid is its own).
func textFromField(typeOID uint32) bool {
	switch typeOID {
	case oidInt2, oidInt4, oidInt8, oidUUID, oidText, oidVarchar:
		return true
	}
	return false
}

// orderValues returns the order values of one row for its cursor: for
// each order column, the text of select field from[i], or else of the next
// of the ::text fields that follow the nsel select fields; nil for NULL.
func orderValues(from []int, fds []pgconn.FieldDescription, vals [][]byte, nsel int) ([]any, error) {
	last := make([]any, len(from))
	next := nsel
	for i, k := range from {
		if k < 0 {
			if v := vals[next]; v != nil {
				last[i] = string(v)
			}
			next++
			continue
		}
		if vals[k] == nil {
			continue
		}
		t, err := orderText(&fds[k], vals[k])
		if err != nil {
			return nil, err
		}
		last[i] = t
	}
	return last, nil
}

// orderText renders a field of a textFromField column as its ::text form
// would read: the decimal integer, the lower-case hyphenated uuid, the
// text itself. A field of another type (the column changed type while the
// server ran) is errUnrenderable.
func orderText(fd *pgconn.FieldDescription, v []byte) (string, error) {
	text := fd.Format == pgx.TextFormatCode
	switch fd.DataTypeOID {
	case oidText, oidVarchar:
		return string(v), nil
	case oidInt2, oidInt4, oidInt8:
		if text {
			return string(v), nil
		}
		if b, err := appendValue(nil, fd, v, nil); err == nil {
			return string(b), nil
		}
	case oidUUID:
		if text {
			return string(v), nil
		}
		if len(v) == 16 {
			u := appendUUID(nil, v)
			return string(u[1 : len(u)-1]), nil
		}
	}
	return "", fmt.Errorf("%w: order column of type oid %d", errUnrenderable, fd.DataTypeOID)
}
