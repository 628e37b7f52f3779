package rest

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

type taggedTodo struct {
	Title    string `json:"title" jsonschema:"What to do." tablegate:"minLength=3,maxLength=20"`
	Priority int    `json:"priority,omitempty" tablegate:"minimum=1,maximum=5"`
	Slug     string `json:"slug,omitempty" tablegate:"pattern=^[a-z]+(-[a-z]+)*$"`
}

type renameIn struct {
	Title string `json:"title" tablegate:"minLength=3"`
}

// TestSchemaTagsReachValidatorAndDescription: the tablegate tag's
// keywords constrain a CRUD input schema and an action's inferred input
// alike: a body breaking one answers 400 naming the path and keyword
// (never the value), a fitting one is served, and the resource's
// description (what the OpenAPI and MCP adapters render) carries them.
func TestSchemaTagsReachValidatorAndDescription(t *testing.T) {
	t.Parallel()
	b := setup(t)
	in := MustSchemaFor[taggedTodo]()
	res := b.resource("todos", &Config{
		Input:    map[Operation]*jsonschema.Schema{OpCreate: in},
		ReadOnly: []string{"owner_id"},
		Actions: map[string]*Action{
			"rename": DefineAction(ActionDef[renameIn, None, None]{
				Method: "POST", Path: "/{id}/rename",
				Handler: func(c *Ctx, a ActionInput[renameIn, None]) (None, error) {
					_, err := c.DB.Exec(c, "update todos set title = $2 where id = $1", a.ID, a.Data.Title)
					return None{}, err
				},
			}),
		},
	})
	s := server(t, "todos", res)
	refused := []struct{ body, path, msg, value string }{
		{`{"title":"ab"}`, "/title", "fails minLength", ""},
		{`{"title":"` + strings.Repeat("z", 21) + `"}`, "/title", "fails maxLength", "zzzzzzzzzzzzzzzzzzzzz"},
		{`{"title":"fine","priority":9}`, "/priority", "fails maximum", ""},
		{`{"title":"fine","slug":"Not A Slug"}`, "/slug", "fails pattern", "Not A Slug"},
	}
	for _, c := range refused {
		r := do(t, s, "POST", "/api/todos", alice, c.body)
		m := isProblem(t, r, 400, "bad_request")
		errs, _ := m["errors"].([]any)
		if len(errs) != 1 || errs[0].(map[string]any)["path"] != c.path || errs[0].(map[string]any)["message"] != c.msg {
			t.Errorf("%s: errors %v, want %s %q", c.body, m["errors"], c.path, c.msg)
		}
		if c.value != "" && strings.Contains(r.body, c.value) {
			t.Errorf("%s: the answer repeats the value: %s", c.body, r.body)
		}
	}
	r := do(t, s, "POST", "/api/todos", alice, `{"title":"fine","priority":2,"slug":"a-b"}`)
	if r.status != 201 {
		t.Fatalf("fitting body: %s", r)
	}
	id := decode(t, r.body)["id"].(string)
	m := isProblem(t, do(t, s, "POST", "/api/todos/"+id+"/rename", alice, `{"title":"no"}`), 400, "bad_request")
	if errs, _ := m["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["message"] != "fails minLength" {
		t.Errorf("action input: %v", m)
	}
	if r := do(t, s, "POST", "/api/todos/"+id+"/rename", alice, `{"title":"renamed"}`); r.status != 204 {
		t.Errorf("action with a fitting body: %s", r)
	}
	// The description carries the keywords.
	for _, o := range res.Describe().Operations {
		if o.Operation != OpCreate && o.Operation != "rename" {
			continue
		}
		title := o.Input.Properties["title"]
		if title == nil || title.MinLength == nil || *title.MinLength != 3 {
			t.Errorf("%s: described input %+v", o.Operation, o.Input)
		}
		if o.Operation == OpCreate && (title.Description != "What to do." || title.MaxLength == nil || *title.MaxLength != 20 ||
			o.Input.Properties["slug"].Pattern == "") {
			t.Errorf("create: described title %+v", title)
		}
	}
}

// TestSchemaTagMistakes: a keyword in the jsonschema tag (the library's
// description) or a malformed tablegate tag fails inference naming the
// field and the fix, for SchemaFor and for a resource with such an action.
func TestSchemaTagMistakes(t *testing.T) {
	t.Parallel()
	type wrongTag struct {
		Name string `json:"name" jsonschema:"minLength=3"`
	}
	type unknownKeyword struct {
		Name string `json:"name" tablegate:"minlength=3"`
	}
	type badValue struct {
		Seats int `json:"seats" tablegate:"minimum=one"`
	}
	type badPattern struct {
		Code string `json:"code" tablegate:"pattern=(["`
	}
	for _, c := range []struct {
		err  error
		want []string
	}{
		{func() error { _, err := SchemaFor[wrongTag](); return err }(), []string{"jsonschema tag is the description only", `tablegate:"minLength=3"`}},
		{func() error { _, err := SchemaFor[unknownKeyword](); return err }(), []string{"unknownKeyword.Name", `unknown keyword "minlength"`, "minLength"}},
		{func() error { _, err := SchemaFor[badValue](); return err }(), []string{"badValue.Seats", `minimum wants a number, got "one"`}},
		{func() error { _, err := SchemaFor[badPattern](); return err }(), []string{"badPattern.Code", "pattern"}},
	} {
		if c.err == nil {
			t.Errorf("want an error with %q", c.want)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(c.err.Error(), w) {
				t.Errorf("error %q lacks %q", c.err, w)
			}
		}
	}
	a := DefineAction(ActionDef[wrongTag, None, None]{Method: "POST", Path: "/x",
		Handler: func(*Ctx, ActionInput[wrongTag, None]) (None, error) { return None{}, nil }})
	b := setup(t)
	if _, err := NewResource(t.Context(), b.db, "todos", &Config{Actions: map[string]*Action{"x": a}}); err == nil ||
		!strings.Contains(err.Error(), `tablegate:"minLength=3"`) {
		t.Errorf("resource with a keyword in a jsonschema tag: %v", err)
	}
}
