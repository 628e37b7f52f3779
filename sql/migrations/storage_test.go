package migrations_test

import (
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
)

// TestStoragePolicies proves the storage policies for a full user, a user
// of the same tenant, a user of another tenant, an anonymous sign-in, a
// caller without a session and the service role, with Supabase's storage
// schema created before and after migrating, under the default and a
// renamed tenant claim.
func TestStoragePolicies(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"storage before migrating", "storage after migrating"} {
		for _, cv := range claimVariants {
			t.Run(order+"/"+cv.name, func(t *testing.T) {
				t.Parallel()
				var pool *pgxpool.Pool
				if order == "storage before migrating" {
					pool = pgtest.Pool(t, pgtest.EmptyURL(t))
					fixture(t, pool, "supabase_storage.sql")
					if err := db.Migrate(t.Context(), pool); err != nil {
						t.Fatal(err)
					}
				} else {
					pool = pgtest.DB(t)
					// Opt in before Storage exists: recorded, not installed.
					if adminScalar[bool](t, pool, `select tablegate.enable_storage_policies('files')`) {
						t.Fatal("enable_storage_policies installed policies without storage.objects")
					}
					fixture(t, pool, "supabase_storage.sql")
					if n := adminScalar[int](t, pool, `select tablegate.apply_storage_policies()`); n != 1 {
						t.Fatalf("apply_storage_policies installed %d buckets, want 1", n)
					}
				}
				admin(t, pool, `select tablegate.set_tenant_claim($1)`, cv.setting)
				admin(t, pool, `select tablegate.enable_storage_policies('files')`)
				admin(t, pool, `select tablegate.enable_storage_policies('avatars', per_user => true)`)
				admin(t, pool, `select tablegate.enable_storage_policies('public-docs', anon_read => true)`)
				storageMatrix(t, pool, cv.path)
			})
		}
	}
}

