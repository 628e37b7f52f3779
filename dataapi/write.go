package dataapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// MaxBodyBytes caps write and RPC bodies.
const MaxBodyBytes = 1 << 20

// errRollback ends a transaction on purpose (Prefer: tx=rollback, a
// singular answer that does not hold one row, max-affected exceeded).
var errRollback = errors.New("dataapi: rollback")

// readJSON reads the body as JSON values (numbers kept exact).
func (q *request) readJSON() (any, *Error) {
	if q.r.Body == nil {
		return nil, nil
	}
	raw, err := io.ReadAll(http.MaxBytesReader(q.w, q.r.Body, MaxBodyBytes))
	if err != nil {
		return nil, apiErr(http.StatusRequestEntityTooLarge, "PGRST102", "The body is larger than "+strconv.Itoa(MaxBodyBytes)+" bytes or could not be read")
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	q.bodyGiven = true
	if ct := q.r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return nil, apiErr(http.StatusUnsupportedMediaType, "PGRST107", "The Content-Type "+strconv.Quote(ct)+" is not supported; send application/json")
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, apiErr(http.StatusBadRequest, "PGRST102", "Empty or invalid json")
	}
	return v, nil
}

// bodyRows reads a write body: one object or an array of objects.
func (q *request) bodyRows() ([]map[string]any, *Error) {
	if mt, _, err := mime.ParseMediaType(q.r.Header.Get("Content-Type")); err == nil && mt == "text/csv" {
		return q.csvRows()
	}
	v, e := q.readJSON()
	if e != nil {
		return nil, e
	}
	switch t := v.(type) {
	case map[string]any:
		return []map[string]any{t}, nil
	case []any:
		out := make([]map[string]any, 0, len(t))
		for _, it := range t {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, apiErr(http.StatusBadRequest, "PGRST102", "All array elements must be objects")
			}
			out = append(out, m)
		}
		return out, nil
	}
	return nil, apiErr(http.StatusBadRequest, "PGRST102", "Empty or invalid json")
}

// writeColumns are the columns a write names: columns= or every key of
// the body, in first appearance order; each must be a column of rel (and of
// a declared table's select).
func writeColumns(rel *relation, rows []map[string]any, param string, allowed []string) ([]string, *Error) {
	var cols []string
	seen := map[string]bool{}
	add := func(c string) {
		if !seen[c] {
			seen[c] = true
			cols = append(cols, c)
		}
	}
	if param != "" {
		parts, ok := splitTop(param, ',')
		if !ok {
			return nil, parseErr("the columns parameter", "unbalanced quotes")
		}
		for _, p := range parts {
			add(unquote(strings.TrimSpace(p)))
		}
	} else {
		for _, r := range rows {
			keys := make([]string, 0, len(r))
			for k := range r {
				keys = append(keys, k)
			}
			sortStrings(keys)
			for _, k := range keys {
				add(k)
			}
		}
	}
	for _, c := range cols {
		_, ok := rel.column(c)
		if ok && allowed != nil {
			ok = contains(allowed, c)
		}
		if !ok {
			return nil, apiErr(http.StatusBadRequest, "PGRST204", "Could not find the '"+c+"' column of '"+rel.name+"' in the schema cache")
		}
	}
	return cols, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func identList(cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = ident(c)
	}
	return strings.Join(parts, ", ")
}

// returnMode is Prefer: return= (minimal by default, as PostgREST).
func (q *request) returnMode() string {
	switch m := q.prefer["return"]; m {
	case "representation", "headers-only", "minimal":
		q.applied = append(q.applied, "return="+m)
		return m
	}
	return "minimal"
}

// writePlan is a write statement and how to answer it.
type writePlan struct {
	rel    *relation
	decl   *Table
	op     rest.Operation
	stmt   string // INSERT/UPDATE/DELETE with "returning _t.*" appended when rows are needed
	b      *builder
	ret    string
	status int // success status with a body
	items  []selectItem
	// perRow is called inside the transaction before the statement, for
	// declared tables' permissions and hooks; it may rewrite the plan.
	perRow func(dq db.Querier) error
}

