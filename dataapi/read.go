package dataapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/rest"
)

// request is one data API request being served.
type request struct {
	api     *API
	cat     *catalogue // the catalogue when the request began
	w       http.ResponseWriter
	r       *http.Request
	auth    authctx.Auth
	query   url.Values
	schema  string
	relName string
	prefer  map[string]string
	applied []string
	// bodyGiven reports that readJSON read a body that is not empty (a
	// JSON null included).
	bodyGiven bool
	// pos is the position the request asks its reads to see (with read
	// replicas); written receives a write's commit position.
	pos     db.Position
	written *db.Position
}

func (q *request) anon() bool { return q.auth.Kind == authctx.KindAnon || q.auth.Kind == "" }

func (q *request) fail(err error) {
	e := toError(err, q.anon())
	if e.Status >= 500 && e.cause != nil {
		q.api.log.Error("dataapi: request failed", "path", q.r.URL.Path, "error", e.cause)
	}
	writeError(q.w, e)
}

// conditions are the parsed filters, logic trees, order and paging of a
// request.
type conditions struct {
	filters []filter
	logic   []*logic
	order   []orderTerm
	limit   int // -1 none
	offset  int
	// embedded holds the conditions of embedded resources by alias (or
	// name): films.year=eq.2000, films.order=year.desc.
	embedded map[string]*conditions
}

// sub returns the conditions of the embedded resource at path, made on
// first use.
func (c *conditions) sub(path []string) *conditions {
	cur := c
	for _, p := range path {
		if cur.embedded == nil {
			cur.embedded = map[string]*conditions{}
		}
		n := cur.embedded[p]
		if n == nil {
			n = &conditions{limit: -1}
			cur.embedded[p] = n
		}
		cur = n
	}
	return cur
}

// reserved query parameters (never filters).
var reserved = map[string]bool{"select": true, "order": true, "limit": true, "offset": true,
	"columns": true, "on_conflict": true, "or": true, "and": true, "not.or": true, "not.and": true}

// parseConditions reads filters, logic, order, limit and offset.
func parseConditions(q url.Values) (*conditions, *Error) {
	c := &conditions{limit: -1}
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys) // stable SQL text for the statement cache
	for _, k := range keys {
		for _, v := range q[k] {
			target, param := c, k
			if !reserved[k] && embeddedKey(k) {
				path, last := splitEmbeddedKey(k)
				target, param = c.sub(path), last
			}
			if err := target.add(param, v); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// add reads one parameter into c.
func (c *conditions) add(k, v string) *Error {
	switch k {
	case "select", "columns", "on_conflict":
	case "order":
		o, err := parseOrder(v)
		if err != nil {
			return err
		}
		c.order = append(c.order, o...)
	case "limit":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return parseErr("the limit parameter", "limit takes a non-negative integer")
		}
		c.limit = n
	case "offset":
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return parseErr("the offset parameter", "offset takes a non-negative integer")
		}
		c.offset = n
	case "or", "and", "not.or", "not.and":
		l, err := parseLogic(strings.HasSuffix(k, "or"), strings.HasPrefix(k, "not."), v)
		if err != nil {
			return err
		}
		c.logic = append(c.logic, l)
	default:
		f, ok := parseField(k, false)
		if !ok {
			return parseErr("the filter "+k, "cannot read the column")
		}
		flt, err := parseFilterValue(f, v)
		if err != nil {
			return err
		}
		c.filters = append(c.filters, flt)
	}
	return nil
}

// splitEmbeddedKey splits films.actors.name into the path [films actors]
// and the parameter name (not.or and not.and stay whole).
func splitEmbeddedKey(k string) ([]string, string) {
	head, arrow := k, ""
	if i := strings.Index(k, "->"); i >= 0 {
		head, arrow = k[:i], k[i:]
	}
	segs := strings.Split(head, ".")
	n := len(segs) - 1
	last := segs[n] + arrow
	if n >= 2 && segs[n-1] == "not" && (segs[n] == "or" || segs[n] == "and") {
		n--
		last = "not." + segs[n+1]
	}
	return segs[:n], last
}

