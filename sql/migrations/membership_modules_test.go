package migrations_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// removedA names tenant A in its claims but has no membership of it (a
// member removed from the table while the claim stays).
const removedA = "d0d0d0d0-0000-4000-8000-0000000000d0"

// membershipCallers are the callers the require_membership tests compare.
func membershipCallers() []caller {
	return []caller{
		{"member", user(userA1, tenantA)},
		{"claim without membership", user(removedA, tenantA)},
		{"anonymous member", guest(guestA, tenantA)},
		{"anonymous sign-in naming B", guest(guestA, tenantB)},
		{"member of B", user(userB1, tenantB)},
	}
}

// TestStorageRequireMembership: a bucket enabled with require_membership
// is reachable by members of the folder's tenant only: a user whose claim
// names the tenant but who is no member reads and writes nothing; an
// anonymous member reads only with anon_read and never writes. The choice
// is recorded (apply_storage_policies keeps it), and enabling the bucket
// again without it restores the claim-only policies.
func TestStorageRequireMembership(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	fixture(t, pool, "supabase_storage.sql")
	execScript(t, pool, membershipFixture)
	admin(t, pool, `insert into storage.buckets (id, name) values ('docs', 'docs')`)
	admin(t, pool, `select tablegate.enable_storage_policies('files', require_membership => true)`)
	admin(t, pool, `select tablegate.enable_storage_policies('docs', anon_read => true, require_membership => true)`)
	for _, o := range [][2]string{{"files", tenantA + "/doc.txt"}, {"files", tenantB + "/doc.txt"}, {"docs", tenantA + "/readme.md"}} {
		admin(t, pool, `insert into storage.objects (bucket_id, name) values ($1, $2)`, o[0], o[1])
	}
	d := db.New(pool, nil)
	read := func(c authctx.Auth, bucket string) string {
		t.Helper()
		return scalar[string](t, d, c, `select coalesce(string_agg(name, ',' order by name collate "C"), '') from storage.objects where bucket_id = $1`, bucket)
	}
	check := func(stage string, want map[string][2]string) {
		t.Helper()
		for _, c := range membershipCallers() {
			w := want[c.name]
			if got := read(c.ctx, "files"); got != w[0] {
				t.Errorf("%s: %s reads files %q, want %q", stage, c.name, got, w[0])
			}
			if got := read(c.ctx, "docs"); got != w[1] {
				t.Errorf("%s: %s reads docs %q, want %q", stage, c.name, got, w[1])
			}
		}
	}
	docA, docB, readme := tenantA+"/doc.txt", tenantB+"/doc.txt", tenantA+"/readme.md"
	required := map[string][2]string{
		"member":                     {docA, readme},
		"claim without membership":   {"", ""},
		"anonymous member":           {"", readme},
		"anonymous sign-in naming B": {"", ""},
		"member of B":                {docB, ""},
	}
	check("required", required)
	for _, tc := range []struct {
		name string
		c    authctx.Auth
		want string
	}{
		{"member", user(userA1, tenantA), ""},
		{"claim without membership", user(removedA, tenantA), "42501"},
		{"anonymous member", guest(guestA, tenantA), "42501"},
	} {
		err := exec(t, d, tc.c, `insert into storage.objects (bucket_id, name) values ('files', $1)`, tenantA+"/"+tc.name+".txt")
		if got := sqlState(err); got != tc.want {
			t.Errorf("%s uploads into A's folder: SQLSTATE %q, want %q", tc.name, got, tc.want)
		}
	}
	if err := exec(t, d, user(removedA, tenantA), `delete from storage.objects where name = $1`, docA); err != nil {
		t.Fatal(err)
	}
	if n := adminScalar[int](t, pool, `select count(*) from storage.objects where name = $1`, docA); n != 1 {
		t.Error("a caller without membership deleted the tenant's file")
	}
	admin(t, pool, `delete from storage.objects where name like '%.txt' and name <> $1 and name <> $2`, docA, docB)

	// Recorded: installing the recorded buckets again keeps the choice.
	if n := adminScalar[int](t, pool, `select tablegate.apply_storage_policies()`); n != 2 {
		t.Fatalf("apply_storage_policies installed %d buckets, want 2", n)
	}
	check("applied again", required)

	// Without it, the claim decides again.
	admin(t, pool, `select tablegate.enable_storage_policies('files')`)
	admin(t, pool, `select tablegate.enable_storage_policies('docs', anon_read => true)`)
	check("claim only", map[string][2]string{
		"member":                     {docA, readme},
		"claim without membership":   {docA, readme},
		"anonymous member":           {"", readme},
		"anonymous sign-in naming B": {"", ""},
		"member of B":                {docB, ""},
	})
}

