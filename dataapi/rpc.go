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

// checkPermission runs a declared table's permission (and
// Hooks.AuthorizeFunc) for a read, in the request's transaction.
func (a *API) checkPermission(q *request, dq db.Querier, decl *Table, info rest.OperationInfo, data rest.Row) error {
	if decl == nil || !decl.Resource.RowHooked(info.Operation) {
		return nil
	}
	_, err := decl.Resource.CheckWrite(q.r.Context(), &rest.WriteCheck{Operation: info.Operation, Auth: q.auth, DB: dq, Request: q.r, Data: data})
	return err
}

// serveRPC answers /rpc/{function}: POST with JSON arguments, GET and
// HEAD with query arguments.
func (q *request) serveRPC(name string) {
	if q.r.Method != http.MethodGet && q.r.Method != http.MethodHead && q.r.Method != http.MethodPost {
		e := apiErr(http.StatusMethodNotAllowed, "PGRST117", "Unsupported HTTP method: "+q.r.Method)
		e.header = http.Header{"Allow": {"GET, HEAD, POST"}}
		writeError(q.w, e)
		return
	}
	key := q.schema + "." + name
	overloads := q.cat.funcs[key]
	args := map[string]any{}
	var rawBody []byte
	filterQuery := map[string][]string{}
	argNames := map[string]bool{}
	for _, f := range overloads {
		for _, a := range f.args {
			argNames[a.name] = true
		}
	}
	// Prefer: params=single-object passes the whole body as the one
	// json/jsonb parameter of the function (named or not), as PostgREST
	// does; it applies to POST, whose body it is.
	singleObject := q.r.Method == http.MethodPost && q.prefer["params"] == "single-object"
	if q.r.Method == http.MethodPost {
		v, e := q.readJSON()
		if e != nil {
			writeError(q.w, e)
			return
		}
		if singleObject {
			if v == nil && !q.bodyGiven {
				v = map[string]any{}
			}
		}
		switch t := v.(type) {
		case nil:
		case map[string]any:
			args = t
		default:
			args = nil
		}
		rawBody, _ = json.Marshal(v)
		for k, vs := range q.query {
			filterQuery[k] = vs
		}
	} else {
		for k, vs := range q.query {
			if argNames[k] && !reserved[k] && len(vs) > 0 {
				args[k] = vs[len(vs)-1]
				continue
			}
			filterQuery[k] = vs
		}
	}
	var f *function
	var e *Error
	if singleObject {
		f, e = chooseSingleObject(key, overloads)
	} else {
		f, e = chooseFunction(key, overloads, args)
	}
	if e != nil {
		writeError(q.w, e)
		return
	}
	b := &builder{}
	var argSQL []string
	if singleObject {
		argSQL = append(argSQL, b.param(string(rawBody))+"::"+f.args[0].typ)
	} else if len(f.args) == 1 && f.args[0].name == "" {
		// One unnamed parameter takes the whole body.
		if v, ok := args[""]; ok && len(args) == 1 {
			rawBody, _ = json.Marshal(v)
		}
		argSQL = append(argSQL, b.param(string(rawBody))+"::"+f.args[0].typ)
	} else {
		for _, a := range f.args {
			v, ok := args[a.name]
			if !ok {
				continue
			}
			var p string
			switch {
			case v == nil:
				argSQL = append(argSQL, ident(a.name)+" := null::"+a.typ)
				continue
			case a.array:
				if list, ok := v.([]any); ok {
					items := make([]string, len(list))
					for i, it := range list {
						items[i] = jsonText(it)
					}
					p = arrayLiteral(items)
				} else {
					p = jsonText(v)
				}
			default:
				p = jsonText(v)
			}
			argSQL = append(argSQL, ident(a.name)+" := "+b.param(p)+"::"+a.typ)
		}
	}
	call := pgx.Identifier{f.schema, f.name}.Sanitize() + "(" + strings.Join(argSQL, ", ") + ")"
	ctx := q.r.Context()
	caller := q.auth
	// A GET or HEAD, and a POST to a STABLE or IMMUTABLE function, run
	// the function in a read-only transaction, as PostgREST does: a
	// function that writes answers 405 (25006) there.
	readOnly := q.r.Method != http.MethodPost || f.volatile == 's' || f.volatile == 'i'
	// With read replicas a read-only call runs on one (that has replayed
	// past the request's position); a volatile POST answers its commit
	// position.
	run := func(fn func(dq db.Querier) error) error {
		if !readOnly {
			err := q.api.d.Run(q.writeCtx(), caller.DBCaller(), db.RunOpts{}, fn)
			if err == nil {
				q.answerPosition()
			}
			return err
		}
		return q.api.d.Run(q.readCtx(), caller.DBCaller(), db.RunOpts{Tx: true, ReadOnly: true}, func(dq db.Querier) error {
			if _, err := dq.Exec(ctx, "set transaction read only"); err != nil {
				return err
			}
			return fn(dq)
		})
	}
	switch {
	case f.retKind == 'v':
		err := run(func(dq db.Querier) error {
			_, err := dq.Exec(ctx, "select "+call, b.args...)
			return err
		})
		if err != nil {
			q.fail(err)
			return
		}
		q.w.WriteHeader(http.StatusNoContent)
		return
	case !f.retSet && f.retKind != 'c' && f.retKind != 'p':
		var body string
		err := run(func(dq db.Querier) error {
			return dq.QueryRow(ctx, "select coalesce(to_json("+call+")::text, 'null')", b.args...).Scan(&body)
		})
		if err != nil {
			q.fail(err)
			return
		}
		h := q.w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		q.w.WriteHeader(http.StatusOK)
		if q.r.Method != http.MethodHead {
			_, _ = q.w.Write([]byte(body))
		}
		return
	}
	// Rows: SETOF anything or a composite; select, filters, order and
	// paging apply to them.
	items, e := parseSelect(firstOf(filterQuery["select"]))
	if e != nil {
		writeError(q.w, e)
		return
	}
	cond, e := parseConditions(filterQuery)
	if e != nil {
		writeError(q.w, e)
		return
	}
	offset, limit, e := q.page(cond)
	if e != nil {
		writeError(q.w, e)
		return
	}
	scalarSet := f.retKind != 'c' && f.retKind != 'p'
	from := call + " _t"
	sel := ""
	if scalarSet {
		from = call + " _t(v)"
		sel = "_t.v"
	}
	var inner []string
	if !scalarSet {
		// A function returning rows of a table embeds along that table's
		// foreign keys.
		b.rel, b.req, b.cond = q.cat.relationOfType(f.retType, f.schema), q, cond
		if sel, inner, e = b.selectListSQL("_t", b.rel, items, nil, cond); e != nil {
			writeError(q.w, e)
			return
		}
	}
	where := b.whereOn("_t", cond, inner)
	total := "null::int8"
	if q.prefer["count"] == "exact" {
		total = "(select count(*) from " + from + " where " + where + ")"
		q.applied = append(q.applied, "count=exact")
	}
	sql := "with _pgrst_page as (select " + sel + " from " + b.fromSQL("_t", from) + " where " + where
	if len(cond.order) > 0 {
		sql += " order by " + b.orderSQL("_t", cond.order)
	}
	agg := "json_agg(_pgrst_page)"
	if scalarSet {
		agg = "json_agg(_pgrst_page.v)"
	}
	sql += " limit " + strconv.Itoa(limit) + " offset " + strconv.Itoa(offset) + ") select " + total + ", count(*), coalesce(" + agg + ", '[]')::text from _pgrst_page"
	var totalN *int64
	var pageN int64
	var body string
	err := run(func(dq db.Querier) error {
		return dq.QueryRow(ctx, sql, b.args...).Scan(&totalN, &pageN, &body)
	})
	if err != nil {
		q.fail(err)
		return
	}
	if !f.retSet && !q.singular() {
		// A function returning one composite answers one object.
		if pageN == 1 {
			body = strings.TrimSpace(body)
			body = body[1 : len(body)-1]
		} else {
			body = "null"
		}
		h := q.w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		q.w.WriteHeader(http.StatusOK)
		if q.r.Method != http.MethodHead {
			_, _ = q.w.Write([]byte(body))
		}
		return
	}
	q.respondRows(http.StatusOK, offset, pageN, totalN, body, true)
}