// embeddedKey reports a parameter addressing an embedded resource
// (films.year, films.order): a dot in the name before any JSON arrow.
func embeddedKey(k string) bool {
	if i := strings.Index(k, "->"); i >= 0 {
		k = k[:i]
	}
	return strings.Contains(k, ".") && !strings.HasPrefix(k, `"`)
}

// whereSQL renders the conditions on alias _t ("true" when none).
func (b *builder) whereSQL(c *conditions) string { return b.whereOn("_t", c, nil) }

// whereOn renders conditions on alias q, with extra fragments.
func (b *builder) whereOn(q string, c *conditions, extra []string) string {
	parts := extra
	for _, f := range c.filters {
		parts = append(parts, b.filterSQL(q, f))
	}
	for _, l := range c.logic {
		parts = append(parts, b.logicSQL(q, l))
	}
	if len(parts) == 0 {
		return "true"
	}
	return strings.Join(parts, " and ")
}

// selectSQL renders the select list on alias _t of b.rel, with its
// embedded resources (their conditions from b.cond). allowed, when not
// nil, lists the only columns a declared table serves (* expands to them).
func (b *builder) selectSQL(items []selectItem, allowed []string) (string, *Error) {
	sel, _, e := b.selectListSQL("_t", b.rel, items, allowed, b.cond)
	return sel, e
}

// selectListSQL renders the select list of relation rel on alias q. It
// returns the conditions !inner embeds add to q's WHERE.
func (b *builder) selectListSQL(q string, rel *relation, items []selectItem, allowed []string, cond *conditions) (string, []string, *Error) {
	sel, _, inner, e := b.selectKeysSQL(q, rel, items, allowed, cond)
	return sel, inner, e
}

// selectKeysSQL is selectListSQL that also returns the key (output
// column name) of each column rendered, in order: what a spread embed
// lifts into its parent.
func (b *builder) selectKeysSQL(q string, rel *relation, items []selectItem, allowed []string, cond *conditions) (string, []string, []string, *Error) {
	var parts, keys, inner []string
	used := map[string]bool{}
	for _, it := range items {
		switch {
		case it.embed != nil:
			name := it.alias
			if name == "" {
				name = it.embed.rel
			}
			used[name] = true
			var sub *conditions
			if cond != nil && cond.embedded != nil {
				sub = cond.embedded[name]
			}
			exprs, names, where, e := b.embedSQL(q, rel, it.embed, sub, name)
			if e != nil {
				return "", nil, nil, e
			}
			if where != "" {
				inner = append(inner, where)
			}
			parts = append(parts, exprs...)
			keys = append(keys, names...)
		case it.agg != "":
			if b.req == nil || !b.req.api.aggs {
				return "", nil, nil, apiErr(http.StatusBadRequest, "PGRST123", "Use of aggregate functions is not allowed").
					withHint("Turn them on with aggregates in the data API's configuration.")
			}
			expr := "*"
			if it.field.name != "" {
				if e := b.checkColumn(it.field.name, allowed); e != nil {
					return "", nil, nil, e
				}
				expr = b.fieldSQL(q, it.field)
			} else if it.agg != "count" {
				return "", nil, nil, parseErr("the select parameter", it.agg+"() needs a column, as in amount."+it.agg+"()")
			}
			name := it.alias
			if name == "" {
				name = it.agg
			}
			if b.hoisting[q] {
				// In a to-one spread the aggregate is the parent's: this
				// level selects its input (for count(), whether a row is
				// related).
				if expr == "*" {
					expr = "1"
				}
				parts = append(parts, expr+" as "+ident(name))
				keys = append(keys, name)
				b.hoist(q, name, hoistedAgg{it.agg, it.aggCast})
				continue
			}
			s := it.agg + "(" + expr + ")"
			if it.aggCast != "" {
				s = "(" + s + ")::" + castSQL(it.aggCast)
			}
			parts = append(parts, s+" as "+ident(name))
			keys = append(keys, name)
			if b.aggregated == nil {
				b.aggregated = map[string]bool{}
			}
			b.aggregated[q] = true
		case it.star && allowed != nil:
			for _, c := range allowed {
				parts = append(parts, q+"."+ident(c))
				keys = append(keys, c)
			}
		case it.star:
			parts = append(parts, q+".*")
			if rel != nil {
				for _, c := range rel.columns {
					keys = append(keys, c.name)
				}
			}
		default:
			if e := b.checkColumn(it.field.name, allowed); e != nil {
				return "", nil, nil, e
			}
			name := it.alias
			if name == "" {
				name = it.field.key()
			}
			expr := b.fieldSQL(q, it.field)
			parts = append(parts, expr+" as "+ident(name))
			keys = append(keys, name)
			if b.groupBy == nil {
				b.groupBy = map[string][]string{}
			}
			b.groupBy[q] = append(b.groupBy[q], expr)
		}
	}
	if cond != nil {
		for name := range cond.embedded {
			if !used[name] {
				return "", nil, nil, apiErr(http.StatusBadRequest, "PGRST108", "'"+name+"' is not an embedded resource in this request").
					withHint("Verify that '" + name + "' is included in the 'select' query parameter.")
			}
		}
	}
	if len(parts) == 0 {
		return "", nil, nil, parseErr("the select parameter", "nothing selected")
	}
	return strings.Join(parts, ", "), keys, inner, nil
}

