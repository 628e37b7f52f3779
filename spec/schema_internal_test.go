package spec

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestEmbedSchemaHoistsDefs: $defs of a resource schema move to
// components.schemas and references follow them; $schema and $id go;
// boolean subschemas become objects (additionalProperties: false stays).
func TestEmbedSchemaHoistsDefs(t *testing.T) {
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(`{
		"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:x",
		"type": "object", "additionalProperties": false,
		"properties": {"tag": {"$ref": "#/$defs/Tag"}, "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag/properties/name"}}, "any": true},
		"$defs": {"Tag": {"type": "object", "properties": {"name": {"type": "string"}, "parent": {"$ref": "#/$defs/Tag"}}}}
	}`), &s); err != nil {
		t.Fatal(err)
	}
	b := newBuilder(&Config{}, "")
	v, err := b.embedSchema(&s, "Todo_create")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := v.(*omap).MarshalJSON()
	got := string(out)
	for _, want := range []string{`"$ref":"#/components/schemas/Todo_create_Tag"`, `"$ref":"#/components/schemas/Todo_create_Tag/properties/name"`, `"any":{}`, `"additionalProperties":false`} {
		if !strings.Contains(got, want) {
			t.Errorf("embedded schema lacks %s: %s", want, got)
		}
	}
	for _, bad := range []string{"$defs", "$schema", "$id"} {
		if strings.Contains(got, bad) {
			t.Errorf("embedded schema keeps %s: %s", bad, got)
		}
	}
	def, ok := b.schemas.get("Todo_create_Tag")
	if !ok {
		t.Fatal("Tag not hoisted")
	}
	db, _ := def.(*omap).MarshalJSON()
	if !strings.Contains(string(db), `"$ref":"#/components/schemas/Todo_create_Tag"`) {
		t.Errorf("reference inside the hoisted schema not rewritten: %s", db)
	}
	// Hoisting the same name twice is an error, not a silent overwrite.
	if _, err := b.embedSchema(&s, "Todo_create"); err == nil {
		t.Error("duplicate component accepted")
	}
}
