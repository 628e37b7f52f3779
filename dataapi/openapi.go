package dataapi

import (
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// serveDescription answers GET {path}/ with an OpenAPI 3.1 description of
// what the caller's role may reach: the tables and views it holds a
// privilege on (the methods those privileges allow) and the functions it
// may execute. The privileges are read as the caller, in one statement.
func (q *request) serveDescription() {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead {
		e := apiErr(http.StatusMethodNotAllowed, "PGRST117", "Unsupported HTTP method: "+q.r.Method)
		e.header = http.Header{"Allow": {"GET, HEAD"}}
		writeError(q.w, e)
		return
	}
	cat := q.cat
	var rels []*relation
	for _, r := range cat.rels {
		if r.schema == q.schema {
			rels = append(rels, r)
		}
	}
	sort.Slice(rels, func(i, j int) bool { return rels[i].name < rels[j].name })
	var funcs []*function
	for _, fs := range cat.funcs {
		for _, f := range fs {
			if f.schema == q.schema {
				funcs = append(funcs, f)
			}
		}
	}
	sort.Slice(funcs, func(i, j int) bool {
		return funcs[i].name < funcs[j].name || funcs[i].name == funcs[j].name && funcs[i].oid < funcs[j].oid
	})
	names := make([]string, len(rels))
	for i, r := range rels {
		names[i] = pgx.Identifier{r.schema, r.name}.Sanitize()
	}
	oids := make([]uint32, len(funcs))
	for i, f := range funcs {
		oids[i] = f.oid
	}
	var privs []string // per relation: four letters, s i u d or -
	var exec []bool
	err := q.api.d.Run(q.readCtx(), q.auth.DBCaller(), db.RunOpts{ReadOnly: true}, func(dq db.Querier) error {
		return dq.QueryRow(q.r.Context(), `select
		  array(select case when has_table_privilege(k, 'select') then 's' else '-' end ||
		               case when has_table_privilege(k, 'insert') then 'i' else '-' end ||
		               case when has_table_privilege(k, 'update') then 'u' else '-' end ||
		               case when has_table_privilege(k, 'delete') then 'd' else '-' end
		        from unnest($1::text[]) with ordinality u(k, o) order by o),
		  array(select has_function_privilege(f, 'execute') from unnest($2::oid[]) with ordinality u(f, o) order by o)`,
			names, oids).Scan(&privs, &exec)
	})
	if err != nil {
		q.fail(err)
		return
	}
	paths := map[string]any{}
	schemas := map[string]any{}
	for i, r := range rels {
		p := privs[i]
		decl := q.api.declared[r.qualified()]
		allowed := allowedColumns(decl)
		served := func(op rest.Operation, letter byte, at int) bool {
			if p[at] != letter {
				return false
			}
			_, ok := declaredOp(decl, op)
			return ok
		}
		ops := map[string]any{}
		ref := map[string]any{"$ref": "#/components/schemas/" + r.name}
		rows := map[string]any{"description": "The rows", "content": map[string]any{"application/json": map[string]any{
			"schema": map[string]any{"type": "array", "items": ref}}}}
		if served(rest.OpList, 's', 0) || served(rest.OpGet, 's', 0) {
			ops["get"] = map[string]any{"summary": "Read " + r.name, "operationId": "get_" + r.name,
				"parameters": readParams(r, allowed), "responses": map[string]any{"200": rows, "206": rows}}
		}
		if served(rest.OpCreate, 'i', 1) {
			ops["post"] = map[string]any{"summary": "Insert into " + r.name, "operationId": "post_" + r.name,
				"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
					"oneOf": []any{ref, map[string]any{"type": "array", "items": ref}}}}}},
				"responses": map[string]any{"201": map[string]any{"description": "Inserted"}}}
		}
		if served(rest.OpUpdate, 'u', 2) {
			ops["patch"] = map[string]any{"summary": "Update " + r.name, "operationId": "patch_" + r.name,
				"parameters":  readParams(r, allowed),
				"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": ref}}},
				"responses":   map[string]any{"200": rows, "204": map[string]any{"description": "Updated"}}}
		}
		if served(rest.OpDelete, 'd', 3) {
			ops["delete"] = map[string]any{"summary": "Delete from " + r.name, "operationId": "delete_" + r.name,
				"parameters": readParams(r, allowed),
				"responses":  map[string]any{"200": rows, "204": map[string]any{"description": "Deleted"}}}
		}
		if len(ops) == 0 {
			continue
		}
		paths["/"+r.name] = ops
		props := map[string]any{}
		for _, c := range r.columns {
			if allowed == nil || contains(allowed, c.name) {
				props[c.name] = typeSchema(c.typ)
			}
		}
		schemas[r.name] = map[string]any{"type": "object", "properties": props}
	}
	for i, f := range funcs {
		if !exec[i] {
			continue
		}
		props := map[string]any{}
		var required []string
		for _, a := range f.args {
			if a.name == "" {
				continue
			}
			props[a.name] = typeSchema(a.typ)
			if !a.hasDefault {
				required = append(required, a.name)
			}
		}
		body := map[string]any{"type": "object", "properties": props}
		if len(required) > 0 {
			body["required"] = required
		}
		out := typeSchema(f.retType)
		if f.retSet {
			out = map[string]any{"type": "array", "items": out}
		}
		resp := map[string]any{"200": map[string]any{"description": "The result", "content": map[string]any{
			"application/json": map[string]any{"schema": out}}}}
		if f.retKind == 'v' {
			resp = map[string]any{"204": map[string]any{"description": "Done"}}
		}
		id := "rpc_" + f.name
		if len(cat.funcs[f.schema+"."+f.name]) > 1 {
			id += "_" + strconv.FormatUint(uint64(f.oid), 10)
		}
		if _, dup := paths["/rpc/"+f.name]; dup {
			continue // overloads share a path: the first is described
		}
		paths["/rpc/"+f.name] = map[string]any{"post": map[string]any{"summary": "Call " + f.name, "operationId": id,
			"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{"schema": body}}},
			"responses":   resp}}
	}
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "tablegate data API (" + q.schema + ")", "version": "1",
			"description": "PostgREST-compatible data API: what the caller's role may reach in schema " + q.schema + "."},
		"paths":      paths,
		"components": map[string]any{"schemas": schemas},
	}
	body, err := json.Marshal(doc)
	if err != nil {
		q.fail(err)
		return
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/openapi+json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	q.w.WriteHeader(http.StatusOK)
	if q.r.Method != http.MethodHead {
		_, _ = q.w.Write(body)
	}
}