// checkColumn refuses, on a declared table, a column outside its select
// (named as Postgres names a missing column: 42703).
func (b *builder) checkColumn(name string, allowed []string) *Error {
	if allowed == nil {
		return nil
	}
	for _, c := range allowed {
		if c == name {
			return nil
		}
	}
	rel := ""
	if b.rel != nil {
		rel = b.rel.name + "."
	}
	return apiErr(http.StatusBadRequest, "42703", "column "+rel+name+" does not exist")
}

// checkConditions applies checkColumn to every column conditions name.
func (b *builder) checkConditions(c *conditions, allowed []string) *Error {
	if allowed == nil {
		return nil
	}
	var walk func(l *logic) *Error
	walk = func(l *logic) *Error {
		for _, f := range l.filters {
			if e := b.checkColumn(f.field.name, allowed); e != nil {
				return e
			}
		}
		for _, ch := range l.children {
			if e := walk(ch); e != nil {
				return e
			}
		}
		return nil
	}
	if e := walk(&logic{filters: c.filters, children: c.logic}); e != nil {
		return e
	}
	for _, o := range c.order {
		if e := b.checkColumn(o.field.name, allowed); e != nil {
			return e
		}
	}
	return nil
}

var rangeHeader = regexp.MustCompile(`^\s*(?:items=)?(\d+)-(\d*)\s*$`)

// page computes offset and limit from the parameters, the Range header and
// max rows.
func (q *request) page(c *conditions) (offset, limit int, e *Error) {
	offset, limit = c.offset, c.limit
	if h := q.r.Header.Get("Range"); h != "" && (q.r.Method == http.MethodGet || q.r.Method == http.MethodHead) {
		m := rangeHeader.FindStringSubmatch(h)
		if m == nil {
			return 0, 0, apiErr(http.StatusRequestedRangeNotSatisfiable, "PGRST103", "Requested range not satisfiable").
				withDetails("The Range header must read first-last, as in 0-9")
		}
		lo, _ := strconv.Atoi(m[1])
		offset += lo
		if m[2] != "" {
			hi, _ := strconv.Atoi(m[2])
			if hi < lo {
				return 0, 0, apiErr(http.StatusRequestedRangeNotSatisfiable, "PGRST103", "Requested range not satisfiable")
			}
			if n := hi - lo + 1; limit < 0 || n < limit {
				limit = n
			}
		}
	}
	if limit < 0 || limit > q.api.maxRows {
		limit = q.api.maxRows
	}
	return offset, limit, nil
}

