package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	"gopkg.in/yaml.v3"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

// The representative document is the golden file of package spec (the
// spec tests prove it equals what DefineAPI generates for their fixture).
const (
	goldenJSON = "../spec/testdata/todos.golden.json"
	goldenYAML = "../spec/testdata/todos.golden.yaml"
)

// validateDocument checks data as an OpenAPI 3.1 document with libopenapi:
// the model builds and the document validates against the OpenAPI 3.1
// schema.
func validateDocument(t *testing.T, name string, data []byte) libopenapi.Document {
	t.Helper()
	doc, err := libopenapi.NewDocument(data)
	if err != nil {
		t.Fatalf("%s: libopenapi.NewDocument: %v", name, err)
	}
	if v := doc.GetVersion(); v != "3.1.0" {
		t.Errorf("%s: version %q", name, v)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		t.Fatalf("%s: BuildV3Model: %v", name, err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("%s: NewValidator: %v", name, errs)
	}
	ok, verrs := v.ValidateDocument()
	for _, e := range verrs {
		t.Errorf("%s: %s: %s (line %d)", name, e.Message, e.Reason, e.SpecLine)
		for _, se := range e.SchemaValidationErrors {
			t.Errorf("  %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
		}
	}
	if !ok {
		t.Fatalf("%s does not validate as OpenAPI 3.1", name)
	}
	return doc
}

func TestOpenAPIGoldenValidates(t *testing.T) {
	for _, f := range []string{goldenJSON, goldenYAML} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		validateDocument(t, f, data)
	}
}

// TestOpenAPIValidatorNotVacuous proves ValidateDocument rejects broken
// documents derived from the golden one.
func TestOpenAPIValidatorNotVacuous(t *testing.T) {
	data, err := os.ReadFile(goldenJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to string }{
		{`"openapi": "3.1.0"`, `"openapi": "3.1.0", "bogus": 1`},
		{`"in": "path"`, `"in": "body"`},
		{`"type": "apiKey"`, `"type": "apikey-ish"`},
	} {
		bad := bytes.Replace(data, []byte(c.from), []byte(c.to), 1)
		if bytes.Equal(bad, data) {
			t.Fatalf("mutation %q did not apply", c.from)
		}
		doc, err := libopenapi.NewDocument(bad)
		if err != nil {
			continue // rejected outright
		}
		v, errs := validator.NewValidator(doc)
		if len(errs) > 0 {
			continue
		}
		if ok, _ := v.ValidateDocument(); ok {
			t.Errorf("mutation %q → %q still validates", c.from, c.to)
		}
	}
}

// TestOpenAPIYAMLRoundTrip parses the YAML form with a YAML parser and
// compares it with the JSON form value by value.
func TestOpenAPIYAMLRoundTrip(t *testing.T) {
	jb, err := os.ReadFile(goldenJSON)
	if err != nil {
		t.Fatal(err)
	}
	yb, err := os.ReadFile(goldenYAML)
	if err != nil {
		t.Fatal(err)
	}
	var fromJSON, fromYAML any
	if err := json.Unmarshal(jb, &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(yb, &fromYAML); err != nil {
		t.Fatal(err)
	}
	// Normalize numbers (YAML gives int, JSON float64).
	nb, err := json.Marshal(fromYAML)
	if err != nil {
		t.Fatal(err)
	}
	var norm any
	if err := json.Unmarshal(nb, &norm); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, norm) {
		t.Fatal("the YAML form does not decode to the JSON form")
	}
}

// TestOpenAPIYAMLHostileStrings round-trips strings that trip naive YAML
// emitters, through a document generated with them.
func TestOpenAPIYAMLHostileStrings(t *testing.T) {
	b := liveSetup(t, "yes: no # \"quoted\" \\ back\tslash\nnew line, null, ~, 0x1F, \u0085 nel, \u2028 ls, - dash, : colon, {braces}, 'single'")
	var fromJSON, fromYAML any
	if err := json.Unmarshal(b.api.JSON(), &fromJSON); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b.api.YAML(), &fromYAML); err != nil {
		t.Fatal(err)
	}
	nb, _ := json.Marshal(fromYAML)
	var norm any
	_ = json.Unmarshal(nb, &norm)
	if !reflect.DeepEqual(fromJSON, norm) {
		t.Fatal("the YAML form does not decode to the JSON form")
	}
	validateDocument(t, "hostile YAML", b.api.YAML())
}

