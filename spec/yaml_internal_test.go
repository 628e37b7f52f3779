package spec

import "testing"

func TestYAMLEmitter(t *testing.T) {
	for _, c := range []struct{ json, yaml string }{
		{`{}`, "{}\n"},
		{`[]`, "[]\n"},
		{`"x"`, "\"x\"\n"},
		{`{"a":1,"b":[],"c":{},"yes":true,"200":null}`, "a: 1\nb: []\nc: {}\n\"yes\": true\n\"200\": null\n"},
		{`{"a":[{"b":1,"c":[1,[2,{}]]},{}]}`, "a:\n  - b: 1\n    c:\n      - 1\n      -\n        - 2\n        - {}\n  - {}\n"},
		{`{"s":"line\nnext \"q\" \\ \u0085 \u2028"}`, "s: \"line\\nnext \\\"q\\\" \\\\ \\u0085 \\u2028\"\n"},
		{`{"/p/{id}":{"get":{"x-k":1.5e3}}}`, "\"/p/{id}\":\n  get:\n    x-k: 1.5e3\n"},
	} {
		v, err := decodeOrdered([]byte(c.json))
		if err != nil {
			t.Fatal(err)
		}
		got, err := toYAML(v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.yaml {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", c.json, got, c.yaml)
		}
	}
}

func TestOrderedJSONKeepsOrder(t *testing.T) {
	const in = `{"z":1,"a":{"y":[true,false,null],"b":"\u003c"},"m":2}`
	v, err := decodeOrdered([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.(*omap).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"z":1,"a":{"y":[true,false,null],"b":"<"},"m":2}` {
		t.Errorf("got %s", b)
	}
	if _, err := decodeOrdered([]byte(`{} x`)); err == nil {
		t.Error("trailing data accepted")
	}
}