// relation finds the addressed table or view (PGRST205 when none).
func (q *request) relation() (*relation, *Table, *Error) {
	key := q.schema + "." + q.relName
	rel := q.cat.rels[key]
	if rel == nil {
		e := apiErr(http.StatusNotFound, "PGRST205", "Could not find the table '"+key+"' in the schema cache")
		var names []string
		for k := range q.cat.rels {
			if strings.HasPrefix(k, q.schema+".") {
				names = append(names, k)
			}
		}
		if s := suggest(key, names); s != "" {
			e.withHint("Perhaps you meant the table '" + s + "'")
		}
		return nil, nil, e
	}
	return rel, q.api.declared[key], nil
}

// serveTable dispatches a table request by method.
func (q *request) serveTable() {
	rel, decl, e := q.relation()
	if e != nil {
		writeError(q.w, e)
		return
	}
	if decl != nil {
		if p := authctx.Admit(q.auth, decl.Allow...); p != nil {
			status := p.Status
			if status == 0 {
				status = http.StatusForbidden
			}
			writeError(q.w, apiErr(status, "PGRST302", p.Detail))
			return
		}
	}
	switch q.r.Method {
	case http.MethodGet, http.MethodHead:
		q.read(rel, decl)
	case http.MethodPost:
		q.insert(rel, decl)
	case http.MethodPatch:
		q.update(rel, decl)
	case http.MethodDelete:
		q.remove(rel, decl)
	case http.MethodPut:
		q.put(rel, decl)
	default:
		e := apiErr(http.StatusMethodNotAllowed, "PGRST117", "Unsupported HTTP method: "+q.r.Method)
		e.header = http.Header{"Allow": {"GET, HEAD, POST, PUT, PATCH, DELETE"}}
		writeError(q.w, e)
	}
}

// allowedColumns returns a declared table's served columns (nil: all).
func allowedColumns(decl *Table) []string {
	if decl == nil {
		return nil
	}
	d := decl.Resource.Describe()
	out := make([]string, len(d.Columns))
	for i, c := range d.Columns {
		out[i] = c.Name
	}
	return out
}

// declaredOp reports whether a declared table serves op (nil: yes).
func declaredOp(decl *Table, ops ...rest.Operation) (rest.OperationInfo, bool) {
	if decl == nil {
		return rest.OperationInfo{}, true
	}
	for _, op := range ops {
		if info, ok := decl.Resource.Describe().Operation(op); ok {
			return info, true
		}
	}
	return rest.OperationInfo{}, false
}

func notServed(method string) *Error {
	return apiErr(http.StatusMethodNotAllowed, "PGRST117", "Unsupported HTTP method: "+method).
		withDetails("This table does not serve the operation.")
}

const objectType = "application/vnd.pgrst.object+json"

func (q *request) singular() bool {
	return strings.Contains(q.r.Header.Get("Accept"), objectType)
}

// stripNulls reports Accept: application/vnd.pgrst.array+json;nulls=stripped
// (or the object type with it): keys whose value is null are left out.
func (q *request) stripNulls() bool {
	a := strings.ReplaceAll(q.r.Header.Get("Accept"), " ", "")
	return strings.Contains(a, "nulls=stripped") && (strings.Contains(a, objectType) || strings.Contains(a, "application/vnd.pgrst.array+json"))
}

// aggSQL is the JSON array of rows of alias a, nulls stripped when asked.
func (q *request) aggSQL(a string) string {
	if q.stripNulls() {
		return "coalesce(json_strip_nulls(json_agg(" + a + ")), '[]')"
	}
	return "coalesce(json_agg(" + a + "), '[]')"
}

