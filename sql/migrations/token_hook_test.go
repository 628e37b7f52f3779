package migrations_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// hookClaims runs tablegate.access_token_hook on claims as Supabase Auth
// would (event {"user_id", "claims", "authentication_method"}), as the
// admin, and returns the claims it answers.
func hookClaims(t *testing.T, pool *pgxpool.Pool, claims authctx.Claims) authctx.Claims {
	t.Helper()
	event := map[string]any{"claims": claims, "authentication_method": "password"}
	if sub, ok := claims["sub"].(string); ok {
		event["user_id"] = sub
	}
	raw, err := json.Marshal(event)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Claims               authctx.Claims `json:"claims"`
		UserID               any            `json:"user_id"`
		AuthenticationMethod string         `json:"authentication_method"`
	}
	if err := json.Unmarshal([]byte(adminScalar[string](t, pool, `select tablegate.access_token_hook($1::jsonb)::text`, string(raw))), &out); err != nil {
		t.Fatal(err)
	}
	if out.AuthenticationMethod != "password" || out.UserID != event["user_id"] {
		t.Fatalf("the hook changed the event beyond its claims: %+v", out)
	}
	return out.Claims
}

// TestAccessTokenHookWritesMemberships checks the claim the hook writes:
// the subject's memberships of the table, ordered, roles as arrays; every
// other claim untouched; a memberships claim it did not write removed.
func TestAccessTokenHookWritesMemberships(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)

	got := hookClaims(t, pool, authctx.Claims{"sub": userA1, "role": "authenticated", "tenant_id": tenantA,
		"app_metadata": map[string]any{"provider": "email"}, "is_anonymous": false})
	want := `{"app_metadata":{"provider":"email"},"is_anonymous":false,` +
		`"memberships":[{"id":"p1","roles":[],"scope":"project"},{"id":"` + tenantA + `","roles":["member"],"scope":"tenant"}],` +
		`"role":"authenticated","sub":"` + userA1 + `","tenant_id":"` + tenantA + `"}`
	if b, _ := json.Marshal(got); string(b) != want {
		t.Errorf("user A1's claims:\n got %s\nwant %s", b, want)
	}

	// A memberships claim the issuer did not write is replaced, or removed
	// for a subject without memberships or without a uuid sub.
	forged := []any{map[string]any{"scope": "tenant", "id": tenantB, "roles": []any{"owner"}}}
	got = hookClaims(t, pool, authctx.Claims{"sub": userA2, "memberships": forged})
	if b, _ := json.Marshal(got["memberships"]); string(b) != `[{"id":"`+tenantA+`","roles":["member","admin"],"scope":"tenant"}]` {
		t.Errorf("user A2's memberships: %s", b)
	}
	for _, c := range []authctx.Claims{
		{"sub": "c0c0c0c0-0000-4000-8000-0000000000c0", "memberships": forged}, // no membership
		{"sub": "not-a-uuid", "memberships": forged},
		{"memberships": forged}, // no sub
	} {
		if got := hookClaims(t, pool, c); got["memberships"] != nil || len(got) != len(c)-1 {
			t.Errorf("%v: the hook answered %v", c, got)
		}
	}
	// Memberships an administrator put in app_metadata come along in the
	// claim's shape (what authctx.StandardClaimsSchema requires): scope and
	// id as strings, roles an array of strings; an entry the helpers could
	// never match is left out.
	got = hookClaims(t, pool, authctx.Claims{"sub": userB1, "app_metadata": map[string]any{"memberships": []any{
		map[string]any{"scope": "tenant", "id": tenantA},
		map[string]any{"scope": "project", "id": 7, "roles": []any{"lead", 3, nil, "x"}},
		map[string]any{"scope": "tenant", "id": tenantB, "roles": "owner"},
		map[string]any{"scope": "tenant", "id": map[string]any{"a": 1}}, "tenant", nil, 42,
		map[string]any{"id": tenantA},
	}}})
	if b, _ := json.Marshal(got["memberships"]); string(b) != `[{"id":"`+strings.ToUpper(tenantA)+`","roles":[],"scope":"tenant"},`+
		`{"id":"`+tenantB+`","roles":["member"],"scope":"tenant"},`+
		`{"id":"`+tenantA+`","roles":[],"scope":"tenant"},{"id":"7","roles":["lead","x"],"scope":"project"},`+
		`{"id":"`+tenantB+`","roles":[],"scope":"tenant"}]` {
		t.Errorf("user B1 with app_metadata memberships: %s", b)
	}

	// Claims that are not an object are left as they are.
	for _, ev := range []string{`{"claims": null}`, `{}`, `{"claims": [1]}`} {
		if got := adminScalar[string](t, pool, `select tablegate.access_token_hook($1::jsonb)::text`, ev); got != ev {
			t.Errorf("event %s: the hook answered %s", ev, got)
		}
	}

	// memberships_claim for a user of the table and for a stranger.
	if got := adminScalar[string](t, pool, `select tablegate.memberships_claim($1)::text`, userB1); !strings.Contains(got, `"id": "`+tenantB+`"`) ||
		!strings.Contains(got, `"id": "`+strings.ToUpper(tenantA)+`"`) {
		t.Errorf("memberships_claim(B1) = %s", got)
	}
	if got := adminScalar[string](t, pool, `select tablegate.memberships_claim('c0c0c0c0-0000-4000-8000-0000000000c0')::text`); got != "[]" {
		t.Errorf("memberships_claim(stranger) = %s", got)
	}
}

