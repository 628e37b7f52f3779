package spec

import (
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// builder assembles one document.
type builder struct {
	opts     *Options
	base     string
	problems problem.Writer

	schemas   *omap // components.schemas
	paths     map[string]*omap
	opIDs     map[string]string // operation id → where it is used
	routes    []Route
	perms     map[string]bool
	responses map[int]bool // error statuses referenced
}

func newBuilder(opts *Options, base string) *builder {
	return &builder{
		opts: opts, base: base,
		problems:  problem.Writer{BaseURL: opts.ProblemBaseURL},
		schemas:   newMap(),
		paths:     map[string]*omap{},
		opIDs:     map[string]string{},
		perms:     map[string]bool{},
		responses: map[int]bool{},
	}
}

// addSchema adds a component schema; a name used twice is an error.
func (b *builder) addSchema(name string, s any) error {
	if _, dup := b.schemas.get(name); dup {
		return fmt.Errorf("%w: two schemas are named %q", ErrDefine, name)
	}
	b.schemas.set(name, s)
	return nil
}

func ref(kind, name string) *omap {
	return newMap().set("$ref", "#/components/"+kind+"/"+name)
}

// httpMethods is the order of operations inside a path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func (b *builder) document() (*omap, error) {
	doc := newMap()
	doc.set("openapi", OpenAPIVersion)
	info := newMap().set("title", b.opts.Info.Title).set("version", b.opts.Info.Version)
	desc := b.opts.Info.Description
	if desc != "" {
		desc += "\n\n"
	}
	desc += "Every route is bound to the caller: row-level security decides which rows exist. " +
		"Errors are RFC 9457 problem details (application/problem+json). " +
		"A method not listed for a path answers 405 with an Allow header; HEAD is served wherever GET is."
	info.set("description", desc)
	doc.set("info", info)
	doc.set("jsonSchemaDialect", "https://json-schema.org/draft/2020-12/schema")
	server := b.base
	if server == "" {
		server = "/"
	}
	doc.set("servers", []any{newMap().set("url", server)})

	names := make([]string, 0, len(b.opts.Resources))
	for n := range b.opts.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	var tags []any
	for _, n := range names {
		if err := b.resource(n, b.opts.Resources[n]); err != nil {
			return nil, err
		}
		d := b.opts.Resources[n].Describe()
		tags = append(tags, newMap().set("name", n).set("description",
			fmt.Sprintf("Rows of the table %s.%s, key %s.", d.Schema, strings.TrimPrefix(d.Table, d.Schema+"."), d.Key.Name)))
	}
	if err := b.metaRoutes(); err != nil {
		return nil, err
	}
	tags = append(tags, newMap().set("name", "meta").set("description", "This description and its reference page."))
	doc.set("tags", tags)

	paths := newMap()
	keys := make([]string, 0, len(b.paths))
	for p := range b.paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		paths.set(p, b.paths[p])
	}
	doc.set("paths", paths)

	comps := newMap()
	if err := b.addSchema("Problem", problemSchema()); err != nil {
		return nil, err
	}
	comps.set("schemas", sortedMap(b.schemas))
	comps.set("responses", b.errorResponses())
	comps.set("securitySchemes", b.securitySchemes())
	doc.set("components", comps)

	if len(b.perms) > 0 {
		pm := newMap()
		keys := make([]string, 0, len(b.perms))
		for k := range b.perms {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		pd, _ := b.opts.Authorizer.(PermissionDescriber)
		for _, k := range keys {
			text := ""
			if pd != nil {
				text = pd.DescribePermission(k)
			}
			pm.set(k, text)
		}
		doc.set("x-service-permissions", pm)
	}
	sort.Slice(b.routes, func(i, j int) bool {
		if b.routes[i].Path != b.routes[j].Path {
			return b.routes[i].Path < b.routes[j].Path
		}
		return b.routes[i].Method < b.routes[j].Method
	})
	return doc, nil
}

