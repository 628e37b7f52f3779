package db_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestRoleFollowsClaimsJSON: the database role is picked from the role
// claim of the JSON sent as request.jwt.claims, never from a Claims map
// that disagrees with it (a map a hook modified, or one built beside other
// bytes), so the role Postgres runs as and auth.role()/auth.jwt() in
// policies always agree.
func TestRoleFollowsClaimsJSON(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	d := db.New(pool, &db.Config{UserRoles: []string{db.RoleAuthenticated, db.RoleAnon}})
	run := func(c db.Caller) (role, jsonRole string, err error) {
		err = d.Run(context.Background(), c, db.RunOpts{}, func(q db.Querier) error {
			return q.QueryRow(context.Background(),
				`select current_user::text, coalesce(current_setting('request.jwt.claims', true)::json->>'role', '')`).Scan(&role, &jsonRole)
		})
		return role, jsonRole, err
	}
	withJSON := func(m claims, raw string) db.Caller {
		id, _ := m["sub"].(string)
		return db.UserCaller(id, json.RawMessage(raw))
	}
	for _, tc := range []struct {
		name   string
		caller db.Caller
		want   string // "" means refused with ErrRoleNotAllowed
	}{
		{"map says anon, JSON says authenticated", withJSON(claims{"sub": alice, "role": db.RoleAnon},
			`{"sub":"`+alice+`","role":"authenticated"}`), db.RoleAuthenticated},
		{"map says authenticated, JSON says anon", withJSON(claims{"sub": alice, "role": "authenticated"},
			`{"sub":"`+alice+`","role":"anon"}`), db.RoleAnon},
		{"map says authenticated, JSON says service_role", withJSON(claims{"sub": alice, "role": "authenticated"},
			`{"sub":"`+alice+`","role":"service_role"}`), ""},
		{"map has a role, JSON has none", withJSON(claims{"sub": alice, "role": "service_role"},
			`{"sub":"`+alice+`"}`), db.RoleAuthenticated},
		{"no JSON: the map is marshalled and followed", user(claims{"sub": alice, "role": db.RoleAnon}), db.RoleAnon},
	} {
		role, jsonRole, err := run(tc.caller)
		if tc.want == "" {
			if !errors.Is(err, db.ErrRoleNotAllowed) {
				t.Errorf("%s: err %v, want ErrRoleNotAllowed (role %q)", tc.name, err, role)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if role != tc.want {
			t.Errorf("%s: runs as %q, want %q", tc.name, role, tc.want)
		}
		if jsonRole != "" && jsonRole != role {
			t.Errorf("%s: runs as %q but request.jwt.claims says role %q", tc.name, role, jsonRole)
		}
	}
}