// TestAccessTokenHookNotForCallers: a caller cannot read anybody's
// memberships through the hook or memberships_claim; the service role can.
func TestAccessTokenHookNotForCallers(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	d := db.New(pool, nil)
	for _, c := range []caller{{"user of A", user(userA1, tenantA)}, {"no session", noSession}} {
		for _, sql := range []string{
			`select tablegate.memberships_claim('` + userB1 + `')::text`,
			`select tablegate.access_token_hook('{"claims": {"sub": "` + userB1 + `"}}')::text`,
		} {
			if got := answer(t.Context(), d, c.ctx, sql); got != "error 42501" {
				t.Errorf("%s: %s answered %q, want permission denied", c.name, sql, got)
			}
		}
	}
	if got := answer(t.Context(), d, service, `select jsonb_array_length(tablegate.memberships_claim('`+userA1+`'))`); got != "2" {
		t.Errorf("service role: memberships_claim(A1) has %s memberships, want 2", got)
	}
}

// TestHookClaimsAnswerAsTable: for every kind of caller, the helpers answer
// alike whether its token carries the memberships the hook writes or not
// (the table then decides), and the claim alone decides: the same answers
// come back after the table is emptied — a membership removed from the
// table still admits a token that carries it (the documented price) — while
// a membership added after the token was issued is found at once.
func TestHookClaimsAnswerAsTable(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	execScript(t, pool, membershipFixture)
	d := db.New(pool, nil)

	type pair struct {
		name        string
		plain, hook authctx.Auth
	}
	var pairs []pair
	members := 0
	for _, c := range callerKinds() {
		claims := c.ctx.Claims()
		if claims == nil { // no session, service role: no token to extend
			continue
		}
		// Keep the caller's own memberships claim out: the table and the
		// hook's claim are what is compared.
		plain := authctx.Claims{}
		for k, v := range claims {
			if k != "memberships" {
				plain[k] = v
			}
		}
		hooked := hookClaims(t, pool, plain)
		if hooked["memberships"] != nil {
			members++
		}
		pairs = append(pairs, pair{c.name, authctx.NewUser(plain, "tok", nil), authctx.NewUser(hooked, "tok", nil)})
	}
	if members < 4 {
		t.Fatalf("only %d callers got a memberships claim: the comparison proves little", members)
	}
	exprs := append([]string{
		`tablegate.member_tenant_id()::text`, `tablegate.member_tenant_id('admin')::text`, `tablegate.member_tenant_id('owner')::text`,
	}, helperExpressions...)
	// The claim itself differs, by design.
	exprs = slices.DeleteFunc(exprs, func(e string) bool { return strings.Contains(e, "claim_array('memberships')") })
	fromTable := map[string]string{}
	admitted := 0
	for _, p := range pairs {
		for _, e := range exprs {
			got, want := answer(t.Context(), d, p.hook, "select "+e), answer(t.Context(), d, p.plain, "select "+e)
			if got != want {
				t.Errorf("%s: %s = %q with the hook's claim, %q from the table", p.name, e, got, want)
			}
			fromTable[p.name+": "+e] = want
			if e == exprs[0] && got == tenantA {
				admitted++
			}
		}
	}
	if admitted == 0 {
		t.Fatal("no caller is a member of tenant A: the comparison proves nothing")
	}

	// The claim alone decides: with the table emptied, every token carrying
	// the hook's claim is answered as the table answered (so a removed
	// membership admits until the token expires, the documented price),
	// while a token without the claim is no longer a member.
	admin(t, pool, `delete from tablegate.memberships`)
	for _, p := range pairs {
		for _, e := range exprs {
			if got, want := answer(t.Context(), d, p.hook, "select "+e), fromTable[p.name+": "+e]; got != want {
				t.Errorf("table emptied, %s: %s = %q with the hook's claim, %q from the table before", p.name, e, got, want)
			}
		}
	}
	fullA := pairs[0]
	if fullA.name != "full user of A" {
		t.Fatalf("first caller is %q", fullA.name)
	}
	if got := answer(t.Context(), d, fullA.plain, `select tablegate.member_tenant_id()::text`); got != "<nil>" {
		t.Errorf("table emptied, token without the claim: member_tenant_id() = %q, want none", got)
	}
	// A membership added after the token was issued is found in the table.
	admin(t, pool, `insert into tablegate.memberships (user_id, scope, scope_id, roles) values ($1, 'tenant', $2, '{member}')`, userA1, tenantB)
	staleB := authctx.NewUser(authctx.Claims{"sub": userA1, "role": "authenticated", "tenant_id": tenantB,
		"memberships": fullA.hook.Claims()["memberships"]}, "tok", nil)
	if got := answer(t.Context(), d, staleB, `select tablegate.member_tenant_id()::text`); got != tenantB {
		t.Errorf("membership added after the token: member_tenant_id() = %q, want %s", got, tenantB)
	}
}

