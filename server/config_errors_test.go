package server

import (
	"strings"
	"testing"
)

// Configuration errors say where (line, column, key path) and, for a
// near-miss key or value, what was meant.
func TestConfigErrorsHavePosition(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ body, want string }{
		"near-miss key": {"{\n  \"tables\": {\n    \"todos\": {\n      \"operation\": [\"list\"]\n    }\n  }\n}",
			`config tablegate.json: line 4, column 7: unknown key "operation" in tables.todos (did you mean "operations"?); the keys there are table, operations, select, key, permissions, guard, statement_timeout, filter_columns, events, allow_without_rls`},
		"top-level key": {`{"tabels": {}}`,
			`line 1, column 2: unknown key "tabels" at the top level (did you mean "tables"?)`},
		"nested key": {"{\"auth\": {\"jwks\": \"x\"},\n\"tables\": {\"t\": {}}}",
			`line 1, column 11: unknown key "jwks" in auth (did you mean "jwks_url"?); the keys there are url, jwks_url, refresh, issuer, audience, max_token_lifetime, flows`},
		"far-off key": {`{"tables": {"t": {"zzzzzz": 1}}}`,
			`line 1, column 19: unknown key "zzzzzz" in tables.t; the keys there are`},
		"missing comma": {"{\n  \"base_path\": \"/v1\"\n  \"tables\": {}\n}",
			`line 3, column 3: invalid character '"' after object key:value pair (a missing comma?)`},
		"trailing comma": {"{\"tables\": {\"t\": {},}}",
			`line 1, column 21: invalid character '}' looking for beginning of object key string (a trailing comma, or a key without quotes?)`},
		"unclosed": {"{\"tables\": {\"t\": {}}\n",
			`line 2, column 1: the file ends inside a value`},
		"wrong type": {"{\"tables\": {\"t\": {\"operations\": \"list\"}}}",
			`line 1, column 33: tables.t.operations is a JSON string, but it must be an array of strings`},
		"after the value": {"{\"tables\": {\"t\": {}}}\n{}",
			`line 2, column 2: content after the first JSON value`},
		"near-miss operation": {`{"tables": {"t": {"operations": ["lst"]}}}`,
			`tables.t.operations: unknown operation "lst" (did you mean "list"?)`},
		"near-miss guard": {`{"tables": {"t": {"guard": ["users"]}}}`,
			`tables.t.guard: unknown caller kind "users" (did you mean "user"?)`},
	} {
		_, err := ParseConfig([]byte(c.body), "tablegate.json")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant %s", name, err, c.want)
		}
	}
	// Keys match as encoding/json matches them: case-insensitively.
	if _, err := ParseConfig([]byte(`{"Tables": {"t": {"Operations": ["list"]}}}`), "x"); err != nil {
		t.Errorf("case-insensitive keys: %v", err)
	}
}