// read answers GET and HEAD on a table or view: one statement, sent with
// the caller's settings in one round trip.
func (q *request) read(rel *relation, decl *Table) {
	info, ok := declaredOp(decl, rest.OpList, rest.OpGet)
	if !ok {
		writeError(q.w, notServed(q.r.Method))
		return
	}
	after := decl != nil && decl.Resource.AfterHook(info.Operation)
	hooked := after || decl != nil && decl.Resource.RowHooked(info.Operation)
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
	offset, limit, e := q.page(cond)
	if e != nil {
		writeError(q.w, e)
		return
	}
	allowed := allowedColumns(decl)
	b := &builder{rel: rel, req: q, cond: cond}
	if e := b.checkConditions(cond, allowed); e != nil {
		writeError(q.w, e)
		return
	}
	sel, inner, e := b.selectListSQL("_t", rel, items, allowed, cond)
	if e != nil {
		writeError(q.w, e)
		return
	}
	from := pgx.Identifier{rel.schema, rel.name}.Sanitize() + " _t"
	where := b.whereOn("_t", cond, inner)
	countMode := q.prefer["count"]
	total := "null::int8"
	switch countMode {
	case "exact":
		total = "(select count(*) from " + from + " where " + where + ")"
	case "estimated":
		total = "(select count(*) from (select 1 from " + from + " where " + where + " limit " + strconv.Itoa(q.api.maxRows+1) + ") _c)"
	case "planned", "":
	default:
		countMode = ""
	}
	sql := "with _pgrst_page as (select " + sel + " from " + b.fromSQL("_t", from) + " where " + where
	sql += b.groupSQL("_t")
	if len(cond.order) > 0 {
		sql += " order by " + b.orderSQL("_t", cond.order)
	}
	// limit and offset are integers the server computed: literals, so
	// that the plan knows the page size.
	sql += " limit " + strconv.Itoa(limit) + " offset " + strconv.Itoa(offset) + ")" +
		" select " + total + ", count(*), " + q.aggSQL("_pgrst_page") + "::text from _pgrst_page"
	var totalN *int64
	var pageN int64
	var body string
	var planned int64 = -1
	run := func(dq db.Querier) error {
		if err := q.api.checkPermission(q, dq, decl, info, nil); err != nil {
			return err
		}
		if err := dq.QueryRow(q.r.Context(), sql, b.args...).Scan(&totalN, &pageN, &body); err != nil {
			return err
		}
		if after {
			out, n, err := q.afterRead(dq, decl, info.Operation, body, totalN)
			if err != nil {
				return err
			}
			body, pageN = out, n
		}
		if countMode == "planned" || (countMode == "estimated" && totalN != nil && *totalN > int64(q.api.maxRows)) {
			n, err := plannedCount(q, dq, "select "+sel+" from "+b.fromSQL("_t", from)+" where "+where, b.args)
			if err != nil {
				return err
			}
			planned = n
		}
		return nil
	}
	var err error
	scope := declScope(decl, info.Operation)
	if hooked {
		// A permission check or AuthorizeFunc may write: the primary.
		scope.Tx = true
		err = q.decided(func() error { return q.api.d.Run(q.readCtx(), q.auth.DBCaller(), scope, run) })
	} else {
		scope.ReadOnly = true
		err = q.api.d.Run(q.readCtx(), q.auth.DBCaller(), scope, run)
	}
	if err != nil {
		q.fail(err)
		return
	}
	if planned >= 0 {
		totalN = &planned
	}
	if countMode != "" {
		q.applied = append(q.applied, "count="+countMode)
	}
	q.respondRows(http.StatusOK, offset, pageN, totalN, body, true)
}

// afterRead runs a declared table's AfterGetFunc on each row read (op
// get) or its AfterListFunc on the page (op list), in the read's
// transaction, and returns the JSON array answered and its length. The
// rows are as select= shaped them. An AfterListFunc answers rows: a
// *rest.Page (its items), a JSON array, or an object with an items
// array.
func (q *request) afterRead(dq db.Querier, decl *Table, op rest.Operation, body string, total *int64) (string, int64, error) {
	rows, err := decodeRows(body, nil)
	if err != nil {
		return "", 0, err
	}
	res := decl.Resource
	check := &rest.WriteCheck{Operation: op, Auth: q.auth, DB: dq, Request: q.r}
	var items []any
	if op == rest.OpGet {
		for _, row := range rows {
			check.Row = row
			out, err := res.AfterRow(q.r.Context(), check)
			if err != nil {
				return "", 0, err
			}
			items = append(items, out)
		}
	} else {
		out, err := res.AfterPage(q.r.Context(), check, &rest.Page{Items: rows, Count: total})
		if err != nil {
			return "", 0, err
		}
		if items, err = pageItems(out); err != nil {
			return "", 0, err
		}
	}
	if items == nil {
		items = []any{}
	}
	raw, err := json.Marshal(items)
	if err != nil {
		return "", 0, err
	}
	return string(raw), int64(len(items)), nil
}

