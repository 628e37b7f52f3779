package rest

import (
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestValidatorNamesPathsNotValues(t *testing.T) {
	t.Parallel()
	type in struct {
		Title string `json:"title" jsonschema:"the title"`
		Tags  []struct {
			Name string `json:"name"`
		} `json:"tags,omitempty"`
	}
	s := MustSchemaFor[in]()
	s.Properties["title"].MinLength = jsonschema.Ptr(3)
	s.Properties["title"].Pattern = "^[a-z]+$"
	v, err := newValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := decodeJSON([]byte(`{"title":"SECRETVALUE","extra":1,"tags":[{"name":"ok"},{"name":7}]}`))
	errs := v.check(inst)
	got := map[string]string{}
	for _, e := range errs {
		got[e.Path] = e.Message
		if strings.Contains(e.Message, "SECRET") || strings.Contains(e.Message, "7") {
			t.Errorf("message leaks a value: %q", e.Message)
		}
	}
	for _, p := range []string{"/title", "/extra", "/tags/1/name"} {
		if _, ok := got[p]; !ok {
			t.Errorf("no error at %s; got %v", p, got)
		}
	}
	if got["/title"] != "fails pattern" {
		t.Errorf("/title: %q", got["/title"])
	}
	inst, _ = decodeJSON([]byte(`{}`))
	errs = v.check(inst)
	if len(errs) != 1 || errs[0].Path != "/title" || errs[0].Message != "is required" {
		t.Errorf("missing title: %+v", errs)
	}
	inst, _ = decodeJSON([]byte(`{"title":"abc"}`))
	if errs := v.check(inst); errs != nil {
		t.Errorf("valid: %+v", errs)
	}
}