// runWrite runs a write plan and answers it.
func (q *request) runWrite(p *writePlan) {
	ctx := q.r.Context()
	countMode := ""
	if q.prefer["count"] == "exact" {
		countMode = "exact"
		q.applied = append(q.applied, "count=exact")
	}
	rollback := q.prefer["tx"] == "rollback"
	if rollback {
		q.applied = append(q.applied, "tx=rollback")
	}
	maxAffected := -1
	if q.prefer["handling"] == "strict" {
		q.applied = append(q.applied, "handling=strict")
		if v, ok := q.prefer["max-affected"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeError(q.w, parseErr("the Prefer header", "max-affected takes a non-negative integer"))
				return
			}
			maxAffected = n
			q.applied = append(q.applied, "max-affected="+v)
		}
	}
	// A declared table's After hook runs on every written row (its
	// declared columns), in the transaction; its outputs are the rows
	// answered. (perRow may change p.op: a hooked PUT is an update or a
	// create.)
	var after, needRows bool
	decide := func() {
		after = p.decl != nil && p.decl.Resource.AfterHook(p.op)
		needRows = p.ret == "representation" || p.ret == "headers-only" || q.singular() || after
	}
	decide()
	compose := func() (string, *Error) {
		if !needRows {
			return p.stmt, nil
		}
		if after {
			return "with _pgrst_src as (" + p.stmt + " returning _t.*) select count(*), coalesce(json_agg(_pgrst_src), '[]')::text from _pgrst_src", nil
		}
		sel := "_t.*"
		if p.ret == "headers-only" && len(p.rel.pk) > 0 {
			parts := make([]string, len(p.rel.pk))
			for i, c := range p.rel.pk {
				parts[i] = "_t." + ident(c)
			}
			sel = strings.Join(parts, ", ")
		} else if p.ret != "headers-only" {
			var e *Error
			if sel, e = p.b.selectSQL(p.items, allowedColumns(p.decl)); e != nil {
				return "", e
			}
		}
		return "with _pgrst_src as (" + p.stmt + " returning _t.*) select count(*), " + q.aggSQL("_pgrst_page") + "::text from (select " + sel + " from " + p.b.fromSQL("_t", "_pgrst_src _t") + ") _pgrst_page", nil
	}
	var sql string
	if p.perRow == nil {
		s, e := compose()
		if e != nil {
			writeError(q.w, e)
			return
		}
		sql = s
	}
	var n int64
	var body, written string
	var refusal *Error
	run := func(dq db.Querier) error {
		if p.perRow != nil {
			if err := p.perRow(dq); err != nil {
				return err
			}
			decide()
			s, e := compose()
			if e != nil {
				return e
			}
			sql = s
		}
		if needRows {
			if err := dq.QueryRow(ctx, sql, p.b.args...).Scan(&n, &body); err != nil {
				return err
			}
		} else {
			tag, err := dq.Exec(ctx, sql, p.b.args...)
			if err != nil {
				return err
			}
			n = tag.RowsAffected()
		}
		switch {
		case maxAffected >= 0 && n > int64(maxAffected):
			refusal = apiErr(http.StatusBadRequest, "PGRST124", "Query result exceeds max-affected preference constraint").
				withDetails("The query affects " + strconv.FormatInt(n, 10) + " rows")
			return errRollback
		case q.singular() && n != 1:
			refusal = apiErr(http.StatusNotAcceptable, "PGRST116", "Cannot coerce the result to a single JSON object").
				withDetails("The result contains " + strconv.FormatInt(n, 10) + " rows")
			return errRollback
		}
		if after {
			written = body
			out, err := q.afterRows(dq, p, body)
			if err != nil {
				return err
			}
			body = out
		}
		if rollback {
			return errRollback
		}
		return nil
	}
	var err error
	scope := declScope(p.decl, p.op)
	wctx := q.writeCtx()
	scope.Tx = p.perRow != nil || after || rollback || maxAffected >= 0 || q.singular()
	if scope.Tx {
		err = q.decided(func() error { return q.api.d.Run(wctx, q.auth.DBCaller(), scope, run) })
	} else {
		err = q.api.d.Run(wctx, q.auth.DBCaller(), scope, run)
	}
	if refusal != nil {
		writeError(q.w, refusal)
		return
	}
	if err != nil && !errors.Is(err, errRollback) {
		q.fail(err)
		return
	}
	if err == nil {
		q.answerPosition()
	}
	var total *int64
	if countMode != "" {
		total = &n
	}
	switch p.ret {
	case "representation":
		q.respondRows(p.status, 0, n, total, body, false)
		return
	case "headers-only":
		if len(p.rel.pk) > 0 && n > 0 {
			if written != "" {
				body = written
			}
			var rows []map[string]any
			if json.Unmarshal([]byte(body), &rows) == nil && len(rows) > 0 {
				loc := "/" + p.rel.name + "?"
				for i, c := range p.rel.pk {
					if i > 0 {
						loc += "&"
					}
					loc += c + "=eq." + jsonText(rows[0][c])
				}
				q.w.Header().Set("Location", loc)
			}
		}
	}
	status := p.status
	if status == http.StatusOK {
		status = http.StatusNoContent
	}
	q.respondRows(status, 0, 0, total, "", false)
}