// pageItems reads the rows of what an AfterListFunc returned.
func pageItems(out any) ([]any, error) {
	switch p := out.(type) {
	case *rest.Page:
		if p == nil {
			return nil, nil
		}
		return rowsAny(p.Items), nil
	case rest.Page:
		return rowsAny(p.Items), nil
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	switch t := v.(type) {
	case []any:
		return t, nil
	case map[string]any:
		if items, ok := t["items"].([]any); ok {
			return items, nil
		}
	}
	return nil, apiErr(http.StatusInternalServerError, "PGRST000", "The table's AfterListFunc returned a value the data API cannot answer as rows").
		withHint("Return the page, a JSON array, or an object with an items array.")
}

func rowsAny(rows []rest.Row) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}

// plannedCount is the planner's estimate of the rows the read without
// its page matches (a second statement, as PostgREST sends). sql uses
// every parameter of args.
func plannedCount(q *request, dq db.Querier, sql string, args []any) (int64, error) {
	var plan []byte
	if err := dq.QueryRow(q.r.Context(), "explain (format json) "+sql, args...).Scan(&plan); err != nil {
		return 0, err
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) == 0 {
		return 0, err
	}
	return int64(out[0].Plan.Rows), nil
}

// respondRows writes a JSON array (or the one object asked for with
// application/vnd.pgrst.object+json), with Content-Range and the status
// PostgREST answers: 206 for a part of a counted set.
func (q *request) respondRows(status, offset int, pageN int64, total *int64, body string, isRead bool) {
	h := q.w.Header()
	totalText := "*"
	if total != nil {
		totalText = strconv.FormatInt(*total, 10)
	}
	if pageN == 0 {
		h.Set("Content-Range", "*/"+totalText)
	} else {
		h.Set("Content-Range", strconv.Itoa(offset)+"-"+strconv.FormatInt(int64(offset)+pageN-1, 10)+"/"+totalText)
	}
	if isRead && total != nil {
		switch {
		case int64(offset) > *total && *total > 0:
			writeError(q.w, apiErr(http.StatusRequestedRangeNotSatisfiable, "PGRST103", "Requested range not satisfiable").
				withDetails("An offset of "+strconv.Itoa(offset)+" was requested, but there are only "+totalText+" rows."))
			return
		case pageN < *total:
			status = http.StatusPartialContent
		}
	}
	if len(q.applied) > 0 {
		h.Set("Preference-Applied", strings.Join(q.applied, ", "))
	}
	ct := "application/json; charset=utf-8"
	if q.stripNulls() && !q.singular() {
		ct = "application/vnd.pgrst.array+json;nulls=stripped; charset=utf-8"
	}
	if q.singular() {
		if pageN != 1 {
			writeError(q.w, apiErr(http.StatusNotAcceptable, "PGRST116", "Cannot coerce the result to a single JSON object").
				withDetails("The result contains "+strconv.FormatInt(pageN, 10)+" rows"))
			return
		}
		body = strings.TrimSpace(body)
		body = body[1 : len(body)-1]
		ct = objectType + "; charset=utf-8"
	}
	if q.wantsCSV() && !q.singular() && body != "" {
		out, err := toCSV(body)
		if err != nil {
			q.fail(err)
			return
		}
		body, ct = out, "text/csv; charset=utf-8"
		if body == "" {
			status = http.StatusOK
			h.Set("Content-Type", ct)
			h.Set("Content-Length", "0")
			q.w.WriteHeader(status)
			return
		}
	}
	if body == "" || status == http.StatusNoContent {
		q.w.WriteHeader(status)
		return
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	q.w.WriteHeader(status)
	if q.r.Method != http.MethodHead {
		_, _ = q.w.Write([]byte(body))
	}
}

// declScope is the database options (the statement timeout) a declared
// table's resource gives op; the zero value for other tables.
func declScope(decl *Table, op rest.Operation) db.RunOpts {
	if decl == nil {
		return db.RunOpts{}
	}
	return decl.Resource.Scope(op)
}
