package spec_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/problem"
)

// docRoutes reads method+path pairs from the served JSON document itself
// (not from API.Routes), as a client would.
func docRoutes(t *testing.T, doc map[string]any) map[string][]string {
	t.Helper()
	base := doc["servers"].([]any)[0].(map[string]any)["url"].(string)
	out := map[string][]string{}
	for p, item := range doc["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			out[base+p] = append(out[base+p], strings.ToUpper(m))
		}
		sort.Strings(out[base+p])
	}
	return out
}

func fetchDoc(t *testing.T, h http.Handler) (map[string]any, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/openapi.json", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	return doc, rec.Body.Bytes()
}

var templateParam = regexp.MustCompile(`\{[^}]+\}`)

// templateRE matches concrete paths against a documented path template.
func templateRE(tmpl string) *regexp.Regexp {
	parts := templateParam.Split(tmpl, -1)
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile("^" + strings.Join(parts, "[^/]+") + "$")
}

// TestContract proves that the served handler and the document list the
// same operations: every documented method and path is routed (and answers
// the documented success status with a body matching the documented
// schema), every other method on a documented path answers 405 with an
// Allow header naming exactly the documented methods (plus HEAD with GET),
// and undocumented paths answer 404.
func TestContract(t *testing.T) {
	b := setup(t)
	h := b.api.Handler()
	doc, _ := fetchDoc(t, h)
	routes := docRoutes(t, doc)

	// The document's operations are exactly API.Routes().
	fromAPI := map[string][]string{}
	for _, r := range b.api.Routes() {
		fromAPI[r.Path] = append(fromAPI[r.Path], r.Method)
	}
	for p := range fromAPI {
		sort.Strings(fromAPI[p])
	}
	if !mapsEqual(routes, fromAPI) {
		t.Fatalf("document routes %v\n != API.Routes %v", routes, fromAPI)
	}
	// And exactly the resources' descriptions, one to one.
	n := 3 // meta routes
	for _, r := range b.res {
		n += len(r.Describe().Operations)
	}
	if got := len(b.api.Routes()); got != n {
		t.Fatalf("%d documented operations, resources describe %d (+3 meta)", got, n)
	}

	// A row to address.
	id := createTodo(t, h, `{"title":"first","estimate":12.5,"meta":{"a":[1,2]},"tags":["x",null],"due_at":"2024-05-01T10:00:00Z","local_at":"2024-05-01T10:00:00","due_on":"2024-05-01","code":"abc","ratio":0.25,"price":3.5}`)
	keys := map[string]string{"{id}": id, "{slug}": "hello"}
	bodies := map[string]string{
		"createTodo":    `{"title":"second"}`,
		"updateTodo":    `{"title":"renamed","priority":3}`,
		"completeTodos": `{"note":"done"}`,
	}

	// 1. Every documented operation is routed and answers as documented.
	type call struct{ method, tmpl, path string }
	var calls []call
	for tmpl, methods := range routes {
		path := templateParam.ReplaceAllStringFunc(tmpl, func(p string) string { return keys[p] })
		for _, m := range methods {
			calls = append(calls, call{m, tmpl, path})
		}
	}
	sort.Slice(calls, func(i, j int) bool { // deletes last
		di, dj := calls[i].method == "DELETE", calls[j].method == "DELETE"
		if di != dj {
			return dj
		}
		return calls[i].path+calls[i].method < calls[j].path+calls[j].method
	})
	for _, c := range calls {
		op := operation(doc, c.tmpl, c.method)
		opID := op["operationId"].(string)
		var body io.Reader
		if s, ok := bodies[opID]; ok {
			body = strings.NewReader(s)
		}
		rec := serve(h, c.method, c.path, body)
		want := successStatus(op)
		if rec.Code != want {
			t.Errorf("%s %s (%s): status %d, documented %d: %s", c.method, c.path, opID, rec.Code, want, rec.Body.String())
			continue
		}
		checkResponse(t, doc, op, rec, opID)
	}

	if len(calls) != len(b.api.Routes()) {
		t.Fatalf("walked %d operations of %d", len(calls), len(b.api.Routes()))
	}

	// 2. Undocumented methods on documented paths answer 405 with Allow.
	probes := 0
	all := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
	for tmpl := range routes {
		path := templateParam.ReplaceAllStringFunc(tmpl, func(p string) string { return keys[p] })
		// Methods documented for the template this concrete path matches
		// with the most literal segments (concrete paths win, as in
		// OpenAPI: /todos/export is not /todos/{id}).
		var documented []string
		best := -1
		for other, ms := range routes {
			if !templateRE(other).MatchString(path) {
				continue
			}
			lit := len(strings.Split(other, "/")) - len(templateParam.FindAllString(other, -1))
			if lit > best {
				best, documented = lit, nil
			}
			if lit == best {
				documented = append(documented, ms...)
			}
		}
		if slices.Contains(documented, "GET") {
			documented = append(documented, "HEAD")
		}
		for _, m := range all {
			if slices.Contains(documented, m) {
				if m == "HEAD" {
					if rec := serve(h, m, path, nil); rec.Code == 405 || rec.Code == 404 && isRouteNotFound(rec) {
						t.Errorf("HEAD %s: %d, want it served like GET", path, rec.Code)
					}
				}
				continue
			}
			probes++
			rec := serve(h, m, path, nil)
			if rec.Code != 405 {
				t.Errorf("%s %s (undocumented): status %d, want 405: %s", m, path, rec.Code, rec.Body.String())
				continue
			}
			gotAllow := splitAllow(rec.Header().Get("Allow"))
			wantAllow := uniqSorted(documented)
			if !slices.Equal(gotAllow, wantAllow) {
				t.Errorf("%s %s: Allow %v, documented %v", m, path, gotAllow, wantAllow)
			}
			checkProblem(t, doc, rec, "405")
		}
	}

	t.Logf("%d documented operations walked, %d undocumented methods probed", len(calls), probes)
	if probes < 2*len(routes) {
		t.Fatalf("only %d 405 probes", probes)
	}

	// 3. Paths not in the document are not served.
	for _, p := range []string{"/api", "/api/nope", "/api/todos/" + id + "/nope", "/api/todos/" + id + "/complete/x",
		"/api/todos/export/x", "/api/notes/hello/x", "/nope", "/api/openapi.json/x", "/api/docs/x"} {
		for _, m := range []string{"GET", "POST"} {
			rec := serve(h, m, p, nil)
			if rec.Code != 404 && !(p == "/api" && rec.Code == 301) {
				t.Errorf("%s %s (undocumented path): status %d, want 404", m, p, rec.Code)
			}
		}
	}
}