// afterRows runs a declared table's After hook (create or update) on each
// written row of body (a JSON array of whole rows), inside the write's
// transaction, and returns the JSON array of the hooks' outputs. Each row
// holds the declared columns, as on the native route, whatever select=
// asks.
func (q *request) afterRows(dq db.Querier, p *writePlan, body string) (string, error) {
	rows, err := decodeRows(body, allowedColumns(p.decl))
	if err != nil {
		return "", err
	}
	res := p.decl.Resource
	keyName := res.Describe().Key.Name
	outs := make([]any, len(rows))
	for i, row := range rows {
		var key any
		if v, ok := row[keyName]; ok && v != nil {
			if key, err = res.ParseKey(jsonText(v)); err != nil {
				return "", err
			}
		}
		if outs[i], err = res.AfterRow(q.r.Context(), &rest.WriteCheck{Operation: p.op, Auth: q.auth, DB: dq, Request: q.r, Key: key, Row: row}); err != nil {
			return "", err
		}
	}
	out, err := json.Marshal(outs)
	if err != nil {
		return "", err
	}
	return string(out), nil
}

// decodeRows reads a JSON array of objects (numbers kept exact), keeping
// only the allowed keys when allowed is not nil.
func decodeRows(body string, allowed []string) ([]rest.Row, error) {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var rows []rest.Row
	if err := dec.Decode(&rows); err != nil {
		return nil, err
	}
	if allowed != nil {
		for _, row := range rows {
			for k := range row {
				if !contains(allowed, k) {
					delete(row, k)
				}
			}
		}
	}
	return rows, nil
}

// decided runs tx, a transaction checking a declared table's permissions;
// when the authorizer's decision needs work outside it (Decision.Then)
// it runs that work once the transaction has ended and, when it allows,
// tx once more (once), as the native routes do. Otherwise the answer is
// the follow-up's problem (APPROVAL_REQUIRED with the approval, or
// PERMISSION_DENIED).
func (q *request) decided(tx func() error) error {
	err := tx()
	for retried := false; ; retried = true {
		var dd *rest.DeferredDecision
		if !errors.As(err, &dd) {
			return err
		}
		if derr := dd.Decide(q.r.Context(), retried); derr != nil {
			return derr
		}
		err = tx()
	}
}

func jsonText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return "null"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// insert answers POST: one INSERT of every body row (upsert with
// Prefer: resolution=…).
func (q *request) insert(rel *relation, decl *Table) {
	if _, ok := declaredOp(decl, rest.OpCreate); !ok {
		writeError(q.w, notServed(q.r.Method))
		return
	}
	rows, e := q.bodyRows()
	if e != nil {
		writeError(q.w, e)
		return
	}
	if rows == nil {
		writeError(q.w, apiErr(http.StatusBadRequest, "PGRST102", "Empty or invalid json"))
		return
	}
	q.insertRows(rel, decl, rows, nil)
}

