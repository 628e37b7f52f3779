package spec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/rest"
	"github.com/tablegate/tablegate/spec"
)

// A table served without row-level security (the explicit opt-out) says
// so in the document: x-service-rls: false on each of its operations and
// a sentence in their descriptions and its tag's; protected tables carry
// neither.
func TestDocumentMarksTablesWithoutRLS(t *testing.T) {
	t.Parallel()
	b := setup(t)
	if _, err := b.pool.Exec(context.Background(), `create table public.catalog (id int primary key, name text);
grant select on public.catalog to authenticated, anon;`); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cat, err := rest.NewResource(context.Background(), b.db, "catalog", &rest.Config{AllowWithoutRLS: true,
		Operations: []rest.Operation{rest.OpList, rest.OpGet}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]*rest.Resource{"catalog": cat, "notes": b.res["notes"]}
	api, err := spec.DefineAPI(apiOptions(res))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]map[string]any `json:"paths"`
		Tags  []struct{ Name, Description string } `json:"tags"`
	}
	if err := json.Unmarshal(api.JSON(), &doc); err != nil {
		t.Fatal(err)
	}
	for path, ops := range doc.Paths {
		for m, op := range ops {
			rls, has := op["x-service-rls"]
			desc, _ := op["description"].(string)
			if strings.HasPrefix(path, "/catalog") {
				if rls != false || !strings.Contains(desc, "Row-level security does not protect this table") {
					t.Errorf("%s %s: x-service-rls %v, description %q", m, path, rls, desc)
				}
			} else if has || strings.Contains(desc, "Row-level security does not protect") {
				t.Errorf("%s %s is protected but marked: %v %q", m, path, rls, desc)
			}
		}
	}
	for _, tg := range doc.Tags {
		if marked := strings.Contains(tg.Description, "row-level security is disabled"); marked != (tg.Name == "catalog") {
			t.Errorf("tag %s: %q", tg.Name, tg.Description)
		}
	}
	if !strings.Contains(logs.String(), "served WITHOUT row-level security") {
		t.Errorf("no warning logged: %s", logs.String())
	}
}