// TestAccessTokenHookGrantedToSupabaseAuth: where the role Supabase Auth
// runs hooks as exists, the migration lets it call the hook (and nothing
// else new); without it, the migration applies all the same.
//
// It does not run in parallel: the parallel tests, which compare
// catalogues and schema dumps taken at different moments (the migration
// grants the role what it needs when it exists), start once it has
// created the role, so the role does not appear between two snapshots.
func TestAccessTokenHookGrantedToSupabaseAuth(t *testing.T) {
	pool := pgtest.DB(t)
	// Roles are the cluster's: create it when missing, leave it (other
	// databases of the cluster may rely on it just as well).
	admin(t, pool, `do $$ begin
	  perform pg_advisory_xact_lock(hashtext('tablegate.test.roles'));
	  if not exists (select from pg_roles where rolname = 'supabase_auth_admin') then
	    create role supabase_auth_admin nologin noinherit;
	  end if;
	exception when duplicate_object or unique_violation then null; -- another test run's
	end $$`)
	m, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.DownTo(t.Context(), versionOf(t, "access_token_hook")-1); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context()); err != nil {
		t.Fatal(err)
	}
	execScript(t, pool, membershipFixture)
	conn, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(t.Context()) }()
	if _, err := tx.Exec(t.Context(), `set local role supabase_auth_admin`); err != nil {
		t.Fatal(err)
	}
	var out string
	if err := tx.QueryRow(t.Context(), `select tablegate.access_token_hook($1::jsonb) -> 'claims' ->> 'memberships'`,
		`{"user_id": "`+userB1+`", "claims": {"sub": "`+userB1+`"}}`).Scan(&out); err != nil {
		t.Fatalf("supabase_auth_admin calls the hook: %v", err)
	}
	if !strings.Contains(out, tenantB) {
		t.Errorf("supabase_auth_admin: memberships %s", out)
	}
	if _, err := tx.Exec(t.Context(), `savepoint s`); err != nil {
		t.Fatal(err)
	}
	err = tx.QueryRow(t.Context(), `select tablegate.memberships_claim($1)::text`, userB1).Scan(&out)
	if sqlState(err) != "42501" {
		t.Errorf("supabase_auth_admin calls memberships_claim directly: %v, want permission denied", err)
	}
}
