package dataapi

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	suggestpkg "github.com/tablegate/tablegate/internal/suggest"
)

// relation is a table or view of an exposed schema, as read from the
// catalogue when the data API is built.
type relation struct {
	schema, name string
	kind         byte // r, p, v, m, f
	rls          bool
	columns      []column
	colIndex     map[string]int
	pk           []string
}

type column struct {
	name     string
	typ      string // format_type
	tsvector bool
	array    bool
}

func (r *relation) column(name string) (column, bool) {
	i, ok := r.colIndex[name]
	if !ok {
		return column{}, false
	}
	return r.columns[i], true
}

func (r *relation) qualified() string { return r.schema + "." + r.name }

// function is a function of an exposed schema callable by /rpc.
type function struct {
	oid          uint32
	schema, name string
	args         []funcArg // input arguments in order
	retSet       bool
	retType      string // format_type of the return type
	retKind      byte   // 'b' base, 'c' composite, 'v' void, 'p' pseudo (record), 'd' domain, 'e' enum, 'r' range
	volatile     byte
	rows         float32 // prorows: ROWS 1 marks a SETOF computed relationship to-one
}

type funcArg struct {
	name       string
	typ        string
	array      bool
	hasDefault bool
}

// catalogue holds the exposed relations and functions.
type catalogue struct {
	rels  map[string]*relation   // "schema.name"
	funcs map[string][]*function // "schema.name", overloads
	fks   []*foreignKey
}

// foreignKey is a foreign key between two exposed tables.
type foreignKey struct {
	name          string
	from, to      *relation
	cols, refCols []string
}

// foreignKeysSQL reads foreign keys (name, table, referenced table, their
// columns in order); the callers add which ones and the order.
const foreignKeysSQL = `select c.conname, ns.nspname || '.' || cs.relname, nt.nspname || '.' || ct.relname,
	  array(select a.attname::text from unnest(c.conkey) with ordinality k(n, o) join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.n order by k.o),
	  array(select a.attname::text from unnest(c.confkey) with ordinality k(n, o) join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.n order by k.o)
	from pg_constraint c
	join pg_class cs on cs.oid = c.conrelid join pg_namespace ns on ns.oid = cs.relnamespace
	join pg_class ct on ct.oid = c.confrelid join pg_namespace nt on nt.oid = ct.relnamespace`