// TestRealtimeRequireMembership: with require_membership, tenant topics
// are joined and sent on by full members of the topic's tenant only; the
// choice is recorded, so enable_realtime_policies() without an argument
// (as after installing Realtime) keeps it; false restores the claim.
func TestRealtimeRequireMembership(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	fixture(t, pool, "supabase_realtime.sql")
	if err := db.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	execScript(t, pool, membershipFixture)
	d := db.New(pool, nil)
	topicA := "tenant:" + tenantA + ":chat"
	admin(t, pool, `insert into realtime.messages (topic, extension, payload, private) values ($1, 'broadcast', '{}', true)`, topicA)
	check := func(stage string, want map[string]int) {
		t.Helper()
		for _, c := range membershipCallers() {
			if got := receives(t, d, c.ctx, topicA); got != want[c.name] {
				t.Errorf("%s: %s receives %d on A's topic, want %d", stage, c.name, got, want[c.name])
			}
			wantState := "42501"
			if want[c.name] > 0 {
				wantState = ""
			}
			err := exec(t, d, c.ctx, `insert into realtime.messages (topic, extension, payload) values ($1, 'broadcast', '{}')`, topicA+":"+c.name)
			if got := sqlState(err); got != wantState {
				t.Errorf("%s: %s sends on A's topic: SQLSTATE %q, want %q", stage, c.name, got, wantState)
			}
		}
		admin(t, pool, `delete from realtime.messages where topic <> $1`, topicA)
	}
	members := map[string]int{"member": 1}
	claims := map[string]int{"member": 1, "claim without membership": 1}

	check("claim only (default)", claims)
	if !adminScalar[bool](t, pool, `select tablegate.enable_realtime_policies(require_membership => true)`) {
		t.Fatal("enable_realtime_policies: false")
	}
	check("required", members)
	admin(t, pool, `select tablegate.enable_realtime_policies()`)
	check("installed again, as recorded", members)
	admin(t, pool, `select tablegate.enable_realtime_policies(false)`)
	check("claim only again", claims)
}

// TestModulesReadTheViews: the storage and realtime policies that require
// a membership read the views tablegate.member_tenant (readers) and
// tablegate.full_member_tenant (writers, and every realtime caller) in a
// sub-select, once per statement, never a membership function; and what
// each kind of caller may read, upload, receive and send, in
// testdata/answers/modules.txt.
func TestModulesReadTheViews(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	fixture(t, pool, "supabase_storage.sql")
	fixture(t, pool, "supabase_realtime.sql")
	if err := db.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	execScript(t, pool, membershipFixture)
	admin(t, pool, `insert into storage.buckets (id, name) values ('docs', 'docs')`)
	admin(t, pool, `select tablegate.enable_storage_policies('files', require_membership => true)`)
	admin(t, pool, `select tablegate.enable_storage_policies('docs', anon_read => true, require_membership => true)`)
	admin(t, pool, `select tablegate.enable_realtime_policies(require_membership => true)`)
	admin(t, pool, `insert into storage.objects (bucket_id, name) values ('files', $1), ('files', $2), ('docs', $3)`, tenantA+"/doc.txt", tenantB+"/doc.txt", tenantA+"/readme.md")
	topicA := "tenant:" + tenantA + ":chat"
	admin(t, pool, `insert into realtime.messages (topic, extension, payload, private) values ($1, 'broadcast', '{}', true)`, topicA)
	d := db.New(pool, nil)

	p := adminScalar[string](t, pool, `select string_agg(coalesce(pg_get_expr(polqual, polrelid), '') || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), ''), ' ')
  from pg_policy where polrelid in ('storage.objects'::regclass, 'realtime.messages'::regclass) and polname like 'tablegate%'`)
	if strings.Contains(p, "member_tenant_id") || strings.Contains(p, "is_member") ||
		!strings.Contains(p, "FROM tablegate.member_tenant)") || !strings.Contains(p, "FROM tablegate.full_member_tenant)") {
		t.Errorf("the policies do not read the views alone: %s", p)
	}

	var b strings.Builder
	for _, c := range membershipCallers() {
		files := scalar[string](t, d, c.ctx, `select coalesce(string_agg(name, ',' order by name collate "C"), '') from storage.objects`)
		upload := sqlState(exec(t, d, c.ctx, `insert into storage.objects (bucket_id, name) values ('files', $1)`, tenantA+"/up.txt"))
		send := sqlState(exec(t, d, c.ctx, `insert into realtime.messages (topic, extension, payload) values ($1, 'broadcast', '{}')`, topicA+":x"))
		fmt.Fprintf(&b, "%s: files %q, upload %q, receives %d, sends %q\n", c.name, files, upload, receives(t, d, c.ctx, topicA), send)
		admin(t, pool, `delete from storage.objects where name = $1`, tenantA+"/up.txt")
		admin(t, pool, `delete from realtime.messages where topic <> $1`, topicA)
	}
	got := b.String()
	if !strings.Contains(got, `member: files "`+tenantA+`/doc.txt,`+tenantA+`/readme.md", upload "", receives 1, sends ""`) ||
		!strings.Contains(got, `anonymous member: files "`+tenantA+`/readme.md", upload "42501"`) ||
		!strings.Contains(got, `claim without membership: files "", upload "42501", receives 0, sends "42501"`) {
		t.Errorf("members, anonymous members and removed members are not told apart:\n%s", got)
	}
	checkAnswers(t, "modules.txt", got)
}
