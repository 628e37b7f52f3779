package dataapi

import (
	"regexp"
	"strconv"
	"strings"
)

// field is a column reference with an optional JSON path and cast:
// data->a->>b::text.
type field struct {
	name string
	path []pathStep
	cast string
}

type pathStep struct {
	text bool // ->> (text) rather than -> (json)
	key  string
}

// key is the JSON key PostgREST gives a selected field without alias: the
// last JSON path key, else the column name.
func (f field) key() string {
	if len(f.path) > 0 {
		return f.path[len(f.path)-1].key
	}
	return f.name
}

// selectItem is one element of select=.
type selectItem struct {
	alias string
	star  bool
	field field
	embed *embedSpec
	// agg is an aggregate (count, sum, avg, min, max) of field, or of the
	// rows for count() alone; aggCast casts its result.
	agg, aggCast string
}

var aggregateItem = regexp.MustCompile(`^(?:(.+)\.)?(count|sum|avg|min|max)\(\)(?:::([A-Za-z_][A-Za-z0-9_]*))?$`)

// embedSpec is an embedded resource of select=: alias:rel!hint!inner(...).
type embedSpec struct {
	rel    string
	hint   string
	inner  bool
	spread bool
	items  []selectItem
}

// filter is one col=[not.]op.value condition.
type filter struct {
	field  field
	negate bool
	op     string
	quant  string // "any", "all" or ""
	lang   string // fts language
	value  string
	list   []string // in
}

// logic is a boolean tree: and/or of filters and sub-trees.
type logic struct {
	or       bool
	negate   bool
	filters  []filter
	children []*logic
}

// orderTerm is one term of order=.
type orderTerm struct {
	field field
	desc  bool
	nulls string // "first", "last" or ""
}

var castName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[\])?$`)

// Bounds on what one query string may ask for: each level of nesting is
// parsed again (quadratic work) and Postgres answers a too deep or too
// wide statement with a 500-class error (54001, 54011), so both are
// refused before any SQL is built.
const (
	maxNesting     = 32   // parentheses in select= and or=/and=
	maxPathSteps   = 64   // JSON path steps of one field
	maxSelectItems = 1000 // items of one select list level
)

// tooDeep reports whether s nests parentheses (outside double quotes)
// deeper than maxNesting.
func tooDeep(s string) bool {
	depth, quoted := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
			if depth > maxNesting {
				return true
			}
		case c == ')':
			depth--
		}
	}
	return false
}

// splitTop splits s at sep outside parentheses and double quotes.
func splitTop(s string, sep byte) ([]string, bool) {
	var out []string
	depth, start, quoted := 0, 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			i++
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, false
			}
		case c == sep && depth == 0:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if depth != 0 || quoted {
		return nil, false
	}
	return append(out, s[start:]), true
}

// unquote strips PostgREST's double quotes from a name or value.
func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
		return strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(s)
	}
	return s
}

// parseField reads name[->key...][::cast]; cast only when allowCast.
func parseField(s string, allowCast bool) (field, bool) {
	var f field
	s = strings.TrimSpace(s)
	if allowCast {
		if i := strings.LastIndex(s, "::"); i > 0 && !strings.Contains(s[i:], `"`) {
			c := s[i+2:]
			if !castName.MatchString(c) {
				return f, false
			}
			f.cast, s = c, s[:i]
		}
	}
	// The column name ends at the first arrow outside quotes.
	name := s
	rest := ""
	if strings.HasPrefix(s, `"`) {
		end := strings.Index(s[1:], `"`)
		if end < 0 {
			return f, false
		}
		name, rest = s[:end+2], s[end+2:]
	} else if i := strings.Index(s, "->"); i >= 0 {
		name, rest = s[:i], s[i:]
	}
	f.name = unquote(name)
	if f.name == "" {
		return f, false
	}
	for rest != "" {
		var st pathStep
		switch {
		case strings.HasPrefix(rest, "->>"):
			st.text, rest = true, rest[3:]
		case strings.HasPrefix(rest, "->"):
			rest = rest[2:]
		default:
			return f, false
		}
		end := strings.Index(rest, "->")
		if end < 0 {
			end = len(rest)
		}
		st.key, rest = unquote(rest[:end]), rest[end:]
		if st.key == "" {
			return f, false
		}
		f.path = append(f.path, st)
		if len(f.path) > maxPathSteps {
			return f, false
		}
	}
	return f, true
}