func loadCatalogue(ctx context.Context, pool *pgxpool.Pool, schemas []string) (*catalogue, error) {
	c := &catalogue{rels: map[string]*relation{}, funcs: map[string][]*function{}}
	rows, err := pool.Query(ctx, `select n.nspname, c.relname, c.relkind::text, c.relrowsecurity,
	  a.attname, format_type(a.atttypid, a.atttypmod), a.atttypid = 'tsvector'::regtype, t.typcategory = 'A',
	  coalesce((select array_agg(pa.attname order by k.ord) from pg_constraint pc
	    cross join unnest(pc.conkey) with ordinality k(attnum, ord)
	    join pg_attribute pa on pa.attrelid = pc.conrelid and pa.attnum = k.attnum
	    where pc.conrelid = c.oid and pc.contype = 'p'), '{}')
	from pg_class c join pg_namespace n on n.oid = c.relnamespace
	join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
	join pg_type t on t.oid = a.atttypid
	where n.nspname = any($1) and c.relkind in ('r','p','v','m','f')
	order by n.nspname, c.relname, a.attnum`, schemas)
	if err != nil {
		return nil, fmt.Errorf("dataapi: read tables: %w", err)
	}
	for rows.Next() {
		var schema, name, kind, col, typ string
		var rls, tsv, arr bool
		var pk []string
		if err := rows.Scan(&schema, &name, &kind, &rls, &col, &typ, &tsv, &arr, &pk); err != nil {
			rows.Close()
			return nil, fmt.Errorf("dataapi: read tables: %w", err)
		}
		key := schema + "." + name
		r := c.rels[key]
		if r == nil {
			r = &relation{schema: schema, name: name, kind: kind[0], rls: rls, colIndex: map[string]int{}, pk: pk}
			c.rels[key] = r
		}
		r.colIndex[col] = len(r.columns)
		r.columns = append(r.columns, column{name: col, typ: typ, tsvector: tsv, array: arr})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("dataapi: read tables: %w", err)
	}
	krows, err := pool.Query(ctx, foreignKeysSQL+`
	where c.contype = 'f' and ns.nspname = any($1) and nt.nspname = any($1)
	order by c.conname`, schemas)
	if err != nil {
		return nil, fmt.Errorf("dataapi: read foreign keys: %w", err)
	}
	for krows.Next() {
		var fk foreignKey
		var from, to string
		if err := krows.Scan(&fk.name, &from, &to, &fk.cols, &fk.refCols); err != nil {
			krows.Close()
			return nil, fmt.Errorf("dataapi: read foreign keys: %w", err)
		}
		fk.from, fk.to = c.rels[from], c.rels[to]
		if fk.from != nil && fk.to != nil {
			c.fks = append(c.fks, &fk)
		}
	}
	krows.Close()
	if err := krows.Err(); err != nil {
		return nil, fmt.Errorf("dataapi: read foreign keys: %w", err)
	}
	if err := c.viewKeys(ctx, pool, schemas); err != nil {
		return nil, err
	}
	frows, err := pool.Query(ctx, `select p.oid, p.prorows, n.nspname, p.proname, p.proretset, format_type(p.prorettype, null), t.typtype::text,
	  p.provolatile::text, p.pronargs, p.pronargdefaults,
	  coalesce(p.proargnames, '{}'), coalesce(p.proargmodes::text[], '{}'),
	  array(select format_type(x, null) from unnest(p.proargtypes) x),
	  array(select coalesce(tt.typcategory = 'A', false) from unnest(p.proargtypes) with ordinality u(x, o) join pg_type tt on tt.oid = u.x order by u.o)
	from pg_proc p join pg_namespace n on n.oid = p.pronamespace join pg_type t on t.oid = p.prorettype
	where n.nspname = any($1) and p.prokind = 'f'`, schemas)
	if err != nil {
		return nil, fmt.Errorf("dataapi: read functions: %w", err)
	}
	defer frows.Close()
	for frows.Next() {
		var f function
		var retKind, vol string
		var nargs, ndefaults int16
		var names, modes, types []string
		var arrays []bool
		if err := frows.Scan(&f.oid, &f.rows, &f.schema, &f.name, &f.retSet, &f.retType, &retKind, &vol, &nargs, &ndefaults, &names, &modes, &types, &arrays); err != nil {
			return nil, fmt.Errorf("dataapi: read functions: %w", err)
		}
		f.retKind, f.volatile = retKind[0], vol[0]
		if f.retType == "void" {
			f.retKind = 'v'
		}
		// proargnames covers every argument (out ones too) when proargmodes
		// is set; input arguments are i, b and v.
		in := 0
		for i := 0; i < len(names) || i < len(modes); i++ {
			mode := "i"
			if i < len(modes) {
				mode = modes[i]
			}
			if mode != "i" && mode != "b" && mode != "v" {
				continue
			}
			if in >= len(types) {
				break
			}
			name := ""
			if i < len(names) {
				name = names[i]
			}
			f.args = append(f.args, funcArg{name: name, typ: types[in], array: arrays[in], hasDefault: in >= int(nargs-ndefaults)})
			in++
		}
		for ; in < len(types); in++ { // unnamed arguments
			f.args = append(f.args, funcArg{typ: types[in], array: arrays[in], hasDefault: in >= int(nargs-ndefaults)})
		}
		key := f.schema + "." + f.name
		fc := f
		c.funcs[key] = append(c.funcs[key], &fc)
	}
	return c, frows.Err()
}

