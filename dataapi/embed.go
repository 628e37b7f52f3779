package dataapi

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
)

// Kinds of relationship.
const (
	manyToOne   = iota // the parent holds the foreign key: one object
	oneToMany          // the child holds it: an array (one object when its key is the child's primary key)
	manyToMany         // through a junction table: an array
	computedRel        // a function of the parent's row returning rows of a table
)

// relationship is how an embedded resource joins its parent.
type relationship struct {
	kind   int
	target *relation
	fk     *foreignKey // the direct key; for manyToMany the junction's key to the parent
	fk2    *foreignKey // manyToMany: the junction's key to the target
	fn     *function   // computedRel
	toOne  bool
}

func (r relationship) names() []string {
	if r.fn != nil {
		return []string{r.fn.name}
	}
	out := append([]string{r.fk.name}, r.fk.cols...)
	if r.fk2 != nil {
		out = append(out, r.fk2.name, r.fk.from.name)
	}
	return out
}

func (r relationship) label() string {
	if r.fn != nil {
		return r.fn.name
	}
	if r.fk2 != nil {
		return r.fk.from.name
	}
	return r.fk.name
}

// relationships finds the relationships of parent named rel (a table of
// the parent's schema, or a foreign key's name or column on the parent),
// narrowed by hint.
func (c *catalogue) relationships(parent *relation, rel, hint string) []relationship {
	var out []relationship
	target := c.rels[parent.schema+"."+rel]
	for _, fk := range c.fks {
		switch {
		case target != nil && fk.from == parent && fk.to == target:
			out = append(out, relationship{kind: manyToOne, target: target, fk: fk, toOne: true})
		case target == nil && fk.from == parent && (fk.name == rel || len(fk.cols) == 1 && fk.cols[0] == rel):
			out = append(out, relationship{kind: manyToOne, target: fk.to, fk: fk, toOne: true})
		}
		if target != nil && fk.from == target && fk.to == parent {
			out = append(out, relationship{kind: oneToMany, target: target, fk: fk, toOne: sameSet(fk.cols, target.pk)})
		}
	}
	if target != nil {
		for _, j := range c.fks {
			if j.to != parent || j.from == parent || j.from == target {
				continue
			}
			for _, k := range c.fks {
				if k != j && k.name != j.name && k.from == j.from && k.to == target && subset(j.cols, j.from.pk) && subset(k.cols, k.from.pk) {
					out = append(out, relationship{kind: manyToMany, target: target, fk: j, fk2: k})
				}
			}
		}
	}
	// A computed relationship: a function named rel taking the parent's
	// row and returning rows (SETOF: to-many) or one row of a table.
	for _, f := range c.funcs[parent.schema+"."+rel] {
		if len(f.args) != 1 || c.relationOfType(f.args[0].typ, parent.schema) != parent {
			continue
		}
		if t := c.relationOfType(f.retType, parent.schema); t != nil {
			out = append(out, relationship{kind: computedRel, target: t, fn: f, toOne: !f.retSet || f.rows == 1})
		}
	}
	if hint != "" {
		var narrowed []relationship
		for _, r := range out {
			if slices.Contains(r.names(), hint) {
				narrowed = append(narrowed, r)
			}
		}
		out = narrowed
	}
	// A self-referencing key matches one hint both ways; PostgREST then
	// embeds the rows referencing the parent (one-to-many), as clients
	// expect of replies:posts!parent_id(*).
	if len(out) == 2 && out[0].fk == out[1].fk && out[0].fk.from == out[0].fk.to {
		for _, r := range out {
			if r.kind == oneToMany {
				return []relationship{r}
			}
		}
	}
	return out
}

// describe is the relationship as PostgREST details it when several
// match: its cardinality, the two relations, and the key with its
// columns.
func (r relationship) describe(parent *relation) map[string]string {
	cols := func(c []string) string { return "(" + strings.Join(c, ", ") + ")" }
	out := map[string]string{"embedding": parent.name + " with " + r.target.name}
	switch r.kind {
	case manyToOne:
		out["cardinality"] = "many-to-one"
		if sameSet(r.fk.cols, parent.pk) {
			out["cardinality"] = "one-to-one"
		}
		out["relationship"] = r.fk.name + " using " + parent.name + cols(r.fk.cols) + " and " + r.target.name + cols(r.fk.refCols)
	case oneToMany:
		out["cardinality"] = "one-to-many"
		if r.toOne {
			out["cardinality"] = "one-to-one"
		}
		out["relationship"] = r.fk.name + " using " + parent.name + cols(r.fk.refCols) + " and " + r.target.name + cols(r.fk.cols)
	case manyToMany:
		out["cardinality"] = "many-to-many"
		out["relationship"] = r.fk.from.name + " using " + r.fk.name + cols(r.fk.cols) + " and " + r.fk2.name + cols(r.fk2.cols)
	default:
		out["cardinality"] = "computed"
		out["relationship"] = r.fn.name
	}
	return out
}

