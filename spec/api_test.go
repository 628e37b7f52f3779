package spec_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

func TestDefineAPIErrors(t *testing.T) {
	b := setup(t)
	todos := b.res["todos"]
	for name, o := range map[string]*spec.Config{
		"nil":            nil,
		"no title":       {Info: spec.Info{Version: "1"}, Resources: b.res},
		"no version":     {Info: spec.Info{Title: "x"}, Resources: b.res},
		"no resources":   {Info: spec.Info{Title: "x", Version: "1"}},
		"bad base":       {Info: spec.Info{Title: "x", Version: "1"}, BasePath: "api", Resources: b.res},
		"base template":  {Info: spec.Info{Title: "x", Version: "1"}, BasePath: "/{v}", Resources: b.res},
		"base dots":      {Info: spec.Info{Title: "x", Version: "1"}, BasePath: "/v1/../api", Resources: b.res},
		"base dot":       {Info: spec.Info{Title: "x", Version: "1"}, BasePath: "/./api", Resources: b.res},
		"base slashes":   {Info: spec.Info{Title: "x", Version: "1"}, BasePath: "//api", Resources: b.res},
		"nil resource":   {Info: spec.Info{Title: "x", Version: "1"}, Resources: map[string]*rest.Resource{"todos": nil}},
		"slash segment":  {Info: spec.Info{Title: "x", Version: "1"}, Resources: map[string]*rest.Resource{"a/b": todos}},
		"reserved docs":  {Info: spec.Info{Title: "x", Version: "1"}, Resources: map[string]*rest.Resource{"docs": todos}},
		"reserved json":  {Info: spec.Info{Title: "x", Version: "1"}, Resources: map[string]*rest.Resource{"openapi.json": todos}},
		"unknown allow":  {Info: spec.Info{Title: "x", Version: "1"}, Resources: b.res, Allow: map[string][]authctx.Allow{"todos": {"admin"}}},
		"empty allow":    {Info: spec.Info{Title: "x", Version: "1"}, Resources: b.res, Allow: map[string][]authctx.Allow{"todos": {}}},
		"allow no table": {Info: spec.Info{Title: "x", Version: "1"}, Resources: b.res, Allow: map[string][]authctx.Allow{"nope": {"user"}}},
		// The same table twice: operation ids and schema names collide.
		"duplicate ids": {Info: spec.Info{Title: "x", Version: "1"}, Resources: map[string]*rest.Resource{"todos": todos, "tasks": todos}},
	} {
		if _, err := spec.DefineAPI(o); !errors.Is(err, spec.ErrDefine) {
			t.Errorf("%s: err = %v, want ErrDefine", name, err)
		}
	}
}

// TestSecurityFromAllow checks each allow list's security requirements,
// and that authctx.Guard installed through Config.Guard enforces the
// same lists: what the document says a caller needs is what the guard
// admits, and its refusals are documented statuses with Problem bodies.
func TestSecurityFromAllow(t *testing.T) {
	b := setup(t)
	o := apiOptions(b.res)
	o.Allow = map[string][]authctx.Allow{"todos": {authctx.AllowService, authctx.AllowAnonymous}, "notes": {authctx.AllowAnon}}
	o.Guard = authctx.Guard
	api, err := spec.DefineAPI(o)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := fetchDoc(t, api.Handler())
	sec := func(path, method string) string {
		op := doc["paths"].(map[string]any)[path].(map[string]any)[method].(map[string]any)
		var out []string
		for _, r := range op["security"].([]any) {
			m := r.(map[string]any)
			if len(m) == 0 {
				out = append(out, "none")
			}
			for k := range m {
				out = append(out, k)
			}
		}
		return strings.Join(out, " ")
	}
	if got := sec("/todos", "get"); got != "bearerAuth sessionCookie apikey" {
		t.Errorf("todos security %q", got)
	}
	if got := sec("/notes", "get"); got != "none" {
		t.Errorf("notes security %q", got)
	}
	if got := sec("/openapi.json", "get"); got != "none" {
		t.Errorf("meta security %q", got)
	}
	// Default allow list: user only, documented as bearer or cookie.
	if d := spec.DefaultAllow(); len(d) != 1 || d[0] != authctx.AllowUser {
		t.Errorf("DefaultAllow %v", d)
	}
	d, _ := fetchDoc(t, b.api.Handler())
	op := d["paths"].(map[string]any)["/todos"].(map[string]any)["get"].(map[string]any)
	if got := op["x-service-allow"].([]any); len(got) != 1 || got[0] != "user" {
		t.Errorf("default x-service-allow %v", got)
	}

	// The real guard, reading the caller a resolver middleware stored.
	withCaller := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var a authctx.Auth
			switch r.Header.Get("X-Caller") {
			case "anon":
				a = authctx.Anon(authctx.ReasonNone)
			case "anonymous":
				a = authctx.NewUser(authctx.Claims{"sub": alice, "role": "authenticated", "is_anonymous": true}, "t", nil)
			case "user":
				a = authctx.NewUser(authctx.Claims{"sub": alice, "role": "authenticated"}, "t", nil)
			case "service":
				a = authctx.Service("test")
			}
			h.ServeHTTP(w, r.WithContext(authctx.WithResult(r.Context(), authctx.Result{Auth: a})))
		})
	}
	h := withCaller(api.Handler())
	for _, c := range []struct {
		path, tmpl, caller string
		want               int
		code               string
	}{
		{"/api/todos", "/api/todos", "anon", 401, "AUTH_REQUIRED"},
		{"/api/todos", "/api/todos", "user", 403, "CALLER_NOT_ALLOWED"},
		{"/api/todos", "/api/todos", "anonymous", 200, ""},
		{"/api/todos", "/api/todos", "service", 200, ""},
		{"/api/notes", "/api/notes", "anon", 200, ""},
		{"/api/notes", "/api/notes", "anonymous", 403, "ANONYMOUS_USER"},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.Header.Set("X-Caller", c.caller)
		// The resources' own Caller reads X-Test-User; keep it consistent.
		if c.caller == "user" || c.caller == "anonymous" {
			req.Header.Set("X-Test-User", alice)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("GET %s as %s: %d, want %d: %s", c.path, c.caller, rec.Code, c.want, rec.Body.String())
			continue
		}
		checkResponse(t, doc, operation(doc, c.tmpl, "GET"), rec, c.path+" as "+c.caller)
		if c.code != "" && !strings.Contains(rec.Body.String(), `"code":"`+c.code+`"`) {
			t.Errorf("GET %s as %s: body %s lacks code %s", c.path, c.caller, rec.Body.String(), c.code)
		}
	}
}