func storageMatrix(t *testing.T, pool *pgxpool.Pool, path string) {
	d := db.New(pool, nil)
	for _, o := range [][2]string{
		{"files", tenantA + "/doc.txt"},
		{"files", tenantB + "/doc.txt"},
		{"files", "root.txt"},
		{"avatars", tenantA + "/" + userA1 + "/me.png"},
		{"avatars", tenantA + "/" + userA2 + "/me.png"},
		{"public-docs", tenantA + "/readme.md"},
	} {
		admin(t, pool, `insert into storage.objects (bucket_id, name) values ($1, $2)`, o[0], o[1])
	}
	full := userAt(path, userA1, tenantA, false)
	mate := userAt(path, userA2, tenantA, false)
	other := userAt(path, userB1, tenantB, false)
	g := userAt(path, guestA, tenantA, true)
	callers := []struct {
		name string
		c    authctx.Auth
	}{{"full user", full}, {"same-tenant user", mate}, {"other tenant", other}, {"anonymous sign-in", g}, {"no session", noSession}, {"service", service}}

	// The checks below run as the API roles, never as the admin.
	for _, c := range callers {
		want := map[string]string{"no session": "anon", "service": "service_role"}[c.name]
		if want == "" {
			want = "authenticated"
		}
		if got := scalar[string](t, d, c.c, `select current_user::text`); got != want {
			t.Fatalf("%s runs as %q, want %q", c.name, got, want)
		}
	}

	// Reads: visible object names per bucket.
	want := map[string]map[string]string{
		"full user":         {"files": tenantA + "/doc.txt", "avatars": tenantA + "/" + userA1 + "/me.png", "public-docs": tenantA + "/readme.md"},
		"same-tenant user":  {"files": tenantA + "/doc.txt", "avatars": tenantA + "/" + userA2 + "/me.png", "public-docs": tenantA + "/readme.md"},
		"other tenant":      {"files": tenantB + "/doc.txt", "avatars": "", "public-docs": ""},
		"anonymous sign-in": {"files": "", "avatars": "", "public-docs": tenantA + "/readme.md"},
		"no session":        {"files": "", "avatars": "", "public-docs": ""},
		"service": {"files": tenantA + "/doc.txt," + tenantB + "/doc.txt,root.txt",
			"avatars": tenantA + "/" + userA1 + "/me.png," + tenantA + "/" + userA2 + "/me.png", "public-docs": tenantA + "/readme.md"},
	}
	for _, c := range callers {
		for _, b := range []string{"files", "avatars", "public-docs"} {
			got := scalar[string](t, d, c.c, `select coalesce(string_agg(name, ',' order by name collate "C"), '') from storage.objects where bucket_id = $1`, b)
			if got != want[c.name][b] {
				t.Errorf("%s reads %s: %q, want %q", c.name, b, got, want[c.name][b])
			}
		}
	}

	// Uploads.
	for _, tc := range []struct {
		who          string
		c            authctx.Auth
		bucket, name string
		want         string
	}{
		{"full user", full, "files", tenantA + "/new.txt", ""},
		{"full user", full, "files", tenantB + "/new.txt", "42501"},
		{"full user", full, "files", "new.txt", "42501"},
		{"full user", full, "avatars", tenantA + "/" + userA1 + "/x.png", ""},
		{"full user", full, "avatars", tenantA + "/" + userA2 + "/x.png", "42501"},
		{"full user", full, "avatars", tenantA + "/x.png", "42501"},
		{"full user", full, "other-bucket", tenantA + "/x", "42501"},
		{"other tenant", other, "files", tenantA + "/evil.txt", "42501"},
		{"anonymous sign-in", g, "files", tenantA + "/g.txt", "42501"},
		{"anonymous sign-in", g, "public-docs", tenantA + "/g.md", "42501"},
		{"anonymous sign-in", g, "avatars", tenantA + "/" + guestA + "/g.png", "42501"},
		{"no session", noSession, "files", tenantA + "/n.txt", "42501"},
		{"service", service, "files", tenantB + "/svc.txt", ""},
		// No "." or ".." segment: a path normalized elsewhere would
		// land in another tenant's or user's folder.
		{"full user", full, "files", tenantA + "/../" + tenantB + "/x.txt", "42501"},
		{"full user", full, "files", tenantA + "/./x.txt", "42501"},
		{"full user", full, "files", tenantA + "/sub/..", "42501"},
		{"full user", full, "avatars", tenantA + "/" + userA1 + "/../" + userA2 + "/x.png", "42501"},
		{"full user", full, "files", tenantA + "/..x/a..b/.hidden", ""},
		{"full user", full, "files", tenantA + "/../x", "42501"},
	} {
		if tc.bucket == "other-bucket" {
			admin(t, pool, `insert into storage.buckets (id, name) values ('other-bucket', 'other') on conflict do nothing`)
		}
		err := exec(t, d, tc.c, `insert into storage.objects (bucket_id, name, owner_id) values ($1, $2, $3)`, tc.bucket, tc.name, tc.c.Actor().ID)
		if got := sqlState(err); got != tc.want {
			t.Errorf("%s uploads %s/%s: SQLSTATE %q, want %q", tc.who, tc.bucket, tc.name, got, tc.want)
		}
	}

	// A name with a dot segment stored before the check stays its
	// folder's: readable, not renamed into another folder.
	admin(t, pool, `insert into storage.objects (bucket_id, name) values ('files', $1)`, tenantA+"/../old.txt")
	if got := scalar[int](t, d, full, `select count(*) from storage.objects where name = $1`, tenantA+"/../old.txt"); got != 1 {
		t.Errorf("full user reads %d stored dot-segment objects, want 1", got)
	}
	admin(t, pool, `delete from storage.objects where name = $1`, tenantA+"/../old.txt")

	// Overwrites, moves and deletes.
	affect := func(c authctx.Auth, sql string, args ...any) (int64, string) {
		var n int64
		err := d.Run(t.Context(), c.DBCaller(), db.RunOpts{Tx: true}, func(q db.Querier) error {
			tag, err := q.Exec(t.Context(), sql, args...)
			n = tag.RowsAffected()
			return err
		})
		return n, sqlState(err)
	}
	docA := tenantA + "/doc.txt"
	for _, tc := range []struct {
		who   string
		c     authctx.Auth
		sql   string
		args  []any
		rows  int64
		state string
	}{
		{"anonymous sign-in overwrites", g, `update storage.objects set metadata = '{}' where name = $1`, []any{docA}, 0, ""},
		{"anonymous sign-in deletes", g, `delete from storage.objects where bucket_id = 'public-docs'`, nil, 0, ""},
		{"other tenant overwrites", other, `update storage.objects set metadata = '{}' where name = $1`, []any{docA}, 0, ""},
		{"other tenant deletes", other, `delete from storage.objects where name = $1`, []any{docA}, 0, ""},
		{"no session deletes", noSession, `delete from storage.objects`, nil, 0, ""},
		{"full user moves into other tenant", full, `update storage.objects set name = $2 where name = $1`, []any{docA, tenantB + "/moved.txt"}, 0, "42501"},
		{"same-tenant user overwrites another's avatar", mate, `update storage.objects set metadata = '{}' where bucket_id = 'avatars' and name like $1`, []any{"%" + userA1 + "%"}, 0, ""},
		{"full user overwrites", full, `update storage.objects set metadata = '{"v":2}' where name = $1`, []any{docA}, 1, ""},
		{"full user deletes", full, `delete from storage.objects where name = $1`, []any{docA}, 1, ""},
	} {
		n, st := affect(tc.c, tc.sql, tc.args...)
		if n != tc.rows || st != tc.state {
			t.Errorf("%s: %d rows, SQLSTATE %q; want %d, %q", tc.who, n, st, tc.rows, tc.state)
		}
	}
	if n := adminScalar[int](t, pool, `select count(*) from storage.objects where bucket_id = 'public-docs'`); n != 1 {
		t.Errorf("public-docs has %d objects after the guest's delete, want 1", n)
	}

	// disable_storage_policies removes a bucket's policies: nothing is reachable.
	admin(t, pool, `select tablegate.disable_storage_policies('files')`)
	if got := scalar[int](t, d, full, `select count(*) from storage.objects where bucket_id = 'files'`); got != 0 {
		t.Errorf("after disable, full user reads %d objects of files", got)
	}
	if n := adminScalar[int](t, pool, `select count(*) from pg_policy where polrelid = 'storage.objects'::regclass`); n != 8 {
		t.Errorf("%d policies on storage.objects after disabling one of three buckets, want 8", n)
	}
}

// TestStorageLongBucket: a bucket id too long for a policy name gets a
// hashed one, and two such buckets do not collide.
func TestStorageLongBucket(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	fixture(t, pool, "supabase_storage.sql")
	long := fmt.Sprintf("%0100d", 1)
	long2 := fmt.Sprintf("%0100d", 2)
	admin(t, pool, `select tablegate.enable_storage_policies($1)`, long)
	admin(t, pool, `select tablegate.enable_storage_policies($1)`, long2)
	if n := adminScalar[int](t, pool, `select count(*) from pg_policy where polrelid = 'storage.objects'::regclass`); n != 8 {
		t.Fatalf("%d policies, want 8", n)
	}
	for _, bad := range []string{"", "a\nb", fmt.Sprintf("%0201d", 1)} {
		if _, err := pool.Exec(t.Context(), `select tablegate.enable_storage_policies($1)`, bad); sqlState(err) != "22023" {
			t.Errorf("bucket %q: %v, want 22023", bad, err)
		}
	}
}