func createTodo(t *testing.T, h http.Handler, body string) string {
	t.Helper()
	rec := serve(h, "POST", "/api/todos", strings.NewReader(body))
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	var row map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &row); err != nil {
		t.Fatal(err)
	}
	return row["id"].(string)
}

func serve(h http.Handler, method, path string, body io.Reader) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, body)
	req.Header.Set("X-Test-User", alice)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func isRouteNotFound(rec *httptest.ResponseRecorder) bool {
	return strings.Contains(rec.Body.String(), "No such route.")
}

func operation(doc map[string]any, tmpl, method string) map[string]any {
	base := doc["servers"].([]any)[0].(map[string]any)["url"].(string)
	return doc["paths"].(map[string]any)[strings.TrimPrefix(tmpl, base)].(map[string]any)[strings.ToLower(method)].(map[string]any)
}

func successStatus(op map[string]any) int {
	for code := range op["responses"].(map[string]any) {
		if n, _ := strconv.Atoi(code); n >= 200 && n < 300 {
			return n
		}
	}
	return 0
}

// checkResponse validates a response against the operation's documented
// response for its status: media type and schema.
func checkResponse(t *testing.T, doc, op map[string]any, rec *httptest.ResponseRecorder, name string) {
	t.Helper()
	resp, ok := op["responses"].(map[string]any)[strconv.Itoa(rec.Code)].(map[string]any)
	if !ok {
		t.Errorf("%s: status %d is not documented", name, rec.Code)
		return
	}
	if r, ok := resp["$ref"].(string); ok {
		resp = doc["components"].(map[string]any)["responses"].(map[string]any)[strings.TrimPrefix(r, "#/components/responses/")].(map[string]any)
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if rec.Body.Len() != 0 {
			t.Errorf("%s: documented without content, got %q", name, rec.Body.String())
		}
		return
	}
	ct := rec.Header().Get("Content-Type")
	mt, ok := content[strings.TrimSuffix(ct, "; charset=utf-8")].(map[string]any)
	if !ok {
		t.Errorf("%s: content type %q not documented (%v)", name, ct, content)
		return
	}
	if !strings.HasSuffix(ct, "json") {
		return
	}
	validate(t, doc, mt["schema"], rec.Body.Bytes(), name)
}

// checkProblem validates a problem body against components.schemas.Problem.
func checkProblem(t *testing.T, doc map[string]any, rec *httptest.ResponseRecorder, name string) {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != problem.MediaType {
		t.Errorf("%s: content type %q", name, ct)
	}
	validate(t, doc, map[string]any{"$ref": "#/components/schemas/Problem"}, rec.Body.Bytes(), name)
}

// validate checks body against a schema of the document, with the
// document's component schemas as $defs.
func validate(t *testing.T, doc map[string]any, schema any, body []byte, name string) {
	t.Helper()
	rs := resolveSchema(t, doc, schema)
	var inst any
	if err := json.Unmarshal(body, &inst); err != nil {
		t.Errorf("%s: body is not JSON: %v", name, err)
		return
	}
	if err := rs.Validate(inst); err != nil {
		t.Errorf("%s: body %s does not match the documented schema: %v", name, body, err)
	}
}