// related lists the names of the relations parent has a foreign key
// relationship with, for PGRST200's "Perhaps you meant" hint.
func (c *catalogue) related(parent *relation) []string {
	seen := map[string]bool{}
	var out []string
	for _, fk := range c.fks {
		for _, r := range []*relation{fk.from, fk.to} {
			if (fk.from == parent || fk.to == parent) && r != parent && r.schema == parent.schema && !seen[r.name] {
				seen[r.name] = true
				out = append(out, r.name)
			}
		}
	}
	return out
}

func sameSet(a, b []string) bool {
	return len(a) == len(b) && subset(a, b)
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return len(a) > 0
}

// joinSQL is the condition tying child alias e to parent alias q.
func (b *builder) joinSQL(q, e string, r relationship) string {
	var parts []string
	switch r.kind {
	case manyToOne:
		for i, c := range r.fk.cols {
			parts = append(parts, e+"."+ident(r.fk.refCols[i])+" = "+q+"."+ident(c))
		}
	case oneToMany:
		for i, c := range r.fk.cols {
			parts = append(parts, e+"."+ident(c)+" = "+q+"."+ident(r.fk.refCols[i]))
		}
	case computedRel:
		return "true" // the function's argument is the parent's row
	case manyToMany:
		b.n++
		j := "_j" + strconv.Itoa(b.n)
		var on []string
		for i, c := range r.fk.cols {
			on = append(on, j+"."+ident(c)+" = "+q+"."+ident(r.fk.refCols[i]))
		}
		for i, c := range r.fk2.cols {
			on = append(on, j+"."+ident(c)+" = "+e+"."+ident(r.fk2.refCols[i]))
		}
		parts = append(parts, "exists (select 1 from "+pgx.Identifier{r.fk.from.schema, r.fk.from.name}.Sanitize()+" "+j+" where "+strings.Join(on, " and ")+")")
	}
	return strings.Join(parts, " and ")
}