// parseSelect reads select=.
func parseSelect(s string) ([]selectItem, *Error) {
	if strings.TrimSpace(s) == "" {
		return []selectItem{{star: true}}, nil
	}
	if tooDeep(s) {
		return nil, parseErr("the select parameter", "select nests deeper than "+strconv.Itoa(maxNesting)+" levels")
	}
	parts, ok := splitTop(s, ',')
	if !ok {
		return nil, parseErr("the select parameter", "unbalanced parentheses or quotes in select="+s)
	}
	if len(parts) > maxSelectItems {
		return nil, parseErr("the select parameter", "more than "+strconv.Itoa(maxSelectItems)+" items in one select list")
	}
	var out []selectItem
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, parseErr("the select parameter", "an empty item in select")
		}
		var it selectItem
		// An alias ends at the first single colon outside quotes and parens.
		if i := aliasColon(p); i > 0 {
			it.alias, p = unquote(strings.TrimSpace(p[:i])), strings.TrimSpace(p[i+1:])
		}
		if p == "*" {
			it.star = true
			out = append(out, it)
			continue
		}
		if m := aggregateItem.FindStringSubmatch(p); m != nil && (m[1] != "" || m[2] == "count") {
			it.agg, it.aggCast = m[2], m[3]
			if m[1] != "" {
				f, ok := parseField(m[1], true)
				if !ok {
					return nil, parseErr("the select parameter", "cannot read "+strconv.Quote(p))
				}
				it.field = f
			}
			out = append(out, it)
			continue
		}
		if strings.HasSuffix(p, ")") && strings.Contains(p, "(") {
			open := strings.IndexByte(p, '(')
			head, inner := p[:open], p[open+1:len(p)-1]
			e := &embedSpec{}
			if strings.HasPrefix(head, "...") {
				e.spread, head = true, head[3:]
			}
			segs := strings.Split(head, "!")
			e.rel = unquote(segs[0])
			for _, h := range segs[1:] {
				switch h {
				case "inner":
					e.inner = true
				case "left":
				default:
					e.hint = h
				}
			}
			if e.rel == "" {
				return nil, parseErr("the select parameter", "an embedded resource without a name")
			}
			items, perr := parseSelect(inner)
			if perr != nil {
				return nil, perr
			}
			if strings.TrimSpace(inner) == "" {
				items = nil
			}
			e.items = items
			it.embed = e
			out = append(out, it)
			continue
		}
		f, ok := parseField(p, true)
		if !ok {
			return nil, parseErr("the select parameter", "cannot read "+strconv.Quote(p))
		}
		it.field = f
		out = append(out, it)
	}
	return out, nil
}

func aliasColon(p string) int {
	quoted, depth := false, 0
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ':' && depth == 0:
			if i+1 < len(p) && p[i+1] == ':' {
				return -1 // a cast comes first: no alias
			}
			return i
		}
	}
	return -1
}

var filterOperators = map[string]bool{
	"eq": true, "neq": true, "gt": true, "gte": true, "lt": true, "lte": true, "like": true, "ilike": true,
	"match": true, "imatch": true, "in": true, "is": true, "isdistinct": true, "fts": true, "plfts": true,
	"phfts": true, "wfts": true, "cs": true, "cd": true, "ov": true, "sl": true, "sr": true, "nxr": true,
	"nxl": true, "adj": true,
}

// quantifiable operators take (any) and (all).
var quantifiable = map[string]bool{"eq": true, "neq": true, "gt": true, "gte": true, "lt": true, "lte": true,
	"like": true, "ilike": true, "match": true, "imatch": true}

// parseFilterValue reads [not.]op[(any|all)|(lang)].value for column f.
func parseFilterValue(f field, v string) (filter, *Error) {
	flt := filter{field: f}
	if strings.HasPrefix(v, "not.") {
		flt.negate, v = true, v[4:]
	}
	op, val, ok := strings.Cut(v, ".")
	if !ok {
		return flt, parseErr("the filter "+f.name, "expected \"operator.value\" as in eq.1, got "+strconv.Quote(v))
	}
	if i := strings.IndexByte(op, '('); i > 0 && strings.HasSuffix(op, ")") {
		mod := op[i+1 : len(op)-1]
		op = op[:i]
		switch {
		case (mod == "any" || mod == "all") && quantifiable[op]:
			flt.quant = mod
		case strings.HasSuffix(op, "fts") && castName.MatchString(mod):
			flt.lang = mod
		default:
			return flt, parseErr("the filter "+f.name, "the modifier ("+mod+") does not apply to "+op)
		}
	}
	if !filterOperators[op] {
		return flt, parseErr("the filter "+f.name, "unknown operator "+strconv.Quote(op))
	}
	flt.op, flt.value = op, val
	switch op {
	case "in":
		if !strings.HasPrefix(val, "(") || !strings.HasSuffix(val, ")") {
			return flt, parseErr("the filter "+f.name, "in takes a list in parentheses: in.(a,b)")
		}
		inner := val[1 : len(val)-1]
		if strings.TrimSpace(inner) != "" {
			items, ok := splitTop(inner, ',')
			if !ok {
				return flt, parseErr("the filter "+f.name, "unbalanced quotes in the in list")
			}
			for _, it := range items {
				flt.list = append(flt.list, unquote(strings.TrimSpace(it)))
			}
		}
	case "is":
		switch strings.ToLower(val) {
		case "null", "not_null", "true", "false", "unknown":
			flt.value = strings.ToLower(val)
		default:
			return flt, parseErr("the filter "+f.name, "is takes null, not_null, true, false or unknown")
		}
	}
	if flt.quant != "" && !(strings.HasPrefix(val, "{") && strings.HasSuffix(val, "}")) {
		return flt, parseErr("the filter "+f.name, "("+flt.quant+") takes a list in braces: {a,b}")
	}
	return flt, nil
}

