package rest

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tablegate/tablegate/internal/inlist"
)

// Reserved list parameters; every other parameter filters a column.
const (
	paramLimit  = "limit"
	paramOrder  = "order"
	paramCursor = "cursor"
	paramCount  = "count"
)

// parseList parses and validates the query of a list. Every error is a
// 400 naming the parameter, never echoing its value.
func (r *Resource) parseList(q url.Values) (*ListQuery, error) { return r.parseListAs(q, "") }

// parseListAs is parseList for the caller named by bind (cursorBinding):
// a cursor opens only for the caller it was sealed to.
func (r *Resource) parseListAs(q url.Values, bind string) (*ListQuery, error) {
	lq := &ListQuery{Limit: r.defaultLimit, bind: bind}
	var cursor string
	var orderSet bool
	type canonFilter struct{ col, raw string }
	var canon []canonFilter
	for param, vals := range q {
		switch param {
		case paramLimit, paramOrder, paramCursor, paramCount:
			if len(vals) != 1 {
				return nil, badParam(param, "must be given once")
			}
		}
		switch param {
		case paramLimit:
			n, err := strconv.Atoi(vals[0])
			if err != nil || n < 1 {
				return nil, badParam(param, "must be a positive integer")
			}
			if n > r.maxLimit {
				return nil, badParam(param, "must not exceed "+strconv.Itoa(r.maxLimit))
			}
			lq.Limit = n
		case paramOrder:
			terms, err := r.parseOrder(vals[0])
			if err != nil {
				return nil, err
			}
			lq.Order, orderSet = terms, true
		case paramCursor:
			cursor = vals[0]
		case paramCount:
			if vals[0] != "exact" {
				return nil, badParam(param, "must be exact")
			}
			lq.Count = true
		default:
			c, ok := r.selName[param]
			if !ok {
				return nil, badParam(param, "is not a selected column (filters name selected columns; reserved: limit, order, cursor, count)")
			}
			if r.filterable != nil && !r.filterable[c.Name] {
				return nil, badParam(param, "is not a filterable column of this resource")
			}
			for _, v := range vals {
				f, err := parseFilter(param, v)
				if err != nil {
					return nil, err
				}
				if err := checkFilterType(param, c, f); err != nil {
					return nil, err
				}
				f.Column = c.Name
				lq.Filters = append(lq.Filters, f)
				canon = append(canon, canonFilter{param, v})
			}
		}
	}
	if !orderSet {
		lq.Order = nil
	}
	hasKey := false
	for _, o := range lq.Order {
		if o.Column == r.key.Name {
			hasKey = true
		}
	}
	if !hasKey { // the key breaks ties, in the direction of the last term
		kt := OrderTerm{Column: r.key.Name}
		if n := len(lq.Order); n > 0 {
			kt.Desc = lq.Order[n-1].Desc
		}
		lq.Order = append(lq.Order, kt)
	}
	// Filters in a stable order: SQL text and cursor binding do not
	// depend on map iteration.
	idx := make([]int, len(canon))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ca, cb := canon[idx[a]], canon[idx[b]]
		if ca.col != cb.col {
			return ca.col < cb.col
		}
		return ca.raw < cb.raw
	})
	fs := make([]Filter, len(idx))
	var sb strings.Builder
	for i, j := range idx {
		fs[i] = lq.Filters[j]
		sb.WriteString(url.QueryEscape(canon[j].col))
		sb.WriteByte('=')
		sb.WriteString(url.QueryEscape(canon[j].raw))
		sb.WriteByte('&')
	}
	if len(fs) > 0 {
		lq.Filters = fs
	}
	sb.WriteString("order=")
	for i, o := range lq.Order {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(url.QueryEscape(o.Column))
		if o.Desc {
			sb.WriteString(".desc")
		}
		if o.nullsFirst() {
			sb.WriteString(".nf")
		}
	}
	lq.canon = sb.String()
	if cursor != "" {
		after, err := r.openCursor(lq, cursor)
		if err != nil {
			return nil, err
		}
		lq.After = after
	}
	return lq, nil
}

