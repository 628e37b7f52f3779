package spec

import (
	"bytes"
	"html/template"
	"sort"
	"strings"
)

// The reference page is rendered on the server from the document tree:
// one HTML file with inline CSS, no scripts and no external resources, so
// it works offline and under a strict Content-Security-Policy.

type htmlPage struct {
	Title, Version, Description, Server string
	Schemes                             []htmlScheme
	Tags                                []htmlTag
	Schemas                             []htmlNamed
	Errors                              []htmlNamed
	Permissions                         []htmlPair
}

type htmlScheme struct{ Name, Kind, Description string }

type htmlTag struct {
	Name, Description string
	Ops               []htmlOp
}

type htmlOp struct {
	Method, Path, ID, Summary, Description string
	Deprecated                             bool
	Permission                             string
	Emits, Allow, Security                 []string
	Params                                 []htmlParam
	Body                                   *htmlSchema
	Responses                              []htmlResponse
}

type htmlParam struct {
	Name, In, Description string
	Required              bool
	Schema                htmlSchema
}

type htmlSchema struct {
	Ref  string // component name when the schema is a plain $ref
	JSON string // pretty JSON otherwise
}

type htmlResponse struct {
	Status, Description, Ref string
	Schema                   *htmlSchema
}

type htmlNamed struct{ Name, Description, JSON string }

type htmlPair struct{ Key, Value string }

func str(o *omap, k string) string {
	v, _ := o.get(k)
	s, _ := v.(string)
	return s
}

func sub(o *omap, k string) *omap {
	v, _ := o.get(k)
	m, _ := v.(*omap)
	return m
}

func pretty(v any) string {
	var b bytes.Buffer
	_ = writeJSON(&b, v, "", "  ")
	return b.String()
}

func schemaView(v any) htmlSchema {
	if m, ok := v.(*omap); ok && m.len() == 1 {
		if r := str(m, "$ref"); strings.HasPrefix(r, "#/components/schemas/") {
			return htmlSchema{Ref: strings.TrimPrefix(r, "#/components/schemas/")}
		}
	}
	return htmlSchema{JSON: pretty(v)}
}