// parseLogic reads the value of or=/and= ("(a.eq.1,b.gt.2)").
func parseLogic(or, negate bool, v string) (*logic, *Error) {
	if !strings.HasPrefix(v, "(") || !strings.HasSuffix(v, ")") {
		return nil, parseErr("the logic tree", "expected a list in parentheses, as in or=(a.eq.1,b.eq.2)")
	}
	if tooDeep(v) {
		return nil, parseErr("the logic tree", "or/and nest deeper than "+strconv.Itoa(maxNesting)+" levels")
	}
	items, ok := splitTop(v[1:len(v)-1], ',')
	if !ok {
		return nil, parseErr("the logic tree", "unbalanced parentheses or quotes")
	}
	l := &logic{or: or, negate: negate}
	for _, it := range items {
		it = strings.TrimSpace(it)
		neg := false
		if strings.HasPrefix(it, "not.") && (strings.HasPrefix(it[4:], "and(") || strings.HasPrefix(it[4:], "or(")) {
			neg, it = true, it[4:]
		}
		switch {
		case strings.HasPrefix(it, "and("):
			c, err := parseLogic(false, neg, it[3:])
			if err != nil {
				return nil, err
			}
			l.children = append(l.children, c)
		case strings.HasPrefix(it, "or("):
			c, err := parseLogic(true, neg, it[2:])
			if err != nil {
				return nil, err
			}
			l.children = append(l.children, c)
		default:
			col, rest, ok := cutField(it)
			if !ok {
				return nil, parseErr("the logic tree", "expected column.operator.value, got "+strconv.Quote(it))
			}
			f, ok := parseField(col, false)
			if !ok {
				return nil, parseErr("the logic tree", "cannot read the column "+strconv.Quote(col))
			}
			flt, perr := parseFilterValue(f, rest)
			if perr != nil {
				return nil, perr
			}
			if flt.op != "in" && flt.quant == "" {
				flt.value = unquote(flt.value)
			}
			l.filters = append(l.filters, flt)
		}
	}
	return l, nil
}

// cutField splits "col.op.value" (col may be quoted or a JSON path whose
// keys hold no dots).
func cutField(s string) (string, string, bool) {
	if strings.HasPrefix(s, `"`) {
		end := strings.Index(s[1:], `"`)
		if end < 0 {
			return "", "", false
		}
		i := end + 2
		// a JSON path may follow the quoted name
		j := strings.IndexByte(s[i:], '.')
		if j < 0 {
			return "", "", false
		}
		return s[:i+j], s[i+j+1:], true
	}
	return strings.Cut(s, ".")
}

// parseOrder reads order=.
func parseOrder(s string) ([]orderTerm, *Error) {
	parts, ok := splitTop(s, ',')
	if !ok {
		return nil, parseErr("the order parameter", "unbalanced quotes")
	}
	var out []orderTerm
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		segs := strings.Split(p, ".")
		t := orderTerm{}
		n := len(segs)
		for n > 1 {
			switch segs[n-1] {
			case "asc":
			case "desc":
				t.desc = true
			case "nullsfirst":
				t.nulls = "first"
			case "nullslast":
				t.nulls = "last"
			default:
				goto done
			}
			n--
		}
	done:
		f, ok := parseField(strings.Join(segs[:n], "."), false)
		if !ok {
			return nil, parseErr("the order parameter", "cannot read "+strconv.Quote(p))
		}
		t.field = f
		out = append(out, t)
	}
	return out, nil
}