// TestDocumentShape checks the document's info, servers, operation ids,
// service permissions, 403 examples and typed key parameters.
func TestDocumentShape(t *testing.T) {
	b := setup(t)
	doc, _ := fetchDoc(t, b.api.Handler())
	info := doc["info"].(map[string]any)
	if info["title"] != "Todo API" || info["version"] != "1.4.0" || doc["openapi"] != "3.1.0" {
		t.Errorf("info %v", info)
	}
	if u := doc["servers"].([]any)[0].(map[string]any)["url"]; u != "/api" {
		t.Errorf("server %v", u)
	}
	paths := doc["paths"].(map[string]any)
	op := func(p, m string) map[string]any { return paths[p].(map[string]any)[m].(map[string]any) }
	ids := map[string]string{
		"/todos get": "listTodos", "/todos post": "createTodo", "/todos/{id} get": "getTodo",
		"/todos/{id} patch": "updateTodo", "/todos/{id} delete": "deleteTodo",
		"/todos/{id}/complete post": "completeTodos", "/todos/export get": "exportTodos",
	}
	for k, want := range ids {
		p, m, _ := strings.Cut(k, " ")
		if got := op(p, m)["operationId"]; got != want {
			t.Errorf("%s: operationId %v, want %s", k, got, want)
		}
	}
	if got := op("/todos/{id}", "patch")["x-service-permission"]; got != "todos.update" {
		t.Errorf("x-service-permission %v", got)
	}
	if _, ok := op("/todos/{id}", "get")["x-service-permission"]; ok {
		t.Error("get has no permission but documents one")
	}
	c := op("/todos/{id}/complete", "post")
	if c["x-service-permission"] != "todos.complete" || c["summary"] != "Mark a todo done" {
		t.Errorf("complete %v", c)
	}
	if e := c["x-service-emits"].([]any); len(e) != 1 || e[0] != "todo.completed" {
		t.Errorf("emits %v", e)
	}
	if op("/todos/{id}/archive", "delete")["deprecated"] != true {
		t.Error("archive not deprecated")
	}
	// 403 examples: one per permission-refusal code.
	ex := doc["components"].(map[string]any)["responses"].(map[string]any)["PermissionDenied"].(map[string]any)["content"].(map[string]any)["application/problem+json"].(map[string]any)["examples"].(map[string]any)
	for _, code := range []string{"PERMISSION_DENIED", "APPROVAL_REQUIRED", "ANONYMOUS_USER", "CROSS_SITE_REQUEST"} {
		v, ok := ex[code].(map[string]any)["value"].(map[string]any)
		if !ok || v["code"] != code || v["status"] != float64(403) {
			t.Errorf("PermissionDenied example %s: %v", code, ex[code])
		}
	}
	if v := ex["APPROVAL_REQUIRED"].(map[string]any)["value"].(map[string]any); v["approval"] == nil || v["permission"] == nil {
		t.Errorf("APPROVAL_REQUIRED example lacks approval or permission: %v", v)
	}
	// Key parameter typed from the key column; list parameters present.
	kp := op("/todos/{id}", "get")["parameters"].([]any)[0].(map[string]any)
	if s := kp["schema"].(map[string]any); kp["in"] != "path" || s["format"] != "uuid" {
		t.Errorf("key parameter %v", kp)
	}
	names := map[string]bool{}
	for _, p := range op("/todos", "get")["parameters"].([]any) {
		names[p.(map[string]any)["name"].(string)] = true
	}
	for _, n := range []string{"title", "order", "limit", "cursor", "count"} {
		if !names[n] {
			t.Errorf("list parameter %s missing", n)
		}
	}
	if names["secret"] {
		t.Error("an unselected column is a list filter")
	}
	// Security schemes and cookie name from the project URL.
	ss := doc["components"].(map[string]any)["securitySchemes"].(map[string]any)
	if ss["sessionCookie"].(map[string]any)["name"] != "sb-abcdefghijklmnop-auth-token" {
		t.Errorf("security schemes %v", ss)
	}
	// No operation admits service callers here: the apikey scheme would be
	// an unused component.
	if _, ok := ss["apikey"]; ok {
		t.Errorf("unused apikey scheme listed: %v", ss)
	}
	if _, ok := doc["x-service-permissions"].(map[string]any)["todos.update"]; !ok {
		t.Error("x-service-permissions lacks todos.update")
	}
}