const liveSQL = `
create table todos (
  id uuid primary key default gen_random_uuid(),
  owner_id uuid not null default auth.uid(),
  title text not null,
  done boolean not null default false,
  priority int,
  estimate numeric(10,2),
  seq bigint generated always as identity,
  due_at timestamptz,
  created_at timestamptz not null default now(),
  meta jsonb,
  tags text[] not null default '{}'
);
alter table todos enable row level security;
grant select, insert, update, delete on todos to authenticated;
create policy todos_own on todos using (owner_id = auth.uid()) with check (owner_id = auth.uid());
`

const liveUser = "11111111-1111-1111-1111-111111111111"

type liveBundle struct {
	api *spec.API
	v   validator.Validator
}

type completeIn struct {
	Note string `json:"note,omitempty"`
}

type completeOut struct {
	ID   string `json:"id"`
	Done bool   `json:"done"`
}

type exportQuery struct {
	Done bool `json:"done,omitempty"`
}

func liveSetup(t *testing.T, description string) *liveBundle {
	t.Helper()
	pool := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), liveSQL); err != nil {
		t.Fatal(err)
	}
	caller := func(r *http.Request) (authctx.Auth, error) {
		if r.Header.Get("Authorization") == "" {
			return authctx.Anon(authctx.ReasonNone), nil
		}
		return authctx.NewUser(authctx.Claims{"sub": liveUser, "role": "authenticated"}, "t", nil), nil
	}
	res, err := rest.NewResources(context.Background(), db.New(pool, nil), map[string]*rest.Config{"todos": {
		Caller: caller,
		Actions: map[string]*rest.Action{
			"complete": rest.DefineAction(rest.ActionDef[completeIn, rest.None, completeOut]{
				Method: "POST", Path: "/{id}/complete", Summary: description, Emits: []string{"todo.completed"},
				Handler: func(c *rest.Ctx, in rest.ActionInput[completeIn, rest.None]) (completeOut, error) {
					var out completeOut
					err := c.DB.QueryRow(c, `update todos set done = true where id = $1 returning id::text, done`, in.ID).Scan(&out.ID, &out.Done)
					return out, err
				},
			}),
			"export": rest.DefineAction(rest.ActionDef[rest.None, exportQuery, []string]{
				Method: "GET", Path: "/export",
				Handler: func(c *rest.Ctx, in rest.ActionInput[rest.None, exportQuery]) ([]string, error) {
					return []string{"a", "b"}, nil
				},
			}),
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	api, err := spec.DefineAPI(&spec.Config{
		Info:     spec.Info{Title: "Live", Version: "0.1.0", Description: description},
		BasePath: "/v1", Resources: res,
	})
	if err != nil {
		t.Fatal(err)
	}
	doc := validateDocument(t, "live document", api.JSON())
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return &liveBundle{api: api, v: v}
}

// exchange serves one request and validates request and response against
// the document with libopenapi-validator (formats asserted). A request
// the server refuses with 400 or 422 must also be refused by the
// document; its response is still validated.
func (b *liveBundle) exchange(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	mk := func() *http.Request {
		var r io.Reader
		if body != "" {
			r = strings.NewReader(body)
		}
		req := httptest.NewRequest(method, path, r)
		req.Header.Set("Authorization", "Bearer test")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return req
	}
	rec := httptest.NewRecorder()
	b.api.Handler().ServeHTTP(rec, mk())
	if rec.Code == 400 || rec.Code == 422 {
		if ok, _ := b.v.ValidateHttpRequest(mk()); ok {
			t.Errorf("%s %s: the server refused it with %d, the document accepts it", method, path, rec.Code)
		}
		if ok, errs := b.v.ValidateHttpResponse(mk(), rec.Result()); !ok {
			for _, e := range errs {
				t.Errorf("%s %s → %d: %s: %s", method, path, rec.Code, e.Message, e.Reason)
			}
		}
		return rec
	}
	if ok, errs := b.v.ValidateHttpRequestResponse(mk(), rec.Result()); !ok {
		for _, e := range errs {
			t.Errorf("%s %s → %d: %s: %s", method, path, rec.Code, e.Message, e.Reason)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s: %s", se.FieldPath+" "+se.KeywordLocation, se.Reason)
			}
		}
	}
	return rec
}

// TestOpenAPILiveExchanges validates real requests and responses of every
// operation, and some errors, against the generated document.
func TestOpenAPILiveExchanges(t *testing.T) {
	b := liveSetup(t, "Mark a todo done")
	rec := b.exchange(t, "POST", "/v1/todos", `{"title":"one","estimate":12.25,"meta":{"k":[1,"x"]},"tags":["a"],"due_at":"2024-05-01T10:00:00Z","priority":2}`)
	if rec.Code != 201 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body.String())
	}
	var row map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &row)
	id, _ := row["id"].(string)
	for _, c := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/v1/todos/" + id, "", 200},
		{"GET", "/v1/todos?limit=1&count=exact&title=eq.one&order=title.desc", "", 200},
		{"PATCH", "/v1/todos/" + id, `{"title":"two","priority":null}`, 200},
		{"POST", "/v1/todos/" + id + "/complete", `{"note":"n"}`, 200},
		{"GET", "/v1/todos/export?done=true", "", 200},
		{"GET", "/v1/todos/00000000-0000-0000-0000-000000000000", "", 404},
		{"GET", "/v1/todos/not-a-uuid", "", 400},
		{"POST", "/v1/todos", `{"priority":1}`, 422},
		{"DELETE", "/v1/todos/" + id, "", 204},
	} {
		rec := b.exchange(t, c.method, c.path, c.body)
		if rec.Code != c.want {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.path, rec.Code, c.want, rec.Body.String())
		}
	}
}

