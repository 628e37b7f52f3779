package dataapi

import (
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// builder collects SQL text and its parameters. Identifiers are quoted
// with pgx.Identifier; every value a caller sends is a parameter.
type builder struct {
	args []any
	rel  *relation   // for column types (fts); nil for function results
	req  *request    // for embedding: the catalogue, declared tables, caller
	cond *conditions // the request's conditions (embedded resources' among them)
	n    int         // aliases drawn for embedded resources
	// aliases maps the aliases of embedded resources to their relations
	// (_t is rel).
	aliases map[string]*relation
	// aggregated marks the aliases whose select holds an aggregate;
	// groupBy are each alias's plain columns.
	aggregated map[string]bool
	groupBy    map[string][]string
	keys       map[string]string // JSON key → its parameter
	// hoisting marks the aliases of to-one spreads, whose aggregates
	// are applied by the parent (PostgREST's hoisting); hoisted holds,
	// by alias, the keys whose aggregate the parent applies.
	hoisting map[string]bool
	hoisted  map[string]map[string]hoistedAgg
	// laterals are, by alias, the lateral joins of its spread embeds:
	// each spread's subquery is joined once and its columns read from
	// it.
	laterals map[string][]string
}

// fromSQL is from (the relation of alias q) with q's spread joins.
func (b *builder) fromSQL(q, from string) string {
	if len(b.laterals[q]) == 0 {
		return from
	}
	return from + " " + strings.Join(b.laterals[q], " ")
}

// hoistedAgg is an aggregate lifted out of a to-one spread: its function
// and output cast.
type hoistedAgg struct{ fn, cast string }

// hoist records that the parent of alias q applies h to q's column key.
func (b *builder) hoist(q, key string, h hoistedAgg) {
	if b.hoisted == nil {
		b.hoisted = map[string]map[string]hoistedAgg{}
	}
	if b.hoisted[q] == nil {
		b.hoisted[q] = map[string]hoistedAgg{}
	}
	b.hoisted[q][key] = h
}

// groupSQL is the GROUP BY clause of alias q ("" without aggregates).
func (b *builder) groupSQL(q string) string {
	if !b.aggregated[q] || len(b.groupBy[q]) == 0 {
		return ""
	}
	return " group by " + strings.Join(b.groupBy[q], ", ")
}

// relOf returns the relation behind alias q, nil when unknown.
func (b *builder) relOf(q string) *relation {
	if r, ok := b.aliases[q]; ok {
		return r
	}
	if q == "_t" {
		return b.rel
	}
	return nil
}

// columnSQL renders column name of alias q: the column, or a computed
// column — a function of the exposed schemas taking the relation's row —
// called on the row.
func (b *builder) columnSQL(q, name string) string {
	if rel := b.relOf(q); rel != nil && b.req != nil {
		if _, ok := rel.column(name); !ok {
			if f := b.req.cat.computed(rel, name); f != nil {
				return pgx.Identifier{f.schema, f.name}.Sanitize() + "(" + q + ")"
			}
		}
	}
	return q + "." + ident(name)
}

func (b *builder) param(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// keyParam is the text parameter of a JSON key, one per distinct key, so
// that a path selected, grouped and ordered by is the same expression.
func (b *builder) keyParam(k string) string {
	if p, ok := b.keys[k]; ok {
		return p
	}
	if b.keys == nil {
		b.keys = map[string]string{}
	}
	p := b.param(k) + "::text"
	b.keys[k] = p
	return p
}

func ident(s string) string { return pgx.Identifier{s}.Sanitize() }

// castAliases maps the SQL spellings of common types to their catalogue
// names (a quoted "int" names no type).
var castAliases = map[string]string{
	"int": "int4", "integer": "int4", "bigint": "int8", "smallint": "int2", "float": "float8",
	"real": "float4", "double": "float8", "boolean": "bool", "decimal": "numeric",
}

func castSQL(c string) string {
	arr := strings.HasSuffix(c, "[]")
	c = strings.TrimSuffix(c, "[]")
	if a, ok := castAliases[strings.ToLower(c)]; ok {
		c = a
	}
	s := ident(strings.ToLower(c))
	if arr {
		s += "[]"
	}
	return s
}

func isInt(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// fieldSQL renders a field of relation alias q.
func (b *builder) fieldSQL(q string, f field) string {
	s := b.columnSQL(q, f.name)
	if len(f.path) > 0 {
		var sb strings.Builder
		sb.WriteString("(" + s)
		for _, st := range f.path {
			if st.text {
				sb.WriteString("->>")
			} else {
				sb.WriteString("->")
			}
			if isInt(st.key) {
				sb.WriteString(st.key)
			} else {
				sb.WriteString(b.keyParam(st.key))
			}
		}
		sb.WriteString(")")
		s = sb.String()
	}
	if f.cast != "" {
		s = "(" + s + ")::" + castSQL(f.cast)
	}
	return s
}

var comparisons = map[string]string{"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<=",
	"like": "like", "ilike": "ilike", "match": "~", "imatch": "~*",
	"cs": "@>", "cd": "<@", "ov": "&&", "sl": "<<", "sr": ">>", "nxr": "&<", "nxl": "&>", "adj": "-|-"}

var ftsFuncs = map[string]string{"fts": "to_tsquery", "plfts": "plainto_tsquery", "phfts": "phraseto_tsquery", "wfts": "websearch_to_tsquery"}

// arrayLiteral renders items as a Postgres array literal of quoted
// elements, read by the parameter's type on the server.
func arrayLiteral(items []string) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, it := range items {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('"')
		sb.WriteString(strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(it))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

// filterSQL renders one filter on relation alias q.
func (b *builder) filterSQL(q string, f filter) string {
	c := b.fieldSQL(q, f.field)
	var s string
	switch f.op {
	case "in":
		s = c + " = any(" + b.param(arrayLiteral(f.list)) + ")"
	case "is":
		switch f.value {
		case "null":
			s = c + " is null"
		case "not_null":
			s = c + " is not null"
		default:
			s = c + " is " + f.value // true, false, unknown: checked by the parser
		}
	case "isdistinct":
		s = c + " is distinct from " + b.param(f.value)
	case "fts", "plfts", "phfts", "wfts":
		doc := c
		tsv := false
		if b.rel != nil && len(f.field.path) == 0 && f.field.cast == "" {
			if col, ok := b.rel.column(f.field.name); ok {
				tsv = col.tsvector
			}
		}
		lang := ""
		if f.lang != "" {
			lang = b.param(f.lang) + "::regconfig, "
		}
		if !tsv {
			doc = "to_tsvector(" + lang + c + ")"
		}
		s = doc + " @@ " + ftsFuncs[f.op] + "(" + lang + b.param(f.value) + ")"
	default:
		v := f.value
		if f.op == "like" || f.op == "ilike" {
			v = strings.ReplaceAll(v, "*", "%")
		}
		if f.quant != "" {
			s = c + " " + comparisons[f.op] + " " + f.quant + "(" + b.param(v) + ")"
		} else {
			s = c + " " + comparisons[f.op] + " " + b.param(v)
		}
	}
	if f.negate {
		return "not (" + s + ")"
	}
	return s
}

// logicSQL renders a tree.
func (b *builder) logicSQL(q string, l *logic) string {
	var parts []string
	for _, f := range l.filters {
		parts = append(parts, b.filterSQL(q, f))
	}
	for _, c := range l.children {
		parts = append(parts, b.logicSQL(q, c))
	}
	sep := " and "
	if l.or {
		sep = " or "
	}
	s := "(" + strings.Join(parts, sep) + ")"
	if len(parts) == 0 {
		s = "true"
	}
	if l.negate {
		return "not " + s
	}
	return s
}

// orderSQL renders order terms.
func (b *builder) orderSQL(q string, terms []orderTerm) string {
	var parts []string
	for _, t := range terms {
		s := b.fieldSQL(q, t.field)
		if t.desc {
			s += " desc"
		} else {
			s += " asc"
		}
		switch t.nulls {
		case "first":
			s += " nulls first"
		case "last":
			s += " nulls last"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}