func sortedMap(o *omap) *omap {
	keys := append([]string(nil), o.keys...)
	sort.Strings(keys)
	out := newMap()
	for _, k := range keys {
		out.set(k, o.m[k])
	}
	return out
}

// addOperation places op at method and path (relative to the base path).
func (b *builder) addOperation(path, method, id, where string, op *omap) error {
	if prev, dup := b.opIDs[id]; dup {
		return fmt.Errorf("%w: operation id %q is used by %s and %s", ErrDefine, id, prev, where)
	}
	b.opIDs[id] = where
	item, ok := b.paths[path]
	if !ok {
		item = newMap()
		b.paths[path] = item
	}
	m := strings.ToLower(method)
	if _, dup := item.get(m); dup {
		return fmt.Errorf("%w: %s %s is defined twice", ErrDefine, method, path)
	}
	item.set(m, op)
	// Keep the path item's methods in the conventional order.
	sorted := newMap()
	for _, hm := range httpMethods {
		if v, ok := item.get(hm); ok {
			sorted.set(hm, v)
		}
	}
	*item = *sorted
	b.routes = append(b.routes, Route{Method: method, Path: b.base + path, OperationID: id})
	return nil
}

// resource documents every served operation of one resource.
func (b *builder) resource(name string, r *rest.Resource) error {
	d := r.Describe()
	allow := allowOf(b.opts, name)
	entity := componentName(strings.TrimPrefix(rest.OperationID(d.Table, rest.OpGet), "get"))
	if err := b.addSchema(entity, rowSchema(d)); err != nil {
		return err
	}
	for _, oi := range d.Operations {
		op, err := b.operation(name, entity, d, oi, allow)
		if err != nil {
			return err
		}
		path := "/" + name
		if oi.Path != "/" {
			path += oi.Path
		}
		if err := b.addOperation(path, oi.Method, oi.ID, fmt.Sprintf("%s %s", oi.Method, path), op); err != nil {
			return err
		}
	}
	return nil
}

func (b *builder) operation(name, entity string, d *rest.Description, oi rest.OperationInfo, allow []authctx.Allow) (*omap, error) {
	op := newMap()
	op.set("operationId", oi.ID)
	op.set("tags", []any{name})
	summary, description := crudText(name, d, oi.Operation)
	if a := oi.Action; a != nil {
		summary, description = a.Summary, a.Description
		if summary == "" {
			summary = fmt.Sprintf("%s (action on %s)", oi.Operation, name)
		}
	}
	op.set("summary", summary)
	if description != "" {
		op.set("description", description)
	}
	if oi.Action != nil && oi.Action.Deprecated {
		op.set("deprecated", true)
	}

	// Parameters.
	var params []any
	if oi.Item {
		params = append(params, newMap().set("name", d.Key.Name).set("in", "path").set("required", true).
			set("description", "The row's key ("+d.Key.Name+").").
			set("schema", keySchema(d.Key)))
	}
	if oi.Operation == rest.OpList {
		params = append(params, listParams(d)...)
	}
	if oi.Query != nil {
		qp, err := b.queryParams(oi)
		if err != nil {
			return nil, err
		}
		params = append(params, qp...)
	}
	if len(params) > 0 {
		op.set("parameters", params)
	}

	// Request body.
	if oi.Input != nil {
		s, err := b.embedSchema(oi.Input, entity+"_"+string(oi.Operation))
		if err != nil {
			return nil, err
		}
		comp := oi.ID + "Body"
		switch oi.Operation {
		case rest.OpCreate:
			comp = entity + "Create"
		case rest.OpUpdate:
			comp = entity + "Update"
		}
		comp = componentName(comp)
		if err := b.addSchema(comp, s); err != nil {
			return nil, err
		}
		rb := newMap().set("required", true).set("content",
			newMap().set("application/json", newMap().set("schema", ref("schemas", comp))))
		op.set("requestBody", rb)
	}

	// Responses.
	resp, err := b.successResponse(entity, d, oi)
	if err != nil {
		return nil, err
	}
	responses := newMap().set(strconv.Itoa(oi.Status), resp)
	for _, st := range errorStatuses(oi, d.Key) {
		responses.set(strconv.Itoa(st), ref("responses", errorResponseName[st]))
		b.responses[st] = true
	}
	op.set("responses", responses)
	op.set("security", securityFor(allow))
	allowNames := make([]string, len(allow))
	for i, a := range allow {
		allowNames[i] = string(a)
	}
	op.set("x-service-allow", stringsAny(allowNames))
	if oi.Permission != "" {
		op.set("x-service-permission", oi.Permission)
		b.perms[oi.Permission] = true
	}
	if oi.Action != nil && len(oi.Action.Emits) > 0 {
		op.set("x-service-emits", stringsAny(oi.Action.Emits))
	}
	return op, nil
}

func stringsAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func crudText(name string, d *rest.Description, op rest.Operation) (summary, description string) {
	switch op {
	case rest.OpList:
		return "List " + name, fmt.Sprintf("Lists the rows of %s the caller can see (row-level security applies), "+
			"%d per page unless limit says otherwise (at most %d). Filter with <column>=<operator>.<value> on the "+
			"returned columns, order with order=<column>.asc|desc[.nullsfirst|.nullslast], and continue with the "+
			"page's next_cursor as cursor. count=exact adds the number of matching rows.", name, d.DefaultLimit, d.MaxLimit)
	case rest.OpGet:
		return "Get one row of " + name, "Returns the row with the key. A row that does not exist or that row-level security hides answers 404."
	case rest.OpCreate:
		return "Create a row in " + name, "Inserts a row and returns it; the Location header addresses the new row."
	case rest.OpUpdate:
		return "Update a row of " + name, "Sets the given columns of the row with the key and returns the row."
	case rest.OpDelete:
		return "Delete a row of " + name, "Deletes the row with the key."
	}
	return string(op), ""
}

// keySchema is the schema of the key path parameter (never null).
func keySchema(c rest.Column) *omap {
	s := typeSchema(c.TypeName, c.Type)
	return s
}

// Reserved list parameters (rest's list grammar).
var listReserved = map[string]bool{"limit": true, "order": true, "cursor": true, "count": true}

const filterPattern = `^(not\.)?(eq|neq|gt|gte|lt|lte|like|ilike|is|in)\..*$`

func listParams(d *rest.Description) []any {
	var out []any
	for _, c := range d.Columns {
		if listReserved[c.Name] {
			continue // the parameter name is taken by the list grammar
		}
		out = append(out, newMap().set("name", c.Name).set("in", "query").
			set("description", "Filter on "+c.Name+" ("+c.Type+"): [not.]eq|neq|gt|gte|lt|lte|like|ilike|in.(a,b)|is.null|true|false|unknown, then the value. Repeat to AND conditions.").
			set("style", "form").set("explode", true).
			set("schema", newMap().set("type", "array").set("items", newMap().set("type", "string").set("pattern", filterPattern))))
	}
	var cols []string
	for _, c := range d.Columns {
		cols = append(cols, c.Name)
	}
	out = append(out,
		newMap().set("name", "order").set("in", "query").
			set("description", "Comma-separated order terms <column>.asc|desc[.nullsfirst|.nullslast] on "+strings.Join(cols, ", ")+"; the key breaks ties.").
			set("schema", newMap().set("type", "string")),
		newMap().set("name", "limit").set("in", "query").
			set("description", "Page size.").
			set("schema", newMap().set("type", "integer").set("minimum", 1).set("maximum", d.MaxLimit).set("default", d.DefaultLimit)),
		newMap().set("name", "cursor").set("in", "query").
			set("description", "The next_cursor of the previous page (opaque, signed).").
			set("schema", newMap().set("type", "string")),
		newMap().set("name", "count").set("in", "query").
			set("description", "exact adds count, the number of rows matching the filters.").
			set("schema", newMap().set("type", "string").set("enum", []any{"exact"})),
	)
	return out
}