// insertRows inserts rows; put, when not nil, makes it PUT's upsert of one
// row on the primary key.
func (q *request) insertRows(rel *relation, decl *Table, rows []map[string]any, put []string) {
	items, e := parseSelect(q.query.Get("select"))
	if e != nil {
		writeError(q.w, e)
		return
	}
	allowed := allowedColumns(decl)
	p := &writePlan{rel: rel, decl: decl, op: rest.OpCreate, b: &builder{rel: rel, req: q}, ret: q.returnMode(), status: http.StatusCreated, items: items}
	if put != nil {
		p.status = http.StatusOK
	}
	missingDefault := q.prefer["missing"] == "default"
	if missingDefault {
		q.applied = append(q.applied, "missing=default")
	}
	resolution := q.prefer["resolution"]
	switch resolution {
	case "merge-duplicates", "ignore-duplicates":
		q.applied = append(q.applied, "resolution="+resolution)
	default:
		resolution = ""
	}
	var conflict []string
	if put != nil {
		resolution, conflict = "merge-duplicates", put
	} else if resolution != "" {
		if oc := q.query.Get("on_conflict"); oc != "" {
			for _, c := range strings.Split(oc, ",") {
				c = unquote(strings.TrimSpace(c))
				if _, ok := rel.column(c); !ok {
					writeError(q.w, apiErr(http.StatusBadRequest, "42703", "column "+rel.name+"."+c+" does not exist"))
					return
				}
				conflict = append(conflict, c)
			}
		} else {
			conflict = rel.pk
		}
		if len(conflict) == 0 {
			writeError(q.w, apiErr(http.StatusBadRequest, "PGRST100", "\"failed to parse the on_conflict parameter\"").
				withDetails("The table has no primary key: name the unique columns with on_conflict="))
			return
		}
	}
	build := func(rows []map[string]any) *Error {
		cols, e := writeColumns(rel, rows, q.query.Get("columns"), allowed)
		if e != nil {
			return e
		}
		b := &builder{rel: rel, req: q}
		table := pgx.Identifier{rel.schema, rel.name}.Sanitize()
		stmt := "insert into " + table + " as _t"
		if len(cols) == 0 {
			// Every object is empty: one row of defaults each.
			stmt += " select from generate_series(1, " + strconv.Itoa(len(rows)) + ")"
		} else if missingDefault {
			stmt += " (" + identList(cols) + ") values "
			for i, r := range rows {
				if i > 0 {
					stmt += ", "
				}
				raw, _ := json.Marshal(r)
				pr := b.param(string(raw))
				stmt += "("
				for j, c := range cols {
					if j > 0 {
						stmt += ", "
					}
					if _, ok := r[c]; ok {
						stmt += "(json_populate_record(null::" + table + ", " + pr + "::json))." + ident(c)
					} else {
						stmt += "default"
					}
				}
				stmt += ")"
			}
		} else {
			raw, _ := json.Marshal(rows)
			stmt += " (" + identList(cols) + ") select " + identList(cols) + " from json_populate_recordset(null::" + table + ", " + b.param(string(raw)) + "::json)"
		}
		if resolution != "" {
			stmt += " on conflict (" + identList(conflict) + ")"
			if resolution == "ignore-duplicates" || len(cols) == 0 {
				stmt += " do nothing"
			} else {
				stmt += " do update set "
				for i, c := range cols {
					if i > 0 {
						stmt += ", "
					}
					stmt += ident(c) + " = excluded." + ident(c)
				}
			}
		}
		p.stmt, p.b = stmt, b
		return nil
	}
	if e := build(rows); e != nil {
		writeError(q.w, e)
		return
	}
	if decl != nil && decl.Resource.RowHooked(rest.OpCreate) {
		p.perRow = func(dq db.Querier) error {
			out := make([]map[string]any, len(rows))
			for i, r := range rows {
				data := rest.Row{} // a copy per run: a Before hook may change it
				for k, v := range r {
					data[k] = v
				}
				v, err := decl.Resource.CheckWrite(q.r.Context(), &rest.WriteCheck{Operation: rest.OpCreate, Auth: q.auth, DB: dq, Request: q.r, Data: data})
				if err != nil {
					return err
				}
				out[i] = v
			}
			if e := build(out); e != nil {
				return e
			}
			return nil
		}
	}
	q.runWrite(p)
}