func renderHTML(doc *omap) ([]byte, error) {
	info := sub(doc, "info")
	p := htmlPage{Title: str(info, "title"), Version: str(info, "version"), Description: str(info, "description")}
	if sv, ok := doc.get("servers"); ok {
		if a, ok := sv.([]any); ok && len(a) > 0 {
			p.Server = str(a[0].(*omap), "url")
		}
	}
	comps := sub(doc, "components")
	if ss := sub(comps, "securitySchemes"); ss != nil {
		for _, k := range ss.keys {
			s := ss.m[k].(*omap)
			kind := str(s, "type")
			if kind == "http" {
				kind = "HTTP " + str(s, "scheme")
			} else {
				kind = "API key in " + str(s, "in") + " " + str(s, "name")
			}
			p.Schemes = append(p.Schemes, htmlScheme{k, kind, str(s, "description")})
		}
	}
	tagIndex := map[string]int{}
	if tv, ok := doc.get("tags"); ok {
		for _, t := range tv.([]any) {
			tm := t.(*omap)
			tagIndex[str(tm, "name")] = len(p.Tags)
			p.Tags = append(p.Tags, htmlTag{Name: str(tm, "name"), Description: str(tm, "description")})
		}
	}
	paths := sub(doc, "paths")
	for _, path := range paths.keys {
		item := paths.m[path].(*omap)
		for _, method := range item.keys {
			o := item.m[method].(*omap)
			op := htmlOp{Method: strings.ToUpper(method), Path: p.Server + path, ID: str(o, "operationId"),
				Summary: str(o, "summary"), Description: str(o, "description"), Permission: str(o, "x-service-permission")}
			if p.Server == "/" {
				op.Path = path
			}
			if d, ok := o.get("deprecated"); ok && d == true {
				op.Deprecated = true
			}
			op.Emits = anyStrings(o, "x-service-emits")
			op.Allow = anyStrings(o, "x-service-allow")
			if sec, ok := o.get("security"); ok {
				for _, r := range sec.([]any) {
					rm := r.(*omap)
					if rm.len() == 0 {
						op.Security = append(op.Security, "none")
					}
					op.Security = append(op.Security, rm.keys...)
				}
			}
			if pv, ok := o.get("parameters"); ok {
				for _, x := range pv.([]any) {
					pm := x.(*omap)
					req, _ := pm.get("required")
					sv, _ := pm.get("schema")
					op.Params = append(op.Params, htmlParam{Name: str(pm, "name"), In: str(pm, "in"),
						Description: str(pm, "description"), Required: req == true, Schema: schemaView(sv)})
				}
			}
			if rb := sub(o, "requestBody"); rb != nil {
				if mt := sub(sub(rb, "content"), "application/json"); mt != nil {
					sv, _ := mt.get("schema")
					s := schemaView(sv)
					op.Body = &s
				}
			}
			resps := sub(o, "responses")
			for _, st := range resps.keys {
				r := resps.m[st].(*omap)
				hr := htmlResponse{Status: st, Description: str(r, "description")}
				if rr := str(r, "$ref"); rr != "" {
					hr.Ref = strings.TrimPrefix(rr, "#/components/responses/")
					if er := sub(sub(comps, "responses"), hr.Ref); er != nil {
						hr.Description = str(er, "description")
					}
				} else if c := sub(r, "content"); c != nil && c.len() > 0 {
					if sv, ok := c.m[c.keys[0]].(*omap).get("schema"); ok {
						s := schemaView(sv)
						hr.Schema = &s
					}
				}
				op.Responses = append(op.Responses, hr)
			}
			tag := ""
			if tv := anyStrings(o, "tags"); len(tv) > 0 {
				tag = tv[0]
			}
			i, ok := tagIndex[tag]
			if !ok {
				tagIndex[tag] = len(p.Tags)
				i = len(p.Tags)
				p.Tags = append(p.Tags, htmlTag{Name: tag})
			}
			p.Tags[i].Ops = append(p.Tags[i].Ops, op)
		}
	}
	if ss := sub(comps, "schemas"); ss != nil {
		for _, k := range ss.keys {
			p.Schemas = append(p.Schemas, htmlNamed{Name: k, JSON: pretty(ss.m[k])})
		}
	}
	if rs := sub(comps, "responses"); rs != nil {
		for _, k := range rs.keys {
			r := rs.m[k].(*omap)
			var ex string
			if mt := sub(sub(r, "content"), "application/problem+json"); mt != nil {
				if e := sub(mt, "examples"); e != nil {
					ex = pretty(e)
				}
			}
			p.Errors = append(p.Errors, htmlNamed{Name: k, Description: str(r, "description"), JSON: ex})
		}
	}
	if pm := sub(doc, "x-service-permissions"); pm != nil {
		keys := append([]string(nil), pm.keys...)
		sort.Strings(keys)
		for _, k := range keys {
			v, _ := pm.m[k].(string)
			p.Permissions = append(p.Permissions, htmlPair{k, v})
		}
	}
	var b bytes.Buffer
	if err := pageTemplate.Execute(&b, p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func anyStrings(o *omap, k string) []string {
	v, _ := o.get(k)
	a, _ := v.([]any)
	var out []string
	for _, x := range a {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"lower": strings.ToLower,
	"join":  strings.Join,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} {{.Version}} — API reference</title>
<style>
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1b1f24;background:#fff}
main{max-width:980px;margin:0 auto;padding:1.5rem}
nav{background:#f6f8fa;border-bottom:1px solid #d0d7de;padding:.75rem 1.5rem}
nav a{margin-right:1rem}
h1{margin:.2rem 0}h2{border-bottom:1px solid #d0d7de;padding-bottom:.3rem;margin-top:2.5rem}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:.75rem;overflow:auto}
.op{border:1px solid #d0d7de;border-radius:6px;margin:1rem 0;padding:.5rem 1rem}
.op>summary{cursor:pointer;list-style:none}
.m{display:inline-block;min-width:4.2rem;text-align:center;font-weight:700;border-radius:4px;padding:0 .4rem;color:#fff;margin-right:.5rem}
.get{background:#0969da}.post{background:#1a7f37}.patch{background:#9a6700}.put{background:#8250df}.delete{background:#cf222e}
.dep{text-decoration:line-through}.tag{color:#57606a;font-size:13px}
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
</style>
</head>
<body>
<nav><strong>{{.Title}}</strong> <span class="tag">{{.Version}}</span> · {{range .Tags}}<a href="#tag-{{.Name}}">{{.Name}}</a>{{end}}<a href="#schemas">schemas</a><a href="#errors">errors</a></nav>
<main>
<h1>{{.Title}}</h1>
<p>Version <code>{{.Version}}</code> · server <code>{{.Server}}</code> · <a href="openapi.json">openapi.json</a> · <a href="openapi.yaml">openapi.yaml</a></p>
<p>{{.Description}}</p>
<h2 id="auth">Authentication</h2>
<table><tr><th>scheme</th><th>kind</th><th>description</th></tr>
{{range .Schemes}}<tr><td><code>{{.Name}}</code></td><td>{{.Kind}}</td><td>{{.Description}}</td></tr>
{{end}}</table>
{{if .Permissions}}<h2 id="permissions">Permissions</h2>
<table><tr><th>key</th><th>meaning</th></tr>
{{range .Permissions}}<tr><td><code>{{.Key}}</code></td><td>{{.Value}}</td></tr>
{{end}}</table>{{end}}
{{range .Tags}}<h2 id="tag-{{.Name}}">{{.Name}}</h2>
<p>{{.Description}}</p>
{{range .Ops}}<details class="op" id="op-{{.ID}}" open>
<summary><span class="m {{lower .Method}}">{{.Method}}</span><code{{if .Deprecated}} class="dep"{{end}}>{{.Path}}</code> — {{.Summary}} <span class="tag">{{.ID}}{{if .Deprecated}} · deprecated{{end}}</span></summary>
{{if .Description}}<p>{{.Description}}</p>{{end}}
<p class="tag">Callers: {{join .Allow ", "}}{{if .Security}} · credentials: {{join .Security " or "}}{{end}}{{if .Permission}} · permission <code>{{.Permission}}</code>{{end}}{{if .Emits}} · emits <code>{{join .Emits ", "}}</code>{{end}}</p>
{{if .Params}}<table><tr><th>parameter</th><th>in</th><th>schema</th><th>description</th></tr>
{{range .Params}}<tr><td><code>{{.Name}}</code>{{if .Required}} (required){{end}}</td><td>{{.In}}</td><td>{{if .Schema.Ref}}<a href="#schema-{{.Schema.Ref}}">{{.Schema.Ref}}</a>{{else}}<pre>{{.Schema.JSON}}</pre>{{end}}</td><td>{{.Description}}</td></tr>
{{end}}</table>{{end}}
{{with .Body}}<p>Request body (application/json): {{if .Ref}}<a href="#schema-{{.Ref}}">{{.Ref}}</a>{{else}}</p><pre>{{.JSON}}</pre><p>{{end}}</p>{{end}}
<table><tr><th>status</th><th>response</th></tr>
{{range .Responses}}<tr><td>{{.Status}}</td><td>{{if .Ref}}<a href="#error-{{.Ref}}">{{.Ref}}</a>: {{end}}{{.Description}}{{with .Schema}} — {{if .Ref}}<a href="#schema-{{.Ref}}">{{.Ref}}</a>{{else}}<pre>{{.JSON}}</pre>{{end}}{{end}}</td></tr>
{{end}}</table>
</details>
{{end}}{{end}}
<h2 id="schemas">Schemas</h2>
{{range .Schemas}}<h3 id="schema-{{.Name}}">{{.Name}}</h3>
<pre>{{.JSON}}</pre>
{{end}}
<h2 id="errors">Errors</h2>
<p>Every error is <code>application/problem+json</code> (schema <a href="#schema-Problem">Problem</a>).</p>
{{range .Errors}}<h3 id="error-{{.Name}}">{{.Name}}</h3>
<p>{{.Description}}</p>
{{if .JSON}}<pre>{{.JSON}}</pre>{{end}}
{{end}}
</main>
</body>
</html>
`))