func firstOf(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// chooseSingleObject picks the overload taking one json or jsonb
// parameter, named or not, for Prefer: params=single-object (PGRST202
// when none, PGRST203 when several), in PostgREST's words.
func chooseSingleObject(key string, overloads []*function) (*function, *Error) {
	var fits []*function
	for _, f := range overloads {
		if len(f.args) == 1 && !f.args[0].array && (f.args[0].typ == "json" || f.args[0].typ == "jsonb") {
			fits = append(fits, f)
		}
	}
	switch len(fits) {
	case 1:
		return fits[0], nil
	case 0:
		return nil, apiErr(http.StatusNotFound, "PGRST202", "Could not find the function "+key+" in the schema cache").
			withDetails("Searched for the function " + key + " with a single json/jsonb parameter, but no matches were found in the schema cache.")
	}
	var sigs []string
	for _, f := range fits {
		sigs = append(sigs, key+"("+strings.TrimSpace(f.args[0].name+" => "+f.args[0].typ)+")")
	}
	return nil, apiErr(http.StatusMultipleChoices, "PGRST203", "Could not choose the best candidate function between: "+strings.Join(sigs, ", ")).
		withHint("Try renaming the parameters or the function itself in the database so function overloading can be resolved")
}

// chooseFunction picks the overload whose arguments the call names:
// every named argument is one of its parameters and every parameter
// without a default is given (PGRST202 when none, PGRST203 when several).
func chooseFunction(key string, overloads []*function, args map[string]any) (*function, *Error) {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	var fits []*function
	for _, f := range overloads {
		if len(f.args) == 1 && f.args[0].name == "" {
			fits = append(fits, f)
			continue
		}
		ok := true
		for _, n := range names {
			found := false
			for _, a := range f.args {
				found = found || a.name == n
			}
			ok = ok && found
		}
		for _, a := range f.args {
			if _, given := args[a.name]; !given && !a.hasDefault {
				ok = false
			}
		}
		if ok {
			fits = append(fits, f)
		}
	}
	switch len(fits) {
	case 1:
		return fits[0], nil
	case 0:
		with := "without parameters"
		if len(names) > 0 {
			with = "with parameters " + strings.Join(names, ", ")
		}
		e := apiErr(http.StatusNotFound, "PGRST202", "Could not find the function "+key+"("+strings.Join(names, ", ")+") in the schema cache").
			withDetails("Searched for the function " + key + " " + with + " or with a single unnamed json/jsonb parameter, but no matches were found in the schema cache.")
		return nil, e
	}
	var sigs []string
	for _, f := range fits {
		var parts []string
		for _, a := range f.args {
			parts = append(parts, strings.TrimSpace(a.name+" => "+a.typ))
		}
		sigs = append(sigs, key+"("+strings.Join(parts, ", ")+")")
	}
	return nil, apiErr(http.StatusMultipleChoices, "PGRST203", "Could not choose the best candidate function between: "+strings.Join(sigs, ", ")).
		withHint("Try renaming the parameters or the function itself in the database so function overloading can be resolved")
}
