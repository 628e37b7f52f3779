package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParseServeConfig: any input is refused with an error or gives a
// config whose every table has a valid name, operations and guard; it
// never panics, and validating twice changes nothing.
func FuzzParseServeConfig(f *testing.F) {
	for _, s := range []string{
		`{"tables":{"todos":{}}}`,
		`{"base_path":"/v1","tables":{"t":{"table":"s.t","operations":["list"],"guard":["anon"],"permissions":{"list":"k"}}}}`,
		`{"tables":{"t":{"table":"x; drop table y"}}}`, `{"tables":{"":{}}}`, `{"tables":{"t":null}}`, `{}`, `[]`,
		`{"base_path":"","tables":{"a-b":{"select":["id"]}},"permissions":{"k":["admin"]},"mcp":true}`,
		`{"events":{"retention":"24h","max_replay":5},"tables":{"t":{"events":true}}}`,
		// Errors located by line, column and key path.
		"{\n  \"tables\": {\"todos\": {\"operation\": [\"list\"]}}\n}", `{"base_path": "/v1" "tables": {}}`,
		`{"tables": {"t": {},}}`, `{"tables": {"t": {"operations": "list"}}}`, `{"auth": {"jwks": "x"}, "tables": {"t": {}}}`,
		`{"tables": {"t": {"allow_without_rls": "yes"}}}`, `{"tables": {"t\"x": {"a\\\"b": 1}}}`, `{"tables": {"t": {"events": true}}`,
		`{"timeouts": {"read": 5}, "tables": {"t": {}}}`, "{\"tables\": {\"\u00e9t\u00e9\": {\"s\u00e9lect\": []}}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := parseServeConfig(data, "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a config error spans lines: %q", err)
			}
			return
		}
		for name, tc := range c.Tables {
			if !routeName.MatchString(name) || !tableName.MatchString(tc.Table) || len(tc.Operations) == 0 || len(tc.Guard) == 0 {
				t.Fatalf("accepted an invalid table %q: %+v", name, tc)
			}
		}
		before, _ := json.Marshal(c)
		if err := c.validate(); err != nil {
			t.Fatalf("a validated config fails validation: %v", err)
		}
		if after, _ := json.Marshal(c); string(after) != string(before) {
			t.Fatalf("validate is not idempotent:\n%s\n%s", before, after)
		}
	})
}