func resolveSchema(t *testing.T, doc map[string]any, schema any) *jsonschema.Resolved {
	t.Helper()
	defs := doc["components"].(map[string]any)["schemas"]
	root := map[string]any{"$defs": defs, "allOf": []any{schema}}
	raw, _ := json.Marshal(root)
	raw = []byte(strings.ReplaceAll(string(raw), "#/components/schemas/", "#/$defs/"))
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func splitAllow(a string) []string {
	var out []string
	for _, m := range strings.Split(a, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	return uniqSorted(out)
}

func uniqSorted(ss []string) []string {
	out := slices.Clone(ss)
	sort.Strings(out)
	return slices.Compact(out)
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// TestValidatorNotVacuous proves the schema check of TestContract rejects
// bodies that do not match: a wrong type, a missing required column, an
// extra page field is allowed but a missing next_cursor is not.
func TestValidatorNotVacuous(t *testing.T) {
	b := setup(t)
	doc, _ := fetchDoc(t, b.api.Handler())
	for _, c := range []struct {
		schema string
		body   string
	}{
		{"Todo", `{"id": 5}`},
		{"TodoPage", `{"items": []}`},
		{"TodoPage", `{"items": [{"id": "x"}], "next_cursor": null}`},
		{"Problem", `{"title": "x", "status": 400, "kind": "bad_request"}`},
		{"Problem", `{"type": "t", "title": "x", "status": 400, "kind": "no_such_kind"}`},
	} {
		rs := resolveSchema(t, doc, map[string]any{"$ref": "#/components/schemas/" + c.schema})
		var inst any
		_ = json.Unmarshal([]byte(c.body), &inst)
		if rs.Validate(inst) == nil {
			t.Errorf("%s accepted %s", c.schema, c.body)
		}
	}
}

// TestErrorStatusesDocumented provokes the errors each operation can
// return and checks that the status is listed on that operation and the
// body matches the Problem schema.
func TestErrorStatusesDocumented(t *testing.T) {
	b := setup(t)
	h := b.api.Handler()
	doc, _ := fetchDoc(t, h)
	id := createTodo(t, h, `{"title":"one","code":"dup"}`)
	missing := "99999999-9999-9999-9999-999999999999"
	big := `{"title":"` + strings.Repeat("x", 2<<20) + `"}`
	for _, c := range []struct {
		method, path, tmpl, user, ctype, body string
		want                                  int
	}{
		{"GET", "/api/todos/not-a-uuid", "/api/todos/{id}", alice, "", "", 400},
		{"GET", "/api/todos?limit=0", "/api/todos", alice, "", "", 400},
		{"GET", "/api/todos?nope=eq.1", "/api/todos", alice, "", "", 400},
		{"GET", "/api/todos/" + missing, "/api/todos/{id}", alice, "", "", 404},
		{"GET", "/api/todos/" + id, "/api/todos/{id}", "invalid", "", "", 401},
		{"GET", "/api/todos/" + id, "/api/todos/{id}", "anon", "", "", 404},
		{"POST", "/api/todos", "/api/todos", alice, "text/plain", `{"title":"x"}`, 415},
		{"POST", "/api/todos", "/api/todos", alice, "application/json", big, 413},
		{"POST", "/api/todos", "/api/todos", alice, "application/json", `{"done":true}`, 422},
		{"POST", "/api/todos", "/api/todos", alice, "application/json", `{"title":"x","nope":1}`, 400},
		{"POST", "/api/todos", "/api/todos", alice, "application/json", `{"title":""}`, 422},
		{"POST", "/api/todos", "/api/todos", alice, "application/json", `{"title":"two","code":"dup"}`, 409},
		{"POST", "/api/todos", "/api/todos", "anon", "application/json", `{"title":"x"}`, 403},
		{"PATCH", "/api/todos/" + id, "/api/todos/{id}", alice, "application/json", `{"owner_id":"` + missing + `"}`, 400},
		{"PATCH", "/api/todos/" + missing, "/api/todos/{id}", alice, "application/json", `{"title":"x"}`, 404},
		{"POST", "/api/todos/" + missing + "/complete", "/api/todos/{id}/complete", alice, "application/json", `{}`, 404},
		{"POST", "/api/todos/" + id + "/complete", "/api/todos/{id}/complete", alice, "application/json", `{"note":1}`, 400},
		{"GET", "/api/todos/export?done=maybe", "/api/todos/export", alice, "", "", 400},
		{"DELETE", "/api/todos/" + missing, "/api/todos/{id}", alice, "", "", 404},
	} {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req := httptest.NewRequest(c.method, c.path, body)
		req.Header.Set("X-Test-User", c.user)
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		name := c.method + " " + c.path
		if len(name) > 80 {
			name = name[:80]
		}
		if rec.Code != c.want {
			t.Errorf("%s: status %d, want %d: %s", name, rec.Code, c.want, rec.Body.String())
			continue
		}
		op := operation(doc, c.tmpl, c.method)
		checkResponse(t, doc, op, rec, name)
		checkProblem(t, doc, rec, name)
	}
}
