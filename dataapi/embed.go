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
// subquery read as the caller (its own row-level security applies), and
// the condition !inner adds to the parent. An empty embed renders no
// column.
func (b *builder) embedSQL(q string, parent *relation, e *embedSpec, cond *conditions, name string) ([]string, string, *Error) {
	if b.req == nil || parent == nil {
		return nil, "", apiErr(http.StatusBadRequest, "PGRST200", "Could not find a relationship for '"+e.rel+"' in the schema cache").
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
		return nil, "", err
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
		return nil, "", err
	}
	r := rels[0]
	key := r.target.qualified()
	var allowed []string
	if decl := b.req.api.declared[key]; decl != nil {
		if p := authctx.Admit(b.req.auth, decl.Allow...); p != nil {
			return nil, "", apiErr(http.StatusForbidden, "PGRST302", "'"+key+"' may not be embedded by this caller")
		}
		info, ok := declaredOp(decl, rest.OpList)
		if !ok || info.Permission != "" || info.Hooked {
			return nil, "", apiErr(http.StatusBadRequest, "PGRST200", "'"+key+"' cannot be embedded").
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
		return nil, "", e
	}
	join := b.joinSQL(q, alias, r)
	if e.spread {
		return b.spreadSQL(alias, from, join, r, e, cond, allowed)
	}
	var childInner []string
	sel := ""
	if len(e.items) > 0 {
		var perr *Error
		if sel, childInner, perr = b.selectListSQL(alias, r.target, e.items, allowed, cond); perr != nil {
			return nil, "", perr
		}
	}
	where := b.whereOn(alias, cond, append([]string{join}, childInner...))
	var inner string
	if e.inner {
		inner = "exists (select 1 from " + from + " where " + where + ")"
	}
	if sel == "" {
		return nil, inner, nil
	}
	sub := "select " + sel + " from " + from + " where " + where + b.groupSQL(alias)
	if len(cond.order) > 0 {
		sub += " order by " + b.orderSQL(alias, cond.order)
	}
	if cond.limit >= 0 {
		sub += " limit " + strconv.Itoa(cond.limit)
	}
	if cond.offset > 0 {
		sub += " offset " + strconv.Itoa(cond.offset)
	}
	if r.toOne {
		return []string{"(select to_json(_s) from (" + sub + ") _s limit 1) as " + ident(name)}, inner, nil
	}
	return []string{"(select coalesce(json_agg(_s), '[]') from (" + sub + ") _s) as " + ident(name)}, inner, nil
}

// spreadSQL renders a spread embed (...rel(cols)): each selected column
// of the related row becomes a column of the parent; of a to-many
// relationship, an array of its values.
func (b *builder) spreadSQL(alias, from, join string, r relationship, e *embedSpec, cond *conditions, allowed []string) ([]string, string, *Error) {
	type col struct {
		key string
		f   field
	}
	var cols []col
	for _, it := range e.items {
		switch {
		case it.embed != nil:
			return nil, "", parseErr("the select parameter", "an embed inside a spread embed is not supported by tablegate's data API yet")
		case it.agg != "":
			return nil, "", parseErr("the select parameter", "an aggregate inside a spread embed is not supported by tablegate's data API yet")
		case it.star:
			names := allowed
			if names == nil {
				for _, c := range r.target.columns {
					names = append(names, c.name)
				}
			}
			for _, n := range names {
				cols = append(cols, col{n, field{name: n}})
			}
		default:
			if e := b.checkColumn(it.field.name, allowed); e != nil {
				return nil, "", e
			}
			key := it.alias
			if key == "" {
				key = it.field.key()
			}
			cols = append(cols, col{key, it.field})
		}
	}
	if e.inner {
		return nil, "", parseErr("the select parameter", "!inner on a spread embed is not supported by tablegate's data API yet")
	}
	where := b.whereOn(alias, cond, []string{join})
	var parts []string
	for _, c := range cols {
		expr := b.fieldSQL(alias, c.f)
		if r.toOne {
			parts = append(parts, "(select "+expr+" from "+from+" where "+where+" limit 1) as "+ident(c.key))
			continue
		}
		sub := "select " + expr + " as v from " + from + " where " + where
		if len(cond.order) > 0 {
			sub += " order by " + b.orderSQL(alias, cond.order)
		}
		if cond.limit >= 0 {
			sub += " limit " + strconv.Itoa(cond.limit)
		}
		parts = append(parts, "(select coalesce(json_agg(_s.v), '[]') from ("+sub+") _s) as "+ident(c.key))
	}
	return parts, "", nil
}