// embedSQL renders an embedded resource of parent (alias q) as a
// subquery read as the caller (its own row-level security applies): the
// columns it adds to the parent with their keys (one for an embed, each
// selected column for a spread, none for an empty embed), and the
// condition !inner adds to the parent.
func (b *builder) embedSQL(q string, parent *relation, e *embedSpec, cond *conditions, name string) ([]string, []string, string, *Error) {
	if b.req == nil || parent == nil {
		return nil, nil, "", apiErr(http.StatusBadRequest, "PGRST200", "Could not find a relationship for '"+e.rel+"' in the schema cache").
			withDetails("Embedding is served on tables and views, not on function results.")
	}
	rels := b.req.cat.relationships(parent, e.rel, e.hint)
	switch len(rels) {
	case 0:
		using := ""
		if e.hint != "" {
			using = "' using the hint '" + e.hint
		}
		err := apiErr(http.StatusBadRequest, "PGRST200", "Could not find a relationship between '"+parent.name+"' and '"+e.rel+"' in the schema cache").
			withDetails("Searched for a foreign key relationship between '" + parent.name + "' and '" + e.rel + using + "' in the schema '" + parent.schema + "', but no matches were found.")
		if s := suggest(e.rel, b.req.cat.related(parent)); s != "" && s != e.rel {
			err.withHint("Perhaps you meant '" + s + "' instead of '" + e.rel + "'.")
		}
		return nil, nil, "", err
	case 1:
	default:
		var opts []string
		var details []map[string]string
		for _, r := range rels {
			opts = append(opts, "'"+r.target.name+"!"+r.label()+"'")
			details = append(details, r.describe(parent))
		}
		err := apiErr(http.StatusMultipleChoices, "PGRST201", "Could not embed because more than one relationship was found for '"+parent.name+"' and '"+e.rel+"'").
			withHint("Try changing '" + e.rel + "' to one of the following: " + strings.Join(opts, ", ") + ". Find the desired relationship in the 'details' key.")
		err.detailsJSON = details
		return nil, nil, "", err
	}
	r := rels[0]
	key := r.target.qualified()
	var allowed []string
	if decl := b.req.api.declared[key]; decl != nil {
		if p := authctx.Admit(b.req.auth, decl.Allow...); p != nil {
			return nil, nil, "", apiErr(http.StatusForbidden, "PGRST302", "'"+key+"' may not be embedded by this caller")
		}
		info, ok := declaredOp(decl, rest.OpList)
		if !ok || info.Permission != "" || info.Hooked {
			return nil, nil, "", apiErr(http.StatusBadRequest, "PGRST200", "'"+key+"' cannot be embedded").
				withDetails("It is a declared table whose list is not served, has a permission or runs hooks.")
		}
		allowed = allowedColumns(decl)
	}
	if cond == nil {
		cond = &conditions{limit: -1}
	}
	b.n++
	alias := "_e" + strconv.Itoa(b.n)
	if b.aliases == nil {
		b.aliases = map[string]*relation{}
	}
	b.aliases[alias] = r.target
	from := pgx.Identifier{r.target.schema, r.target.name}.Sanitize() + " " + alias
	if r.fn != nil {
		from = pgx.Identifier{r.fn.schema, r.fn.name}.Sanitize() + "(" + q + ") " + alias
	}
	if e := b.checkConditions(cond, allowed); e != nil {
		return nil, nil, "", e
	}
	join := b.joinSQL(q, alias, r)
	var childInner, keys []string
	sel := ""
	if e.spread && r.toOne {
		if b.hoisting == nil {
			b.hoisting = map[string]bool{}
		}
		b.hoisting[alias] = true
	}
	if len(e.items) > 0 {
		var perr *Error
		if sel, keys, childInner, perr = b.selectKeysSQL(alias, r.target, e.items, allowed, cond); perr != nil {
			return nil, nil, "", perr
		}
	}
	if e.spread && !r.toOne && b.aggregated[alias] {
		return nil, nil, "", apiErr(http.StatusBadRequest, "PGRST127", "Feature not implemented").
			withDetails("Aggregates are not implemented for one-to-many or many-to-many spreads.")
	}
	where := b.whereOn(alias, cond, append([]string{join}, childInner...))
	var inner string
	if e.inner {
		inner = "exists (select 1 from " + from + " where " + where + ")"
	}
	if sel == "" {
		return nil, nil, inner, nil
	}
	sub := "select " + sel + " from " + b.fromSQL(alias, from) + " where " + where + b.groupSQL(alias)
	if len(cond.order) > 0 {
		sub += " order by " + b.orderSQL(alias, cond.order)
	}
	if cond.limit >= 0 {
		sub += " limit " + strconv.Itoa(cond.limit)
	}
	if cond.offset > 0 {
		sub += " offset " + strconv.Itoa(cond.offset)
	}
	if e.spread {
		// Each column of the related rows becomes a column of the
		// parent: its value (to-one), or the array of its values
		// (to-many). Embeds and aggregates inside are columns like any.
		// A to-one spread's aggregates are applied here, over the
		// parent's rows grouped by its other columns, or lifted further
		// when the parent is a to-one spread too.
		// The subquery is joined to the parent once (LATERAL): at most
		// one row for a to-one spread, one row of arrays otherwise.
		// Its columns are named by position (c1, c2, …): a key selected
		// twice stays two columns, as in the parent's JSON.
		b.n++
		j := "_s" + strconv.Itoa(b.n)
		pos := make([]string, len(keys))
		for i := range keys {
			pos[i] = "c" + strconv.Itoa(i+1)
		}
		cols := "(" + strings.Join(pos, ", ") + ")"
		lat := "(select * from (" + sub + ") _x limit 1) " + j + cols
		if !r.toOne {
			arrays := make([]string, len(keys))
			for i, c := range pos {
				arrays[i] = "coalesce(json_agg(_x." + c + "), '[]')"
			}
			lat = "(select " + strings.Join(arrays, ", ") + " from (" + sub + ") _x" + cols + ") " + j + cols
		}
		if b.laterals == nil {
			b.laterals = map[string][]string{}
		}
		b.laterals[q] = append(b.laterals[q], "left join lateral "+lat+" on true")
		parts := make([]string, len(keys))
		for i, k := range keys {
			x := j + "." + pos[i]
			if h, ok := b.hoisted[alias][k]; ok && r.toOne {
				if b.hoisting[q] {
					b.hoist(q, k, h)
				} else {
					x = h.fn + "(" + x + ")"
					if h.cast != "" {
						x = "(" + x + ")::" + castSQL(h.cast)
					}
					if b.aggregated == nil {
						b.aggregated = map[string]bool{}
					}
					b.aggregated[q] = true
					parts[i] = x + " as " + ident(k)
					continue
				}
			}
			parts[i] = x + " as " + ident(k)
			if b.groupBy == nil {
				b.groupBy = map[string][]string{}
			}
			b.groupBy[q] = append(b.groupBy[q], x)
		}
		return parts, keys, inner, nil
	}
	if r.toOne {
		return []string{"(select to_json(_s) from (" + sub + ") _s limit 1) as " + ident(name)}, []string{name}, inner, nil
	}
	return []string{"(select coalesce(json_agg(_s), '[]') from (" + sub + ") _s) as " + ident(name)}, []string{name}, inner, nil
}