// unprotected lists the tables and views of the exposed schemas that anon
// or authenticated may read or write and that row-level security does not
// protect, each with its reason and fix: the check [db.CheckRLS] makes for
// the native resources (RLS disabled, a view without security_invoker or
// reading such a table, a table a request role owns without FORCE).
func unprotected(ctx context.Context, pool *pgxpool.Pool, schemas []string) ([]string, error) {
	rows, err := pool.Query(ctx, `select format('%I.%I', n.nspname, c.relname)
	from pg_class c join pg_namespace n on n.oid = c.relnamespace
	where n.nspname = any($1) and c.relkind in ('r','p','v','m','f')
	  and exists (select 1 from pg_roles r where r.rolname in ('anon','authenticated')
	    and has_table_privilege(r.oid, c.oid, 'select,insert,update,delete'))
	order by 1`, schemas)
	if err != nil {
		return nil, fmt.Errorf("dataapi: check row-level security: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("dataapi: check row-level security: %w", err)
	}
	var out []string
	for _, name := range names {
		_, err := db.CheckRLS(ctx, pool, name)
		var rlsErr *db.RLSError
		switch {
		case errors.As(err, &rlsErr):
			out = append(out, fmt.Sprintf("%s (%s; fix: %s)", name, rlsErr.Reason, rlsErr.Fix))
		case errors.Is(err, db.ErrNoRelation):
			// Dropped since the list was read.
		case err != nil:
			return nil, fmt.Errorf("dataapi: check row-level security: %w", err)
		}
	}
	return out, nil
}

// suggest returns the name in names closest to want ("" when none is
// close), for PostgREST's "Perhaps you meant" hints: looser than a typo
// check, as PostgREST's hint is.
func suggest(want string, names []string) string {
	best, bestD := "", len(want)/2+2
	sort.Strings(names)
	for _, n := range names {
		if d := suggestpkg.Distance(strings.ToLower(want), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// computed returns the computed column name of rel: a function of rel's
// schema named name whose one argument is rel's row type and that
// returns one value; nil when none.
func (c *catalogue) computed(rel *relation, name string) *function {
	for _, f := range c.funcs[rel.schema+"."+name] {
		if len(f.args) != 1 || f.retSet || f.retKind == 'v' {
			continue
		}
		t := f.args[0].typ
		if t == rel.name || t == rel.schema+"."+rel.name || t == ident(rel.name) || t == ident(rel.schema)+"."+ident(rel.name) {
			return f
		}
	}
	return nil
}

// relationOfType returns the table or view whose row type typ names
// (format_type's spelling, seen from a function of schema), nil when none.
func (c *catalogue) relationOfType(typ, schema string) *relation {
	if r := c.rels[typ]; r != nil && strings.Contains(typ, ".") {
		return r
	}
	for _, r := range c.rels {
		if typ == ident(r.schema)+"."+ident(r.name) || (r.schema == schema || r.schema == "public") && (typ == r.name || typ == ident(r.name)) {
			return r
		}
	}
	return nil
}

// viewKeys gives each view of the exposed schemas the foreign keys of
// the tables (or views) its columns are read from, both ways, as
// PostgREST infers them: a key whose columns all appear in the view,
// under any names, belongs to the view with the view's column names. A
// view joining several tables carries the keys of each; a view over a
// view, the keys found for that view. The base tables may be in a schema
// that is not exposed (a private table behind an exposed view).
func (c *catalogue) viewKeys(ctx context.Context, pool *pgxpool.Pool, schemas []string) error {
	rows, err := pool.Query(ctx, `select vn.nspname || '.' || v.relname, r.ev_action::text,
	  array(select a.attnum::int from pg_attribute a where a.attrelid = v.oid and a.attnum > 0 and not a.attisdropped order by a.attnum),
	  array(select a.attname::text from pg_attribute a where a.attrelid = v.oid and a.attnum > 0 and not a.attisdropped order by a.attnum)
	from pg_class v join pg_namespace vn on vn.oid = v.relnamespace
	join pg_rewrite r on r.ev_class = v.oid and r.ev_type = '1' and r.rulename = '_RETURN'
	where v.relkind in ('v', 'm') and vn.nspname = any($1)`, schemas)
	if err != nil {
		return fmt.Errorf("dataapi: read views: %w", err)
	}
	type viewCols struct {
		view    *relation
		origins map[int]columnOrigin
		names   map[int]string // the view's column names by number
	}
	var views []viewCols
	var oids []uint32
	for rows.Next() {
		var key, action string
		var nums []int32
		var names []string
		if err := rows.Scan(&key, &action, &nums, &names); err != nil {
			rows.Close()
			return fmt.Errorf("dataapi: read views: %w", err)
		}
		v := c.rels[key]
		if v == nil || len(nums) != len(names) {
			continue
		}
		vc := viewCols{view: v, origins: viewOrigins(action), names: map[int]string{}}
		for i, n := range nums {
			vc.names[int(n)] = names[i]
		}
		for _, o := range vc.origins {
			oids = append(oids, o.rel)
		}
		views = append(views, vc)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("dataapi: read views: %w", err)
	}
	if len(oids) == 0 {
		return nil
	}
	// The relations the views read, and their column names.
	brows, err := pool.Query(ctx, `select c.oid, n.nspname || '.' || c.relname, a.attnum::int, a.attname::text
	from pg_class c join pg_namespace n on n.oid = c.relnamespace
	join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
	where c.oid = any($1)`, oids)
	if err != nil {
		return fmt.Errorf("dataapi: read views' tables: %w", err)
	}
	stubs := map[string]*relation{} // relations outside the exposed schemas
	byOid := map[uint32]*relation{}
	colName := map[columnOrigin]string{}
	for brows.Next() {
		var oid uint32
		var key, name string
		var num int
		if err := brows.Scan(&oid, &key, &num, &name); err != nil {
			brows.Close()
			return fmt.Errorf("dataapi: read views' tables: %w", err)
		}
		r := c.rels[key]
		if r == nil {
			if r = stubs[key]; r == nil {
				schema, name, _ := strings.Cut(key, ".")
				r = &relation{schema: schema, name: name, colIndex: map[string]int{}}
				stubs[key] = r
			}
		}
		byOid[oid] = r
		colName[columnOrigin{oid, num}] = name
	}
	brows.Close()
	if err := brows.Err(); err != nil {
		return fmt.Errorf("dataapi: read views' tables: %w", err)
	}
	// The foreign keys of base tables outside the exposed schemas.
	if len(stubs) > 0 {
		krows, err := pool.Query(ctx, foreignKeysSQL+`
		where c.contype = 'f' and (c.conrelid = any($2) or c.confrelid = any($2))
		  and not (ns.nspname = any($1) and nt.nspname = any($1))
		order by c.conname`, schemas, oids)
		if err != nil {
			return fmt.Errorf("dataapi: read foreign keys: %w", err)
		}
		for krows.Next() {
			var fk foreignKey
			var from, to string
			if err := krows.Scan(&fk.name, &from, &to, &fk.cols, &fk.refCols); err != nil {
				krows.Close()
				return fmt.Errorf("dataapi: read foreign keys: %w", err)
			}
			pick := func(k string) *relation {
				if r := c.rels[k]; r != nil {
					return r
				}
				return stubs[k]
			}
			fk.from, fk.to = pick(from), pick(to)
			if fk.from != nil && fk.to != nil {
				c.fks = append(c.fks, &fk)
			}
		}
		krows.Close()
		if err := krows.Err(); err != nil {
			return fmt.Errorf("dataapi: read foreign keys: %w", err)
		}
	}
	// For each view, the view columns showing each base column.
	type baseCol struct {
		rel *relation
		col string
	}
	shows := map[*relation]map[baseCol][]string{}
	for _, vc := range views {
		m := map[baseCol][]string{}
		for num, o := range vc.origins {
			base, name, vname := byOid[o.rel], colName[o], vc.names[num]
			if base == nil || name == "" || vname == "" || base == vc.view {
				continue
			}
			m[baseCol{base, name}] = append(m[baseCol{base, name}], vname)
		}
		for _, cols := range m {
			sort.Strings(cols)
		}
		shows[vc.view] = m
	}
	// mapped lists the ways view v shows all of rel's columns cols (one
	// list of view columns per combination, at most a few).
	mapped := func(v, rel *relation, cols []string) [][]string {
		out := [][]string{nil}
		for _, col := range cols {
			names := shows[v][baseCol{rel, col}]
			if len(names) == 0 {
				return nil
			}
			var next [][]string
			for _, prefix := range out {
				for _, n := range names {
					if len(next) < 8 {
						next = append(next, append(slices.Clone(prefix), n))
					}
				}
			}
			out = next
		}
		return out
	}
	keyOf := func(fk *foreignKey) string {
		return fk.name + "\x00" + fk.from.qualified() + "\x00" + fk.to.qualified() + "\x00" + strings.Join(fk.cols, ",") + "\x00" + strings.Join(fk.refCols, ",")
	}
	have := map[string]bool{}
	for _, fk := range c.fks {
		have[keyOf(fk)] = true
	}
	add := func(fk *foreignKey) bool {
		if k := keyOf(fk); !have[k] {
			have[k] = true
			c.fks = append(c.fks, fk)
			return true
		}
		return false
	}
	// Each pass carries the keys found so far to the views over their
	// ends: a view over a view gets its keys in the next pass.
	for range 4 {
		grew := false
		base := slices.Clone(c.fks)
		for v := range shows {
			for _, fk := range base {
				for _, cols := range mapped(v, fk.from, fk.cols) {
					grew = add(&foreignKey{name: fk.name, from: v, to: fk.to, cols: cols, refCols: fk.refCols}) || grew
				}
				for _, refCols := range mapped(v, fk.to, fk.refCols) {
					grew = add(&foreignKey{name: fk.name, from: fk.from, to: v, cols: fk.cols, refCols: refCols}) || grew
				}
			}
		}
		if !grew {
			break
		}
	}
	// Only keys between exposed relations are served.
	c.fks = slices.DeleteFunc(c.fks, func(fk *foreignKey) bool {
		return c.rels[fk.from.qualified()] != fk.from || c.rels[fk.to.qualified()] != fk.to
	})
	sort.SliceStable(c.fks, func(i, j int) bool { return c.fks[i].name < c.fks[j].name })
	return nil
}
