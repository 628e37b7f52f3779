package spec_test

import (
	"strings"
	"testing"

	"github.com/tablegate/tablegate/internal/oasexamples"
)

// TestEveryExampleValidates walks the whole generated document of the
// fixture (CRUD with every column type, actions with inputs, problem
// responses) and validates every example against its own schema; the
// request bodies carry one each.
func TestEveryExampleValidates(t *testing.T) {
	b := setup(t)
	n, errs := oasexamples.Check(b.api.JSON())
	for _, err := range errs {
		t.Error(err)
	}
	bodies := strings.Count(string(b.api.JSON()), `"summary": "A body the schema accepts"`)
	if n < 10 || bodies < 3 {
		t.Fatalf("checked %d examples, %d request body examples: the walk missed them", n, bodies)
	}
	t.Logf("%d examples validate (%d request bodies)", n, bodies)
}

// TestExampleCheckerRejects proves the walk can fail: a request body
// example that breaks minLength, and a schema example of the wrong type.
func TestExampleCheckerRejects(t *testing.T) {
	doc := `{"openapi":"3.1.0","paths":{"/t":{"post":{"requestBody":{"content":{"application/json":{
	  "schema":{"$ref":"#/components/schemas/T"},
	  "examples":{"bad":{"value":{"title":""}}}}}}}}},
	  "components":{"schemas":{"T":{"type":"object","required":["title"],
	    "properties":{"title":{"type":"string","minLength":1},"n":{"type":"integer","examples":["x"]}}}}}}`
	n, errs := oasexamples.Check([]byte(doc))
	if n != 2 || len(errs) != 2 {
		t.Fatalf("checked %d, errors %v; want 2 and 2", n, errs)
	}
}