// TestOpenAPILiveValidatorNotVacuous shows the exchange validation
// catches a response that does not match the document.
func TestOpenAPILiveValidatorNotVacuous(t *testing.T) {
	b := liveSetup(t, "x")
	req := httptest.NewRequest("GET", "/v1/todos/00000000-0000-0000-0000-000000000001", nil)
	req.Header.Set("Authorization", "Bearer test")
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "application/json")
	rec.WriteHeader(200)
	_, _ = rec.WriteString(`{"id":"not-a-uuid","title":5}`)
	if ok, _ := b.v.ValidateHttpRequestResponse(req, rec.Result()); ok {
		t.Fatal("a response with wrong types validated")
	}
}

// FuzzYAMLStrings emits documents whose title and description carry
// arbitrary text and checks the YAML form decodes, with a YAML parser, to
// exactly the JSON form. The resources are built once; DefineAPI itself
// does not touch the database.
func FuzzYAMLStrings(f *testing.F) {
	for _, s := range []string{"", "yes", "null", "~", "- x", "a: b", "#c", "\"q\"", "'s'", "\\", "\t\n\r", "\u0085\u2028\u2029\ufeff", "0x1F", "1e3", "@x", "`x`", "%x", "!x", "&a *a", "|", ">", "\x00\x7f", "\xff\xfe"} {
		f.Add(s, s)
	}
	var base *spec.Config
	f.Fuzz(func(t *testing.T, title, description string) {
		if base == nil {
			base = fuzzOptions(t)
		}
		o := *base
		o.Info.Title, o.Info.Description = "T"+title, description
		api, err := spec.DefineAPI(&o)
		if err != nil {
			t.Fatal(err)
		}
		var fromJSON, fromYAML any
		if err := json.Unmarshal(api.JSON(), &fromJSON); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(api.YAML(), &fromYAML); err != nil {
			t.Fatalf("YAML does not parse: %v", err)
		}
		nb, err := json.Marshal(fromYAML)
		if err != nil {
			t.Fatal(err)
		}
		var norm any
		_ = json.Unmarshal(nb, &norm)
		if !reflect.DeepEqual(fromJSON, norm) {
			t.Fatalf("YAML and JSON forms differ for %q / %q", title, description)
		}
	})
}

// fuzzOptions builds one resource on a database that lives for the whole
// fuzz run (the database is dropped when the process's first fuzz worker
// test ends; the resource's description stays usable without it).
func fuzzOptions(t *testing.T) *spec.Config {
	pool := pgtest.DB(t)
	if _, err := pool.Exec(context.Background(), liveSQL); err != nil {
		t.Fatal(err)
	}
	res, err := rest.NewResources(context.Background(), db.New(pool, nil), map[string]*rest.Config{"todos": nil})
	if err != nil {
		t.Fatal(err)
	}
	return &spec.Config{Info: spec.Info{Version: "1"}, Resources: res}
}
