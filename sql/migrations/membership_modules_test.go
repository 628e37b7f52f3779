package migrations_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pressly/goose/v3"

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
	execScript(t, pool, equivalenceFixture)
	admin(t, pool, `insert into storage.buckets (id, name) values ('docs', 'docs')`)
	admin(t, pool, `select tablegate.enable_storage_policies('files', require_membership => true)`)
	admin(t, pool, `select tablegate.enable_storage_policies('docs', anon_read => true, require_membership => true)`)
	for _, o := range [][2]string{{"files", tenantA + "/doc.txt"}, {"files", tenantB + "/doc.txt"}, {"docs", tenantA + "/readme.md"}} {
		admin(t, pool, `insert into storage.objects (bucket_id, name) values ($1, $2)`, o[0], o[1])
	}
	d := db.New(pool, nil)
	read := func(c authctx.Caller, bucket string) string {
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
		c    authctx.Caller
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
	execScript(t, pool, equivalenceFixture)
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

// TestMembershipModulesDown: migrating 00032 down turns a bucket that
// required a membership into a claim-only one, and installs no realtime
// policies where the operator had none.
func TestMembershipModulesDown(t *testing.T) {
	t.Parallel()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	fixture(t, pool, "supabase_storage.sql")
	fixture(t, pool, "supabase_realtime.sql")
	if err := db.Migrate(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	execScript(t, pool, equivalenceFixture)
	admin(t, pool, `drop policy tablegate_tenant_topics_receive on realtime.messages`)
	admin(t, pool, `drop policy tablegate_tenant_topics_send on realtime.messages`)
	admin(t, pool, `select tablegate.enable_storage_policies('files', require_membership => true)`)
	admin(t, pool, `insert into storage.objects (bucket_id, name) values ('files', $1)`, tenantA+"/doc.txt")
	d := db.New(pool, nil)
	removed := user(removedA, tenantA)
	count := `select count(*) from storage.objects where bucket_id = 'files'`
	if n := scalar[int](t, d, removed, count); n != 0 {
		t.Fatalf("before down, a claim without membership reads %d files, want 0", n)
	}
	m, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if _, err := m.DownTo(t.Context(), 31); err != nil {
		t.Fatal(err)
	}
	if n := scalar[int](t, d, removed, count); n != 1 {
		t.Errorf("after down, a claim without membership reads %d files, want 1 (claim only)", n)
	}
	if n := adminScalar[int](t, pool, `select count(*) from pg_policy where polrelid = 'realtime.messages'::regclass and polname like 'tablegate_%'`); n != 0 {
		t.Errorf("down installed %d realtime policies where there were none", n)
	}
}

// modulesAt37 returns a database with Supabase's storage and realtime
// shapes migrated to 37, the version before the modules read the
// member-tenant views, and its migrator.
func modulesAt37(t *testing.T) (*pgxpool.Pool, *goose.Provider) {
	t.Helper()
	pool := pgtest.Pool(t, pgtest.EmptyURL(t))
	fixture(t, pool, "supabase_storage.sql")
	fixture(t, pool, "supabase_realtime.sql")
	m, err := db.NewMigrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if _, err := m.UpTo(t.Context(), 37); err != nil {
		t.Fatal(err)
	}
	return pool, m
}

// TestModulesReadTheViews: from migration 00038 the storage and realtime
// policies that require a membership read the views member_tenant and
// full_member_tenant instead of calling member_tenant_id(); a bucket and
// realtime policies installed before are re-created on the way up, and
// down to 37 brings the function calls back. Every step admits the same
// callers.
func TestModulesReadTheViews(t *testing.T) {
	t.Parallel()
	pool, m := modulesAt37(t)
	execScript(t, pool, equivalenceFixture)
	admin(t, pool, `insert into storage.buckets (id, name) values ('docs', 'docs')`)
	admin(t, pool, `select tablegate.enable_storage_policies('files', require_membership => true)`)
	admin(t, pool, `select tablegate.enable_storage_policies('docs', anon_read => true, require_membership => true)`)
	admin(t, pool, `select tablegate.enable_realtime_policies(require_membership => true)`)
	admin(t, pool, `insert into storage.objects (bucket_id, name) values ('files', $1), ('files', $2), ('docs', $3)`, tenantA+"/doc.txt", tenantB+"/doc.txt", tenantA+"/readme.md")
	topicA := "tenant:" + tenantA + ":chat"
	admin(t, pool, `insert into realtime.messages (topic, extension, payload, private) values ($1, 'broadcast', '{}', true)`, topicA)
	d := db.New(pool, nil)

	// policies returns the expressions of tablegate's storage and realtime
	// policies, all in one string.
	policies := func() string {
		return adminScalar[string](t, pool, `select string_agg(coalesce(pg_get_expr(polqual, polrelid), '') || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), ''), ' ')
  from pg_policy where polrelid in ('storage.objects'::regclass, 'realtime.messages'::regclass) and polname like 'tablegate%'`)
	}
	admitted := func() string {
		var b strings.Builder
		for _, c := range membershipCallers() {
			files := scalar[string](t, d, c.ctx, `select coalesce(string_agg(name, ',' order by name collate "C"), '') from storage.objects`)
			upload := sqlState(exec(t, d, c.ctx, `insert into storage.objects (bucket_id, name) values ('files', $1)`, tenantA+"/up.txt"))
			send := sqlState(exec(t, d, c.ctx, `insert into realtime.messages (topic, extension, payload) values ($1, 'broadcast', '{}')`, topicA+":x"))
			fmt.Fprintf(&b, "%s: files %q, upload %q, receives %d, sends %q\n", c.name, files, upload, receives(t, d, c.ctx, topicA), send)
			admin(t, pool, `delete from storage.objects where name = $1`, tenantA+"/up.txt")
			admin(t, pool, `delete from realtime.messages where topic <> $1`, topicA)
		}
		return b.String()
	}
	before := admitted()
	if p := policies(); strings.Contains(p, "FROM tablegate.") || !strings.Contains(p, "tablegate.member_tenant_id()") || !strings.Contains(p, "tablegate.full_member_tenant_id()") {
		t.Fatalf("at 37 the policies do not call the functions alone: %s", p)
	}
	if !strings.Contains(before, `member: files "`+tenantA+`/doc.txt,`+tenantA+`/readme.md", upload "", receives 1, sends ""`) ||
		!strings.Contains(before, `anonymous member: files "`+tenantA+`/readme.md", upload "42501"`) {
		t.Fatalf("the fixture does not exercise the policies:\n%s", before)
	}

	if _, err := m.UpTo(t.Context(), 38); err != nil {
		t.Fatal(err)
	}
	p := policies()
	if strings.Contains(p, "member_tenant_id") || !strings.Contains(p, "FROM tablegate.member_tenant)") || !strings.Contains(p, "FROM tablegate.full_member_tenant)") {
		t.Errorf("after 38 the policies do not read the views: %s", p)
	}
	if got := admitted(); got != before {
		t.Errorf("after 38 the policies admit\n%s\nbefore\n%s", got, before)
	}

	if _, err := m.DownTo(t.Context(), 37); err != nil {
		t.Fatal(err)
	}
	if p := policies(); strings.Contains(p, "FROM tablegate.") || !strings.Contains(p, "tablegate.member_tenant_id()") || !strings.Contains(p, "tablegate.full_member_tenant_id()") {
		t.Errorf("down to 37, the policies do not call the functions again: %s", p)
	}
	if got := admitted(); got != before {
		t.Errorf("down to 37 the policies admit\n%s\nbefore\n%s", got, before)
	}
}

// TestModulesKeepDroppedPolicies: 00038 re-creates, up and down, only the
// installed policies of the buckets recorded with require_membership and
// of realtime: a policy an operator dropped stays dropped, the others
// follow the migration, and a bucket without require_membership keeps its
// policies untouched.
func TestModulesKeepDroppedPolicies(t *testing.T) {
	t.Parallel()
	pool, m := modulesAt37(t)
	admin(t, pool, `insert into storage.buckets (id, name) values ('docs', 'docs'), ('plain', 'plain')`)
	admin(t, pool, `select tablegate.enable_storage_policies('files', require_membership => true)`)
	admin(t, pool, `select tablegate.enable_storage_policies('docs', anon_read => true, require_membership => true)`)
	admin(t, pool, `select tablegate.enable_storage_policies('plain')`)
	admin(t, pool, `select tablegate.enable_realtime_policies(require_membership => true)`)
	admin(t, pool, `do $$ begin execute format('drop policy %I on storage.objects', tablegate.storage_policy_name('files', 'select')); end $$`)
	admin(t, pool, `drop policy tablegate_tenant_topics_send on realtime.messages`)

	// installed lists tablegate's storage and realtime policies as
	// "name: what it calls" ("views", "functions" or "neither"), and the
	// oids of the plain bucket's.
	installed := func() (string, string) {
		return adminScalar[string](t, pool, `select string_agg(polname || ': ' || case
      when e ~ 'FROM tablegate\.(full_)?member_tenant\M' and e !~ 'member_tenant_id' then 'views'
      when e ~ 'tablegate\.(full_)?member_tenant_id\(\)' and e !~ 'FROM tablegate\.' then 'functions'
      else 'neither' end, '; ' order by polname)
  from (select polname, coalesce(pg_get_expr(polqual, polrelid), '') || ' ' || coalesce(pg_get_expr(polwithcheck, polrelid), '') as e
        from pg_policy where polrelid in ('storage.objects'::regclass, 'realtime.messages'::regclass)
          and polname like 'tablegate%' and polname not like '%:plain:%') p`),
			adminScalar[string](t, pool, `select string_agg(oid::text, ',' order by polname) from pg_policy where polname like 'tablegate_storage:plain:%'`)
	}
	want := func(calls string) string {
		var names []string
		for _, n := range []string{
			"tablegate_storage:docs:delete", "tablegate_storage:docs:insert", "tablegate_storage:docs:select", "tablegate_storage:docs:update",
			"tablegate_storage:files:delete", "tablegate_storage:files:insert", "tablegate_storage:files:update",
			"tablegate_tenant_topics_receive",
		} {
			names = append(names, n+": "+calls)
		}
		return strings.Join(names, "; ")
	}
	before, plain := installed()
	if before != want("functions") || strings.Count(plain, ",") != 3 {
		t.Fatalf("at 37: %s (plain bucket %s)", before, plain)
	}
	for _, step := range []struct {
		version int64
		calls   string
	}{{38, "views"}, {37, "functions"}} {
		var err error
		if step.version == 38 {
			_, err = m.UpTo(t.Context(), 38)
		} else {
			_, err = m.DownTo(t.Context(), 37)
		}
		if err != nil {
			t.Fatal(err)
		}
		got, gotPlain := installed()
		if got != want(step.calls) {
			t.Errorf("at %d:\n got %s\nwant %s", step.version, got, want(step.calls))
		}
		if gotPlain != plain {
			t.Errorf("at %d the plain bucket's policies were re-created (oids %s, before %s)", step.version, gotPlain, plain)
		}
	}
}
