package spec

import (
	"encoding/json"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

func TestValidExample(t *testing.T) {
	schema := func(js string) *jsonschema.Schema {
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(js), &s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	for _, c := range []struct{ schema, want string }{
		{`{"type":"object","required":["title"],"properties":{"title":{"type":"string","minLength":10},"done":{"type":"boolean"}}}`, `{"title":"stringxxxx"}`},
		{`{"type":"object","required":["t"],"properties":{"t":{"type":"string","maxLength":3}}}`, `{"t":"str"}`},
		{`{"type":"object","properties":{"title":{"type":"string","minLength":1},"done":{"type":"boolean"}}}`, `{"done":false}`},
		{`{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":4,"maximum":9}}}`, `{"n":5}`},
		{`{"type":"object","required":["n"],"properties":{"n":{"type":"number","minimum":2.5,"multipleOf":2}}}`, `{"n":4}`},
		{`{"type":"object","required":["k"],"properties":{"k":{"enum":["b","a"]}}}`, `{"k":"b"}`},
		{`{"type":"object","required":["k"],"properties":{"k":{"type":["null","string"],"format":"uuid"}}}`, `{"k":"00000000-0000-4000-8000-000000000000"}`},
		{`{"type":"object","required":["p"],"properties":{"p":{"$ref":"#/$defs/P"}},"$defs":{"P":{"type":"object","required":["x"],"properties":{"x":{"type":"integer","minimum":3}}}}}`, `{"p":{"x":3}}`},
		{`{"type":"object","required":["tags"],"properties":{"tags":{"type":"array","minItems":2,"items":{"type":"string"}}}}`, `{"tags":["string","string"]}`},
		{`{"type":"object","required":["c"],"properties":{"c":{"type":"string","pattern":"^[A-Z]{3}$","examples":["ABC"]}}}`, `{"c":"ABC"}`},
		// No value can be guessed: no example rather than a wrong one.
		{`{"type":"object","required":["c"],"properties":{"c":{"type":"string","pattern":"^[A-Z]{3}$"}}}`, ``},
		{`{"type":"object","required":["tags"],"properties":{"tags":{"type":"array","minItems":2,"uniqueItems":true,"items":{"type":"string"}}}}`, ``},
		{`{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":5,"maximum":4}}}`, ``},
		{`{"type":"object","required":["x"],"properties":{}}`, ``},
	} {
		v, ok := validExample(schema(c.schema))
		got := ""
		if ok {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != c.want {
			t.Errorf("%s: example %s, want %s", c.schema, got, c.want)
		}
	}
}

func TestCodeSpan(t *testing.T) {
	for in, want := range map[string]string{
		"title":                 "`title`",
		"<column>":              "`<column>`",
		"a`b":                   "`` a`b ``",
		"a``b`":                 "``` a``b` ```",
		"<operator>.<value>|x*": "`<operator>.<value>|x*`",
	} {
		if got := codeSpan(in); got != want {
			t.Errorf("codeSpan(%q) = %q, want %q", in, got, want)
		}
	}
}