// queryParams turns an action's query schema (an object) into parameters.
func (b *builder) queryParams(oi rest.OperationInfo) ([]any, error) {
	v, err := b.embedSchema(oi.Query, componentName(oi.ID+"Query"))
	if err != nil {
		return nil, err
	}
	o := v.(*omap)
	req := map[string]bool{}
	if r, ok := o.get("required"); ok {
		if ra, ok := r.([]any); ok {
			for _, x := range ra {
				if s, ok := x.(string); ok {
					req[s] = true
				}
			}
		}
	}
	var out []any
	pv, _ := o.get("properties")
	props, _ := pv.(*omap)
	if props == nil {
		return nil, nil
	}
	for _, k := range props.keys {
		p := newMap().set("name", k).set("in", "query")
		if req[k] {
			p.set("required", true)
		}
		if ps, ok := props.m[k].(*omap); ok {
			if t, ok := ps.get("type"); ok && t == "array" {
				p.set("style", "form").set("explode", true)
			}
			if desc, ok := ps.get("description"); ok {
				p.set("description", desc)
			}
		}
		p.set("schema", props.m[k])
		out = append(out, p)
	}
	return out, nil
}

func (b *builder) successResponse(entity string, d *rest.Description, oi rest.OperationInfo) (*omap, error) {
	resp := newMap()
	resp.set("description", http.StatusText(oi.Status))
	var schema any
	switch {
	case oi.Output == nil:
	case oi.Operation == rest.OpList:
		var items any = ref("schemas", entity)
		if oi.Output != d.Row {
			s, err := b.embedSchema(oi.Output, entity+"_list")
			if err != nil {
				return nil, err
			}
			items = s
		}
		page := componentName(entity + "Page")
		if err := b.addSchema(page, pageSchema(items)); err != nil {
			return nil, err
		}
		schema = ref("schemas", page)
	case oi.Output == d.Row:
		schema = ref("schemas", entity)
	default:
		s, err := b.embedSchema(oi.Output, componentName(oi.ID+"Output"))
		if err != nil {
			return nil, err
		}
		schema = s
	}
	if oi.Operation == rest.OpCreate {
		resp.set("headers", newMap().set("Location", newMap().
			set("description", "The path of the new row (when the key column is selected).").
			set("schema", newMap().set("type", "string"))))
	}
	if schema != nil {
		resp.set("content", newMap().set("application/json", newMap().set("schema", schema)))
	}
	return resp, nil
}

func pageSchema(items any) *omap {
	return newMap().set("type", "object").
		set("required", []any{"items", "next_cursor"}).
		set("properties", newMap().
			set("items", newMap().set("type", "array").set("items", items)).
			set("next_cursor", newMap().set("type", []any{"string", "null"}).
				set("description", "Pass as cursor to read the next page; null on the last page.")).
			set("count", newMap().set("type", "integer").set("format", "int64").
				set("description", "Rows matching the filters; present with count=exact.")))
}

// textKeys are key types every path segment is a valid value of.
var textKeys = map[string]bool{"text": true, "varchar": true, "bpchar": true, "name": true, "citext": true}

// errorStatuses lists the error statuses an operation can answer with.
func errorStatuses(oi rest.OperationInfo, key rest.Column) []int {
	write := oi.Method != http.MethodGet
	takesBody := oi.Operation == rest.OpCreate || oi.Operation == rest.OpUpdate ||
		(oi.Action != nil && (oi.Input != nil || oi.Method != http.MethodGet))
	badKey := oi.Item && !textKeys[key.TypeName]
	bad := oi.Operation == rest.OpList || badKey || oi.Query != nil || takesBody
	var out []int
	if bad {
		out = append(out, http.StatusBadRequest)
	}
	out = append(out, http.StatusUnauthorized, http.StatusForbidden)
	if oi.Item {
		out = append(out, http.StatusNotFound)
	}
	if write {
		out = append(out, http.StatusConflict)
	}
	if takesBody {
		out = append(out, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType)
	}
	if write && oi.Operation != rest.OpDelete {
		out = append(out, http.StatusUnprocessableEntity)
	}
	out = append(out, http.StatusInternalServerError, http.StatusServiceUnavailable)
	return out
}