// parseOrder parses order=col[.asc|.desc][.nullsfirst|.nullslast],...
func (r *Resource) parseOrder(s string) ([]OrderTerm, error) {
	if s == "" {
		return nil, badParam(paramOrder, "must name at least one column")
	}
	var terms []OrderTerm
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		bits := strings.Split(part, ".")
		c, ok := r.selName[bits[0]]
		if !ok {
			return nil, badParam(paramOrder, fmt.Sprintf("names %s, which is not a selected column (selected: %s)", quoteShort(bits[0]), strings.Join(r.selNames(), ", ")))
		}
		if r.filterable != nil && !r.filterable[c.Name] && c != r.key {
			return nil, badParam(paramOrder, "names a column this resource does not order by")
		}
		if seen[c.Name] {
			return nil, badParam(paramOrder, "names a column twice")
		}
		if !orderable(c) {
			return nil, badParam(paramOrder, "names a column whose type has no sort order")
		}
		seen[c.Name] = true
		t := OrderTerm{Column: c.Name}
		var dirSet, nullsSet bool
		for _, m := range bits[1:] {
			switch {
			case (m == "asc" || m == "desc") && !dirSet:
				t.Desc, dirSet = m == "desc", true
			case (m == "nullsfirst" || m == "nullslast") && !nullsSet:
				t.Nulls, nullsSet = NullsLast, true
				if m == "nullsfirst" {
					t.Nulls = NullsFirst
				}
			default:
				return nil, badParam(paramOrder, "takes col.asc|desc[.nullsfirst|.nullslast]")
			}
		}
		terms = append(terms, t)
	}
	return terms, nil
}

// quoteShort quotes a caller-supplied name for a problem detail, cut to
// 64 bytes so the echo stays short.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}

// selNames lists the selected column names in select order.
func (r *Resource) selNames() []string {
	names := make([]string, 0, len(r.sel))
	for _, c := range r.sel {
		names = append(names, c.Name)
	}
	return names
}

// MaxPatternBytes is the longest like or ilike pattern a list filter
// takes. Postgres matches, and for ilike lower-cases, the whole pattern
// again for every row it reads: a pattern of a megabyte held a connection
// for seconds on a few thousand rows, so that a few callers could take
// every pooled connection.
const MaxPatternBytes = 256

// parseFilter parses [not.]op.value for one column parameter.
func parseFilter(param, v string) (Filter, error) {
	var f Filter
	if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
		// No Postgres text can hold these; refuse before the database
		// answers with an encoding error.
		return f, badParam(param, "holds a NUL byte or invalid UTF-8, which no column value can hold")
	}
	if strings.HasPrefix(v, "not.") {
		f.Not, v = true, v[4:]
	}
	i := strings.IndexByte(v, '.')
	if i < 0 {
		return f, badParam(param, "must be operator.value, e.g. eq.1 (operators: eq, neq, gt, gte, lt, lte, in, is, like, ilike, each negatable with not.)")
	}
	op, arg := FilterOp(v[:i]), v[i+1:]
	switch op {
	case FilterEq, FilterNeq, FilterGt, FilterGte, FilterLt, FilterLte:
		f.Value = arg
	case FilterLike, FilterIlike:
		if len(arg) > MaxPatternBytes {
			return f, badParam(param, fmt.Sprintf("a like or ilike pattern may be at most %d bytes", MaxPatternBytes))
		}
		f.Value = strings.ReplaceAll(arg, "*", "%")
	case FilterIs:
		switch strings.ToLower(arg) {
		case "null", "true", "false", "unknown":
			f.Value = strings.ToLower(arg)
		default:
			return f, badParam(param, "is takes null, true, false or unknown")
		}
	case FilterIn:
		vals, ok := inlist.Parse(arg)
		if !ok {
			return f, badParam(param, `in takes a list in parentheses: in.(a,b,"c,d")`)
		}
		f.Values = vals
	default:
		return f, badParam(param, "unknown operator (operators: eq, neq, gt, gte, lt, lte, in, is, like, ilike, each negatable with not.)")
	}
	f.Op = op
	return f, nil
}

func orderable(c *column) bool { return c.comparable && !c.composite }

// checkFilterType refuses operators the column's type cannot take, so the
// caller gets a 400 instead of a database error.
func checkFilterType(param string, c *column, f Filter) error {
	switch f.Op {
	case FilterIs:
		if f.Value != "null" && c.TypeName != "bool" {
			return badParam(param, "is.true, is.false and is.unknown apply to boolean columns only; use is.null")
		}
		return nil
	case FilterLike, FilterIlike:
		return nil
	case FilterIn:
		if len(c.TypeName) > 0 && c.TypeName[0] == '_' {
			return badParam(param, "in does not apply to array columns; use eq with an array literal")
		}
	}
	if !c.comparable {
		return badParam(param, "this column's type supports only is, like and ilike")
	}
	return nil
}
