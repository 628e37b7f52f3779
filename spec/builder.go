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
	opts     *Config
	base     string
	problems problem.Writer

	schemas   *omap // components.schemas
	paths     map[string]*pathItem
	opIDs     map[string]string // operation id → where it is used
	streamIDs map[string]string // segment → its stream's operation id
	perms     map[string]bool
	responses map[int]bool // error statuses referenced
}

func newBuilder(opts *Config, base string) *builder {
	return &builder{
		opts: opts, base: base,
		problems:  problem.Writer{BaseURL: opts.ProblemBaseURL},
		schemas:   newMap(),
		paths:     map[string]*pathItem{},
		opIDs:     map[string]string{},
		streamIDs: map[string]string{},
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

func (b *builder) document() (*document, error) {
	doc := &document{OpenAPI: OpenAPIVersion, Info: info{Title: b.opts.Info.Title, Version: b.opts.Info.Version}}
	desc := b.opts.Info.Description
	if desc != "" {
		desc += "\n\n"
	}
	desc += "Every route is bound to the caller: row-level security decides which rows exist. " +
		"Errors are RFC 9457 problem details (application/problem+json). " +
		"A method not listed for a path answers 405 with an Allow header; HEAD is served wherever GET is."
	doc.Info.Description = desc
	if c := b.opts.Info.Contact; c != nil {
		doc.Info.Contact = &contact{Name: c.Name, URL: c.URL, Email: c.Email}
	}
	if l := b.opts.Info.License; l != nil {
		doc.Info.License = &license{Name: l.Name, Identifier: l.Identifier}
		if l.Identifier == "" {
			doc.Info.License.URL = l.URL
		}
	}
	doc.JSONSchemaDialect = "https://json-schema.org/draft/2020-12/schema"
	srv := b.base
	if srv == "" {
		srv = "/"
	}
	doc.Servers = []server{{URL: srv}}

	names := make([]string, 0, len(b.opts.Resources))
	for n := range b.opts.Resources {
		names = append(names, n)
	}
	sort.Strings(names)
	var tags []tag
	for _, n := range names {
		if err := b.resource(n, b.opts.Resources[n]); err != nil {
			return nil, err
		}
		if es := b.opts.Streams[n]; es != nil {
			if err := b.stream(n, b.opts.Resources[n], es); err != nil {
				return nil, err
			}
		}
		d := b.opts.Resources[n].Describe()
		tags = append(tags, tag{Name: n, Description: fmt.Sprintf("Rows of the table %s.%s, key %s.",
			d.Schema, strings.TrimPrefix(d.Table, d.Schema+"."), d.Key.Name) + withoutRLSText(d)})
	}
	hnames := make([]string, 0, len(b.opts.Handlers))
	for n := range b.opts.Handlers {
		hnames = append(hnames, n)
	}
	sort.Strings(hnames)
	for _, n := range hnames {
		if err := b.handler(n, b.opts.Handlers[n]); err != nil {
			return nil, err
		}
		tags = append(tags, tag{Name: n, Description: "Routes of " + n + "."})
	}
	if err := b.metaRoutes(); err != nil {
		return nil, err
	}
	doc.Tags = append(tags, tag{Name: "meta", Description: "This description and its reference page."})

	paths := newOrdered[*pathItem]()
	keys := make([]string, 0, len(b.paths))
	for p := range b.paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		paths.set(p, b.paths[p])
	}
	doc.Paths = paths

	if err := b.addSchema("Problem", problemSchema()); err != nil {
		return nil, err
	}
	doc.Components = components{Schemas: sortedMap(b.schemas), Responses: b.errorResponses(),
		SecuritySchemes: b.usedSchemes(b.securitySchemes())}

	if len(b.perms) > 0 {
		pm := newOrdered[string]()
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
		doc.Permissions = pm
	}
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
func (b *builder) addOperation(path, method, id, where string, op *operation) error {
	if prev, dup := b.opIDs[id]; dup {
		return fmt.Errorf("%w: operation id %q is used by %s and %s", ErrDefine, id, prev, where)
	}
	b.opIDs[id] = where
	item, ok := b.paths[path]
	if !ok {
		item = &pathItem{ops: map[string]*operation{}}
		b.paths[path] = item
	}
	m := strings.ToLower(method)
	if _, dup := item.ops[m]; dup {
		return fmt.Errorf("%w: %s %s is defined twice", ErrDefine, method, path)
	}
	item.ops[m] = op // written in the conventional method order
	return nil
}

// resource documents every served operation of one resource.
func (b *builder) resource(name string, r *rest.Resource) error {
	d := r.Describe()
	allow := allowOf(b.opts, name)
	entity := componentName(strings.TrimPrefix(rest.OperationID(d.Table, rest.OpGet), "get"))
	row, err := rowSchema(d)
	if err != nil {
		return err
	}
	if err := b.addSchema(entity, row); err != nil {
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

func (b *builder) operation(name, entity string, d *rest.Description, oi rest.OperationInfo, allow []authctx.Allow) (*operation, error) {
	op := &operation{ID: oi.ID, Tags: []string{name}}
	summary, description := crudText(name, d, oi.Operation)
	if a := oi.Action; a != nil {
		summary, description = a.Summary, a.Description
		if summary == "" {
			summary = fmt.Sprintf("%s (action on %s)", oi.Operation, name)
		}
		if description == "" {
			description = fmt.Sprintf("Action %s of %s: %s %s.", oi.Operation, name, oi.Method, oi.Path)
		}
	}
	op.Summary, op.Description = summary, description+withoutRLSText(d)
	op.Deprecated = oi.Action != nil && oi.Action.Deprecated
	op.NoRLS = d.WithoutRLS

	// Parameters.
	if oi.Item {
		op.Parameters = append(op.Parameters, &parameter{Name: d.Key.Name, In: "path", Required: ptr(true),
			Description: "The row's key (" + d.Key.Name + ").", Schema: keySchema(d.Key)})
	}
	if oi.Operation == rest.OpList {
		op.Parameters = append(op.Parameters, listParams(d)...)
	}
	if oi.Query != nil {
		qp, err := b.queryParams(oi)
		if err != nil {
			return nil, err
		}
		op.Parameters = append(op.Parameters, qp...)
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
		op.RequestBody = &requestBody{Required: true,
			Content: newOrdered[*mediaType]().set("application/json", &mediaType{Schema: ref("schemas", comp), Examples: bodyExamples(oi.Input)})}
	}

	// Responses.
	resp, err := b.successResponse(entity, d, oi)
	if err != nil {
		return nil, err
	}
	op.Responses = newOrdered[any]().set(strconv.Itoa(oi.Status), resp)
	for _, st := range errorStatuses(oi, d.Key) {
		op.Responses.set(strconv.Itoa(st), ref("responses", errorResponseName[st]))
		b.responses[st] = true
	}
	op.Security = securityFor(allow)
	op.Allow = allowStrings(allow)
	if oi.Permission != "" {
		op.Permission = oi.Permission
		b.perms[oi.Permission] = true
	}
	if oi.Action != nil {
		op.Emits = oi.Action.Emits
	}
	return op, nil
}

// allowStrings returns an allow list as strings (never nil).
func allowStrings(allow []authctx.Allow) []string {
	out := make([]string, len(allow))
	for i, a := range allow {
		out[i] = string(a)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func crudText(name string, d *rest.Description, op rest.Operation) (summary, description string) {
	switch op {
	case rest.OpList:
		return "List " + name, fmt.Sprintf("Lists the rows of %s the caller can see (row-level security applies), "+
			"%d per page unless `limit` says otherwise (at most %d). Filter with `"+listFilterGrammar+"` on the "+
			"returned columns, order with `"+listOrderGrammar+"`, and continue with the "+
			"page's `next_cursor` as `cursor`. `count=exact` adds the number of matching rows.", name, d.DefaultLimit, d.MaxLimit)
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

// listFilterGrammar and listOrderGrammar are the list grammar as the list
// operation's description writes it, each in a CommonMark code span so that
// a reference page shows the angle brackets instead of taking them for HTML.
const (
	listFilterGrammar = "<column>=<operator>.<value>"
	listOrderGrammar  = "order=<column>.asc|desc[.nullsfirst|.nullslast]"
)

// codeSpan returns s as a CommonMark code span: descriptions are Markdown,
// and a name must show as written (no emphasis, no HTML), whatever it holds.
func codeSpan(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.Contains(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// codeList returns names as comma-separated code spans.
func codeList(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = codeSpan(n)
	}
	return strings.Join(out, ", ")
}

// Reserved list parameters (rest's list grammar).
var listReserved = map[string]bool{"limit": true, "order": true, "cursor": true, "count": true}

const filterPattern = `^(not\.)?(eq|neq|gt|gte|lt|lte|like|ilike|is|in)\..*$`

func listParams(d *rest.Description) []*parameter {
	var out []*parameter
	for _, c := range d.Filterable() {
		if listReserved[c.Name] {
			continue // the parameter name is taken by the list grammar
		}
		out = append(out, &parameter{Name: c.Name, In: "query",
			Description: "Filter on " + codeSpan(c.Name) + " (" + c.Type + "): `<operator>.<value>`, the operator one of " +
				"`eq`, `neq`, `gt`, `gte`, `lt`, `lte`, `like`, `ilike`, `in` (`in.(a,b)`) and `is` (`is.null`, `is.true`, " +
				"`is.false`, `is.unknown`), each negated by a `not.` prefix. Repeat to AND conditions.",
			Form:   true,
			Schema: newMap().set("type", "array").set("items", newMap().set("type", "string").set("pattern", filterPattern))})
	}
	var cols []string
	for _, c := range d.Filterable() {
		if c.Sortable {
			cols = append(cols, c.Name)
		}
	}
	out = append(out,
		&parameter{Name: "order", In: "query",
			Description: "Comma-separated order terms `<column>.asc|desc[.nullsfirst|.nullslast]` on " + codeList(cols) + "; the key breaks ties.",
			Schema:      newMap().set("type", "string")},
		&parameter{Name: "limit", In: "query", Description: "Page size.",
			Schema: newMap().set("type", "integer").set("minimum", 1).set("maximum", d.MaxLimit).set("default", d.DefaultLimit)},
		&parameter{Name: "cursor", In: "query", Description: "The `next_cursor` of the previous page (opaque, signed).",
			Schema: newMap().set("type", "string")},
		&parameter{Name: "count", In: "query", Description: "`exact` adds `count`, the number of rows matching the filters.",
			Schema: newMap().set("type", "string").set("enum", []any{"exact"})},
	)
	return out
}

// queryParams turns an action's query schema (an object) into parameters.
func (b *builder) queryParams(oi rest.OperationInfo) ([]*parameter, error) {
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
	var out []*parameter
	pv, _ := o.get("properties")
	props, _ := pv.(*omap)
	if props == nil {
		return nil, nil
	}
	for _, k := range props.keys {
		p := &parameter{Name: k, In: "query", Schema: props.m[k]}
		if req[k] {
			p.Required = ptr(true)
		}
		if ps, ok := props.m[k].(*omap); ok {
			if t, ok := ps.get("type"); ok && t == "array" {
				p.Form = true
			}
			if desc, ok := ps.get("description"); ok {
				p.Description, _ = desc.(string)
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func (b *builder) successResponse(entity string, d *rest.Description, oi rest.OperationInfo) (*response, error) {
	resp := &response{Description: http.StatusText(oi.Status)}
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
		resp.Headers = newOrdered[*header]().set("Location", &header{
			Description: "The path of the new row (when the key column is selected).",
			Schema:      newMap().set("type", "string")})
	}
	if schema != nil {
		resp.Content = newOrdered[*mediaType]().set("application/json", &mediaType{Schema: schema})
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

// errorStatuses lists the error statuses an operation can answer with.
// Every operation can answer 400: a malformed query string, and on item
// routes and creates a query that reads as a filter.
func errorStatuses(oi rest.OperationInfo, key rest.Column) []int {
	write := oi.Method != http.MethodGet
	takesBody := oi.Operation == rest.OpCreate || oi.Operation == rest.OpUpdate ||
		(oi.Action != nil && (oi.Input != nil || oi.Method != http.MethodGet))
	out := []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden}
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
func securityFor(allow []authctx.Allow) []*omap {
	has := func(x authctx.Allow) bool {
		for _, a := range allow {
			if a == x {
				return true
			}
		}
		return false
	}
	out := []*omap{}
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

// usedSchemes keeps the security schemes some operation names (an
// unused scheme only confuses readers and linters).
func (b *builder) usedSchemes(all *ordered[*securityScheme]) *ordered[*securityScheme] {
	used := map[string]bool{}
	for _, item := range b.paths {
		for _, op := range item.ops {
			for _, req := range op.Security {
				for _, name := range req.keys {
					used[name] = true
				}
			}
		}
	}
	out := newOrdered[*securityScheme]()
	for _, k := range all.keys {
		if used[k] {
			out.set(k, all.m[k])
		}
	}
	return out
}

func (b *builder) securitySchemes() *ordered[*securityScheme] {
	cookie := b.opts.CookieName
	if cookie == "" {
		cookie = "sb-<ref>-auth-token"
		if name, err := authctx.CookieNameFor(b.opts.ProjectURL); err == nil && b.opts.ProjectURL != "" {
			cookie = name
		}
	}
	return newOrdered[*securityScheme]().
		set(SchemeBearer, &securityScheme{Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "An access token (ES256 or RS256) verified locally against the project's JWKS."}).
		set(SchemeCookie, &securityScheme{Type: "apiKey", In: "cookie", Name: cookie,
			Description: "The browser session written by the Supabase SSR client (possibly split into " + cookie + ".0, .1, …). " +
				"Unsafe methods relying on it are refused cross-site with 403 CROSS_SITE_REQUEST."}).
		set(SchemeAPIKey, &securityScheme{Type: "apiKey", In: "header", Name: "apikey",
			Description: "The project's secret key, for service callers."})
}

// metaRoutes documents the description's own routes.
func (b *builder) metaRoutes() error {
	add := func(path, id, summary, media string, schema *omap) error {
		op := &operation{ID: id, Tags: []string{"meta"}, Summary: summary,
			Description: summary + ", generated from the same objects as the routes; no credential needed.",
			Responses: newOrdered[any]().set("200", &response{Description: "OK",
				Content: newOrdered[*mediaType]().set(media, &mediaType{Schema: schema})}),
			Security: []*omap{newMap()}}
		return b.addOperation(path, http.MethodGet, id, "meta "+path, op)
	}
	if err := add(PathJSON, metaJSONID, "This OpenAPI document as JSON", "application/json", newMap().set("type", "object")); err != nil {
		return err
	}
	if err := add(PathYAML, metaYAMLID, "This OpenAPI document as YAML", "application/yaml", newMap().set("type", "string")); err != nil {
		return err
	}
	return add(PathDocs, metaDocsID, "The API reference page (HTML)", "text/html", newMap().set("type", "string"))
}

// Operation ids of the description's own routes.
const (
	metaJSONID = "getOpenAPIJSON"
	metaYAMLID = "getOpenAPIYAML"
	metaDocsID = "getAPIReference"
)

// withoutRLSText is the sentence that says a resource is served without
// row-level security (rest.Config.AllowWithoutRLS), or "".
func withoutRLSText(d *rest.Description) string {
	if !d.WithoutRLS {
		return ""
	}
	return " Row-level security does not protect this table (" + d.WithoutRLSReason +
		"): every caller this operation admits sees every row. It is served so on purpose (allow_without_rls)."
}