// readParams are the query parameters of a read: select, order, limit,
// offset and a filter per column.
func readParams(r *relation, allowed []string) []any {
	str := map[string]any{"type": "string"}
	out := []any{
		map[string]any{"name": "select", "in": "query", "schema": str, "description": "Columns, aliases, casts, JSON paths and embedded resources"},
		map[string]any{"name": "order", "in": "query", "schema": str},
		map[string]any{"name": "limit", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 0}},
		map[string]any{"name": "offset", "in": "query", "schema": map[string]any{"type": "integer", "minimum": 0}},
		map[string]any{"name": "or", "in": "query", "schema": str},
	}
	for _, c := range r.columns {
		if allowed == nil || contains(allowed, c.name) {
			out = append(out, map[string]any{"name": c.name, "in": "query", "schema": str, "description": "Filter: operator.value, as eq.1"})
		}
	}
	return out
}

// typeSchema maps a Postgres type name to a JSON Schema.
func typeSchema(typ string) map[string]any {
	if strings.HasSuffix(typ, "[]") {
		return map[string]any{"type": "array", "items": typeSchema(strings.TrimSuffix(typ, "[]"))}
	}
	t := typ
	if i := strings.IndexByte(t, '('); i > 0 {
		t = t[:i]
	}
	switch t {
	case "smallint", "integer", "bigint":
		return map[string]any{"type": "integer"}
	case "numeric", "real", "double precision":
		return map[string]any{"type": "number"}
	case "boolean":
		return map[string]any{"type": "boolean"}
	case "json", "jsonb":
		return map[string]any{}
	case "uuid":
		return map[string]any{"type": "string", "format": "uuid"}
	case "timestamp with time zone", "timestamp without time zone":
		return map[string]any{"type": "string", "format": "date-time"}
	case "date":
		return map[string]any{"type": "string", "format": "date"}
	}
	return map[string]any{"type": "string", "description": typ}
}
