package authz_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/authz"
	"github.com/tablegate/tablegate/rest"
)

// FuzzClaimsAuthorize: any claims and row decode without a panic, and
// user_metadata never grants a role or a membership. Seeds live in
// testdata/fuzz/FuzzClaimsAuthorize.
func FuzzClaimsAuthorize(f *testing.F) {
	f.Add([]byte(`{"sub":"11111111-1111-1111-1111-111111111111","roles":["admin"]}`), []byte(`{"tenant_id":"t"}`))
	rules := authz.Rules{
		"role":   authz.Role("admin"),
		"member": authz.Member("tenant", authz.RowColumn("tenant_id"), "owner"),
		"tenant": authz.Member("tenant", authz.Tenant()),
		"any":    authz.Any(authz.All(authz.SignedIn(), authz.Member("p", authz.Key())), authz.Member("t", authz.DataColumn("x"))),
	}
	a, err := authz.Claims(rules, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, claimsJSON, rowJSON []byte) {
		var c authctx.Claims
		if json.Unmarshal(claimsJSON, &c) != nil || c == nil {
			return
		}
		var row rest.Row
		dec := json.NewDecoder(bytes.NewReader(rowJSON))
		dec.UseNumber()
		_ = dec.Decode(&row)
		caller := authctx.NewUser(c, "t", nil)
		// The same claims with everything moved under user_metadata.
		meta := authctx.Claims{"sub": c["sub"], "user_metadata": map[string]any(c)}
		metaCaller := authctx.NewUser(meta, "t", nil)
		for key := range rules {
			req := &rest.AuthzRequest{Permission: key, Table: "todos", Row: row, Data: row, Key: row["id"], Caller: caller}
			if _, err := a.Authorize(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if _, err := a.AuthorizeRows(context.Background(), req, []rest.Row{row, nil, {}}); err != nil {
				t.Fatal(err)
			}
			if key == "any" {
				continue // SignedIn() may grant on sub alone
			}
			req.Caller = metaCaller
			if d, _ := a.Authorize(context.Background(), req); d.Effect == rest.Allow {
				t.Fatalf("%s granted from user_metadata: %s", key, claimsJSON)
			}
		}
	})
}