// update answers PATCH: one UPDATE of the rows the filters match (RLS
// bounds them).
func (q *request) update(rel *relation, decl *Table) {
	if _, ok := declaredOp(decl, rest.OpUpdate); !ok {
		writeError(q.w, notServed(q.r.Method))
		return
	}
	items, e := parseSelect(q.query.Get("select"))
	if e != nil {
		writeError(q.w, e)
		return
	}
	cond, e := parseConditions(q.query)
	if e != nil {
		writeError(q.w, e)
		return
	}
	v, e := q.readJSON()
	if e != nil {
		writeError(q.w, e)
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		writeError(q.w, apiErr(http.StatusBadRequest, "PGRST102", "A PATCH body must be one JSON object"))
		return
	}
	allowed := allowedColumns(decl)
	cols, e := writeColumns(rel, []map[string]any{obj}, q.query.Get("columns"), allowed)
	if e != nil {
		writeError(q.w, e)
		return
	}
	b := &builder{rel: rel, req: q, cond: cond}
	if e := b.checkConditions(cond, allowed); e != nil {
		writeError(q.w, e)
		return
	}
	table := pgx.Identifier{rel.schema, rel.name}.Sanitize()
	p := &writePlan{rel: rel, decl: decl, op: rest.OpUpdate, b: b, ret: q.returnMode(), status: http.StatusOK, items: items}
	if len(cols) == 0 {
		// Nothing to set: PostgREST answers without touching a row.
		p.stmt = "select _t.* from " + table + " _t where false"
		if p.ret == "minimal" || p.ret == "headers-only" {
			q.respondRows(http.StatusNoContent, 0, 0, nil, "", false)
			return
		}
		q.respondRows(http.StatusOK, 0, 0, nil, "[]", false)
		return
	}
	raw, _ := json.Marshal(obj)
	body := b.param(string(raw))
	set := "(" + identList(cols) + ") = (select " + identList(cols) + " from json_populate_record(null::" + table + ", " + body + "::json))"
	if len(cols) == 1 {
		set = ident(cols[0]) + " = (select " + ident(cols[0]) + " from json_populate_record(null::" + table + ", " + body + "::json))"
	}
	p.stmt = "update " + table + " as _t set " + set + " where " + b.whereSQL(cond)
	if decl != nil && decl.Resource.RowHooked(rest.OpUpdate) {
		p.perRow = func(dq db.Querier) error {
			return q.hookedRows(dq, p, rel, decl, cond, rest.OpUpdate, obj)
		}
	}
	q.runWrite(p)
}

