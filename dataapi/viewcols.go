package dataapi

import (
	"strconv"
	"strings"
)

// A view's columns are traced to the table columns they show through the
// view's rewrite rule: pg_rewrite.ev_action is the view's query as a
// Postgres node tree, and each entry of its top-level target list names
// the relation and column it is read from (resorigtbl, resorigcol; zero
// for an expression). Postgres resolves the origin through subqueries
// and joins when the view is created, so a column of a join maps to the
// table it comes from.

// nodeToken is one token of a node tree (pg_strtok's rules): ( ) { } alone,
// otherwise a run of characters up to a blank or one of those, with a
// backslash escaping the next character.
type nodeToken struct {
	text    string
	escaped bool // a backslash appeared: never a field name or bracket
}

func nodeTokens(s string) []nodeToken {
	var out []nodeToken
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case ' ', '\n', '\t', '\r':
			i++
			continue
		case '(', ')', '{', '}':
			out = append(out, nodeToken{text: string(c)})
			i++
			continue
		}
		var sb strings.Builder
		esc := false
		for i < len(s) {
			c := s[i]
			if c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '(' || c == ')' || c == '{' || c == '}' {
				break
			}
			if c == '\\' && i+1 < len(s) {
				esc = true
				sb.WriteByte(s[i+1])
				i += 2
				continue
			}
			sb.WriteByte(c)
			i++
		}
		out = append(out, nodeToken{text: sb.String(), escaped: esc})
	}
	return out
}

// nodeValue is a parsed node tree value: a node (fields by name, with
// its type under ""), a list, or a scalar token.
type nodeValue struct {
	fields map[string]*nodeValue
	list   []*nodeValue
	token  string
}

type nodeParser struct {
	toks  []nodeToken
	pos   int
	depth int
}

// maxNodeDepth bounds the nesting read; a deeper tree is not traced.
const maxNodeDepth = 2000

func (p *nodeParser) open(t string) bool {
	return p.pos < len(p.toks) && !p.toks[p.pos].escaped && p.toks[p.pos].text == t
}

// value reads one value; ok is false on a malformed tree.
func (p *nodeParser) value() (*nodeValue, bool) {
	if p.pos >= len(p.toks) {
		return nil, false
	}
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > maxNodeDepth {
		return nil, false
	}
	switch {
	case p.open("{"):
		p.pos++
		if p.pos >= len(p.toks) {
			return nil, false
		}
		n := &nodeValue{fields: map[string]*nodeValue{"": {token: p.toks[p.pos].text}}}
		p.pos++
		for {
			if p.pos >= len(p.toks) {
				return nil, false
			}
			if p.open("}") {
				p.pos++
				return n, true
			}
			t := p.toks[p.pos]
			if t.escaped || !strings.HasPrefix(t.text, ":") {
				return nil, false
			}
			p.pos++
			// A field's value runs to the next field or the node's end
			// (a constant's value is a length and a bracketed byte list).
			var vals []*nodeValue
			for p.pos < len(p.toks) && !p.open("}") && (p.toks[p.pos].escaped || !strings.HasPrefix(p.toks[p.pos].text, ":")) {
				v, ok := p.value()
				if !ok {
					return nil, false
				}
				vals = append(vals, v)
			}
			switch len(vals) {
			case 0:
				n.fields[t.text] = &nodeValue{}
			case 1:
				n.fields[t.text] = vals[0]
			default:
				n.fields[t.text] = &nodeValue{list: vals}
			}
		}
	case p.open("("):
		p.pos++
		l := &nodeValue{list: []*nodeValue{}}
		for {
			if p.pos >= len(p.toks) {
				return nil, false
			}
			if p.open(")") {
				p.pos++
				return l, true
			}
			v, ok := p.value()
			if !ok {
				return nil, false
			}
			l.list = append(l.list, v)
		}
	case p.open(")"), p.open("}"):
		return nil, false
	default:
		t := p.toks[p.pos]
		p.pos++
		return &nodeValue{token: t.text}, true
	}
}

// columnOrigin is the relation (by oid) and column number a view column
// is read from.
type columnOrigin struct {
	rel    uint32
	attnum int
}

// viewOrigins reads a view's rewrite action (pg_rewrite.ev_action as
// text) and returns the origin of each of its columns by column number
// (resno); columns that are expressions are absent. A tree it cannot
// read yields nothing: the view then carries no relationship.
func viewOrigins(evAction string) map[int]columnOrigin {
	p := &nodeParser{toks: nodeTokens(evAction)}
	top, ok := p.value()
	if !ok || len(top.list) != 1 || top.list[0].fields == nil || top.list[0].fields[""].token != "QUERY" {
		return nil
	}
	tl := top.list[0].fields[":targetList"]
	if tl == nil {
		return nil
	}
	out := map[int]columnOrigin{}
	for _, te := range tl.list {
		if te.fields == nil || te.fields[""].token != "TARGETENTRY" {
			continue
		}
		tok := func(k string) string {
			if v := te.fields[k]; v != nil {
				return v.token
			}
			return ""
		}
		if tok(":resjunk") != "false" {
			continue
		}
		resno, err1 := strconv.Atoi(tok(":resno"))
		rel, err2 := strconv.ParseUint(tok(":resorigtbl"), 10, 32)
		col, err3 := strconv.Atoi(tok(":resorigcol"))
		if err1 != nil || err2 != nil || err3 != nil || rel == 0 || col <= 0 {
			continue
		}
		out[resno] = columnOrigin{rel: uint32(rel), attnum: col}
	}
	return out
}