var errorResponseName = map[int]string{
	http.StatusBadRequest:            "BadRequest",
	http.StatusUnauthorized:          "Unauthorized",
	http.StatusForbidden:             "PermissionDenied",
	http.StatusNotFound:              "NotFound",
	http.StatusMethodNotAllowed:      "MethodNotAllowed",
	http.StatusConflict:              "Conflict",
	http.StatusRequestEntityTooLarge: "PayloadTooLarge",
	http.StatusUnsupportedMediaType:  "UnsupportedMediaType",
	http.StatusUnprocessableEntity:   "Unprocessable",
	http.StatusInternalServerError:   "Unexpected",
	http.StatusServiceUnavailable:    "Unavailable",
}

// securityFor maps a guard's allow list to security requirements: any one
// requirement admits the request.
func securityFor(allow []authctx.Allow) []any {
	has := func(x authctx.Allow) bool {
		for _, a := range allow {
			if a == x {
				return true
			}
		}
		return false
	}
	var out []any
	if has(authctx.AllowUser) || has(authctx.AllowAnonymous) {
		out = append(out, newMap().set(SchemeBearer, []any{}), newMap().set(SchemeCookie, []any{}))
	}
	if has(authctx.AllowService) {
		out = append(out, newMap().set(SchemeAPIKey, []any{}))
	}
	if has(authctx.AllowAnon) {
		out = append(out, newMap()) // no credential
	}
	return out
}

func (b *builder) securitySchemes() *omap {
	cookie := b.opts.CookieName
	if cookie == "" {
		cookie = "sb-<ref>-auth-token"
		if name, err := authctx.CookieNameFor(b.opts.ProjectURL); err == nil && b.opts.ProjectURL != "" {
			cookie = name
		}
	}
	return newMap().
		set(SchemeBearer, newMap().set("type", "http").set("scheme", "bearer").set("bearerFormat", "JWT").
			set("description", "An access token (ES256 or RS256) verified locally against the project's JWKS.")).
		set(SchemeCookie, newMap().set("type", "apiKey").set("in", "cookie").set("name", cookie).
			set("description", "The browser session written by the Supabase SSR client (possibly split into "+cookie+".0, .1, …). "+
				"Unsafe methods relying on it are refused cross-site with 403 CROSS_SITE_REQUEST.")).
		set(SchemeAPIKey, newMap().set("type", "apiKey").set("in", "header").set("name", "apikey").
			set("description", "The project's secret key, for service callers."))
}

// metaRoutes documents the description's own routes.
func (b *builder) metaRoutes() error {
	add := func(path, id, summary, media string, schema *omap) error {
		content := newMap().set("schema", schema)
		op := newMap().set("operationId", id).set("tags", []any{"meta"}).set("summary", summary).
			set("responses", newMap().set("200", newMap().set("description", "OK").
				set("content", newMap().set(media, content)))).
			set("security", []any{newMap()})
		return b.addOperation(path, http.MethodGet, id, "meta "+path, op)
	}
	if err := add(PathJSON, "getOpenAPIJSON", "This OpenAPI document as JSON", "application/json", newMap().set("type", "object")); err != nil {
		return err
	}
	if err := add(PathYAML, "getOpenAPIYAML", "This OpenAPI document as YAML", "application/yaml", newMap().set("type", "string")); err != nil {
		return err
	}
	return add(PathDocs, "getAPIReference", "The API reference page (HTML)", "text/html", newMap().set("type", "string"))
}