// hookedRows runs a declared table's permission and hooks for every row a
// filtered update or delete matches, in the write's transaction: it reads
// the rows under RLS, runs [rest.Resource.CheckWrite] for each (the
// current row, and for an update the values to set, which a Before hook
// may change per row), then rewrites the plan into one statement writing
// exactly those rows, each with its own values.
func (q *request) hookedRows(dq db.Querier, p *writePlan, rel *relation, decl *Table, cond *conditions, op rest.Operation, data map[string]any) error {
	ctx := q.r.Context()
	res := decl.Resource
	keyName := res.Describe().Key.Name
	keyCol, ok := rel.column(keyName)
	if !ok {
		return apiErr(http.StatusInternalServerError, "PGRST000", "The table's key is not one of its columns.")
	}
	table := pgx.Identifier{rel.schema, rel.name}.Sanitize()
	bm := &builder{rel: rel, req: q, cond: cond}
	where := bm.whereSQL(cond)
	rows, err := dq.Query(ctx, "select (_t."+ident(keyName)+")::text, to_json(_t)::text from "+table+" _t where "+where, bm.args...)
	if err != nil {
		return err
	}
	type matched struct {
		key string
		row rest.Row
	}
	var found []matched
	allowed := allowedColumns(decl)
	for rows.Next() {
		var key, raw string
		if err := rows.Scan(&key, &raw); err != nil {
			rows.Close()
			return err
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		var row rest.Row
		if err := dec.Decode(&row); err != nil {
			rows.Close()
			return err
		}
		if allowed != nil {
			for k := range row {
				if !contains(allowed, k) {
					delete(row, k)
				}
			}
		}
		found = append(found, matched{key, row})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	b := &builder{rel: rel, req: q, cond: cond}
	keyType := keyCol.typ
	if op == rest.OpDelete {
		keys := make([]string, 0, len(found))
		for _, m := range found {
			id, err := res.ParseKey(m.key)
			if err != nil {
				return err
			}
			if _, err := res.CheckWrite(ctx, &rest.WriteCheck{Operation: op, Auth: q.auth, DB: dq, Request: q.r, Key: id, Row: m.row}); err != nil {
				return err
			}
			keys = append(keys, m.key)
		}
		list, _ := json.Marshal(keys)
		p.stmt = "delete from " + table + " as _t where _t." + ident(keyName) + " in (select (_k)::" + keyType +
			" from json_array_elements_text(" + b.param(string(list)) + "::json) _k)"
		p.b = b
		return nil
	}
	type change struct {
		K    string         `json:"k"`
		Body map[string]any `json:"body"`
	}
	var changes []change
	var values []map[string]any
	for _, m := range found {
		id, err := res.ParseKey(m.key)
		if err != nil {
			return err
		}
		in := rest.Row{}
		for k, v := range data {
			in[k] = v
		}
		v, err := res.CheckWrite(ctx, &rest.WriteCheck{Operation: op, Auth: q.auth, DB: dq, Request: q.r, Key: id, Row: m.row, Data: in})
		if err != nil {
			return err
		}
		changes = append(changes, change{m.key, v})
		values = append(values, v)
	}
	if len(changes) == 0 {
		p.stmt = "update " + table + " as _t set " + ident(keyName) + " = _t." + ident(keyName) + " where false"
		p.b = b
		return nil
	}
	cols, e := writeColumns(rel, values, "", nil)
	if e != nil {
		return e
	}
	raw, _ := json.Marshal(changes)
	body := b.param(string(raw))
	var sets []string
	for _, c := range cols {
		sets = append(sets, ident(c)+" = case when _v.body::jsonb ? "+b.keyParam(c)+
			" then (json_populate_record(null::"+table+", _v.body))."+ident(c)+" else _t."+ident(c)+" end")
	}
	p.stmt = "update " + table + " as _t set " + strings.Join(sets, ", ") +
		" from json_to_recordset(" + body + "::json) as _v(k text, body json) where _t." + ident(keyName) + " = (_v.k)::" + keyType
	p.b = b
	return nil
}

// remove answers DELETE: one DELETE of the rows the filters match.
func (q *request) remove(rel *relation, decl *Table) {
	if _, ok := declaredOp(decl, rest.OpDelete); !ok {
		writeError(q.w, notServed(q.r.Method))
		return
	}

	items, e := parseSelect(q.query.Get("select"))
	if e != nil {
		writeError(q.w, e)
		return
	}
	cond, e := parseConditions(q.query)
	if e != nil {
		writeError(q.w, e)
		return
	}
	b := &builder{rel: rel, req: q, cond: cond}
	if e := b.checkConditions(cond, allowedColumns(decl)); e != nil {
		writeError(q.w, e)
		return
	}
	table := pgx.Identifier{rel.schema, rel.name}.Sanitize()
	p := &writePlan{rel: rel, decl: decl, op: rest.OpDelete, b: b, ret: q.returnMode(), status: http.StatusOK, items: items}
	p.stmt = "delete from " + table + " as _t where " + b.whereSQL(cond)
	if decl != nil && decl.Resource.RowHooked(rest.OpDelete) {
		p.perRow = func(dq db.Querier) error {
			return q.hookedRows(dq, p, rel, decl, cond, rest.OpDelete, nil)
		}
	}
	q.runWrite(p)
}

// put answers PUT /{table}?pk=eq.v: an upsert of the one row the primary
// key filters name, whose body must hold the same key.
func (q *request) put(rel *relation, decl *Table) {
	hooked := false
	if decl != nil {
		for _, op := range []rest.Operation{rest.OpCreate, rest.OpUpdate} {
			if _, ok := declaredOp(decl, op); !ok {
				writeError(q.w, notServed(q.r.Method))
				return
			}
			hooked = hooked || decl.Resource.RowHooked(op) || decl.Resource.AfterHook(op)
		}
	}
	cond, e := parseConditions(q.query)
	if e != nil {
		writeError(q.w, e)
		return
	}
	keyed := map[string]string{}
	ok := len(rel.pk) > 0 && len(cond.logic) == 0 && len(cond.order) == 0 && cond.limit < 0 && cond.offset == 0 && len(cond.embedded) == 0
	for _, f := range cond.filters {
		if f.op != "eq" || f.negate || f.quant != "" || len(f.field.path) > 0 || !contains(rel.pk, f.field.name) {
			ok = false
		}
		keyed[f.field.name] = f.value
	}
	if !ok || len(keyed) != len(rel.pk) {
		writeError(q.w, apiErr(http.StatusMethodNotAllowed, "PGRST105", "Filters must include all and only primary key columns with 'eq' operators"))
		return
	}
	v, e := q.readJSON()
	if e != nil {
		writeError(q.w, e)
		return
	}
	obj, isObj := v.(map[string]any)
	if list, isList := v.([]any); isList && len(list) == 1 {
		obj, isObj = list[0].(map[string]any)
	}
	if !isObj {
		writeError(q.w, apiErr(http.StatusBadRequest, "PGRST102", "PUT takes one JSON object"))
		return
	}
	for c, want := range keyed {
		if got, has := obj[c]; !has || jsonText(got) != want {
			writeError(q.w, apiErr(http.StatusBadRequest, "PGRST115", "Payload values do not match URL in primary key column(s)"))
			return
		}
	}
	if hooked {
		q.putHooked(rel, decl, cond, obj)
		return
	}
	q.insertRows(rel, decl, []map[string]any{obj}, rel.pk)
}

// putHooked answers PUT on a declared table with a permission or hooks
// on create or update: in one transaction it reads the row the key names
// under the caller's row-level security; found, the write is an update
// of it (the update permission, AuthorizeFunc, BeforeUpdateFunc with the
// current row, then AfterUpdateFunc), else a create (the create
// permission, AuthorizeFunc, BeforeCreateFunc, then AfterCreateFunc),
// each one statement with the values the Before hook returned. A row
// that exists but that the caller cannot see is not overwritten: its
// insert answers 409 (23505).
func (q *request) putHooked(rel *relation, decl *Table, cond *conditions, obj map[string]any) {
	items, e := parseSelect(q.query.Get("select"))
	if e != nil {
		writeError(q.w, e)
		return
	}
	allowed := allowedColumns(decl)
	if _, e := writeColumns(rel, []map[string]any{obj}, "", allowed); e != nil {
		writeError(q.w, e)
		return
	}
	ctx := q.r.Context()
	res := decl.Resource
	table := pgx.Identifier{rel.schema, rel.name}.Sanitize()
	p := &writePlan{rel: rel, decl: decl, op: rest.OpCreate, b: &builder{rel: rel, req: q, cond: cond}, ret: q.returnMode(), status: http.StatusOK, items: items}
	p.perRow = func(dq db.Querier) error {
		bm := &builder{rel: rel, req: q, cond: cond}
		var raw string
		err := dq.QueryRow(ctx, "select to_json(_t)::text from "+table+" _t where "+bm.whereSQL(cond), bm.args...).Scan(&raw)
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		in := rest.Row{}
		for k, v := range obj {
			in[k] = v
		}
		check := &rest.WriteCheck{Operation: rest.OpCreate, Auth: q.auth, DB: dq, Request: q.r, Data: in}
		if found {
			rows, err := decodeRows("["+raw+"]", allowed)
			if err != nil {
				return err
			}
			check.Operation, check.Row = rest.OpUpdate, rows[0]
			if v, ok := rows[0][res.Describe().Key.Name]; ok && v != nil {
				if check.Key, err = res.ParseKey(jsonText(v)); err != nil {
					return err
				}
			}
		}
		values, err := res.CheckWrite(ctx, check)
		if err != nil {
			return err
		}
		cols, e := writeColumns(rel, []map[string]any{values}, "", nil)
		if e != nil {
			return e
		}
		b := &builder{rel: rel, req: q, cond: cond}
		body, _ := json.Marshal(values)
		src := "json_populate_record(null::" + table + ", " + b.param(string(body)) + "::json)"
		p.op, p.b = check.Operation, b
		switch {
		case !found && len(cols) == 0:
			p.stmt = "insert into " + table + " as _t default values"
		case !found:
			p.stmt = "insert into " + table + " as _t (" + identList(cols) + ") select " + identList(cols) + " from " + src
		case len(cols) == 0:
			p.stmt = "update " + table + " as _t set " + ident(rel.pk[0]) + " = _t." + ident(rel.pk[0]) + " where " + b.whereSQL(cond)
		default:
			p.stmt = "update " + table + " as _t set (" + identList(cols) + ") = (select " + identList(cols) + " from " + src + ") where " + b.whereSQL(cond)
			if len(cols) == 1 {
				p.stmt = "update " + table + " as _t set " + ident(cols[0]) + " = (select " + ident(cols[0]) + " from " + src + ") where " + b.whereSQL(cond)
			}
		}
		return nil
	}
	q.runWrite(p)
}