// TestMetaRoutes covers the description's own routes: YAML and HTML
// served, HEAD without a body, other methods 405.
func TestMetaRoutes(t *testing.T) {
	b := setup(t)
	h := b.api.Handler()
	for path, ct := range map[string]string{"/api/openapi.yaml": "application/yaml", "/api/docs": "text/html; charset=utf-8"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 || rec.Header().Get("Content-Type") != ct || rec.Body.Len() == 0 {
			t.Errorf("GET %s: %d %q", path, rec.Code, rec.Header().Get("Content-Type"))
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("HEAD", path, nil))
		if rec.Code != 200 || rec.Body.Len() != 0 {
			t.Errorf("HEAD %s: %d, %d bytes", path, rec.Code, rec.Body.Len())
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", path, nil))
		if rec.Code != 405 || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST %s: %d Allow %q", path, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

// TestHTMLReference checks the reference page is self-contained (no
// scripts, no external resources) and lists every operation and schema.
func TestHTMLReference(t *testing.T) {
	b := setup(t)
	page := string(b.api.HTML())
	for _, bad := range []string{"<script", "http://", "https://cdn", "<link", "@import", "src="} {
		if strings.Contains(strings.ToLower(page), bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, r := range b.api.Routes() {
		if !strings.Contains(page, `id="op-`+r.OperationID+`"`) {
			t.Errorf("page lacks operation %s", r.OperationID)
		}
	}
	// Text from the definitions is escaped, never markup.
	o := apiOptions(b.res)
	o.Info.Description = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	api, err := spec.DefineAPI(o)
	if err != nil {
		t.Fatal(err)
	}
	if p := string(api.HTML()); strings.Contains(p, "<script") || strings.Contains(p, "<img") || !strings.Contains(p, "&lt;script&gt;") {
		t.Error("the description reached the page unescaped")
	}
	for _, want := range []string{`id="schema-Todo"`, `id="schema-Problem"`, `id="error-PermissionDenied"`, "APPROVAL_REQUIRED",
		"todos.complete", "todo.completed", "sb-abcdefghijklmnop-auth-token", "Todo API", "1.4.0"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestRootBasePath mounts the API at the root.
func TestRootBasePath(t *testing.T) {
	b := setup(t)
	for _, base := range []string{"", "/"} {
		o := apiOptions(b.res)
		o.BasePath = base
		api, err := spec.DefineAPI(o)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]int{"/openapi.json": 200, "/docs": 200, "/notes/hello": 200, "/todos": 200, "/api/todos": 404} {
			req := httptest.NewRequest("GET", path, nil)
			req.Header.Set("X-Test-User", alice)
			rec := httptest.NewRecorder()
			api.Handler().ServeHTTP(rec, req)
			if rec.Code != want {
				t.Errorf("base %q: GET %s: %d, want %d", base, path, rec.Code, want)
			}
		}
		if r := api.Routes()[0]; r.Path != "/docs" {
			t.Errorf("base %q: first route %v", base, r)
		}
		if !strings.Contains(string(api.JSON()), `"url": "/"`) {
			t.Errorf("base %q: server url is not /", base)
		}
	}
}
