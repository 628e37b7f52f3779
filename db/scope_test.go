package db_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tablegate/tablegate/db"
	"github.com/tablegate/tablegate/internal/pgtest"
	"github.com/tablegate/tablegate/rest"
)

const (
	alice = "11111111-1111-4111-8111-111111111111"
	bob   = "22222222-2222-4222-8222-222222222222"
)

var (
	anonCaller    = db.Caller{}
	serviceCaller = db.ServiceCaller()
)

// setupNotes creates a table owned by the admin role with RLS forced:
// users see their own notes, anon sees public notes.
func setupNotes(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		create table notes (id int primary key, owner uuid, public boolean not null default false, body text);
		alter table notes enable row level security;
		alter table notes force row level security;
		create policy own on notes for all to authenticated using (owner = auth.uid()) with check (owner = auth.uid());
		create policy pub on notes for select to anon using (public);
		grant select, insert, update, delete on notes to anon, authenticated, service_role;
		insert into notes values (1, '`+alice+`', false, 'a'), (2, '`+bob+`', false, 'b'), (3, '`+bob+`', true, 'p');`)
	if err != nil {
		t.Fatal(err)
	}
}

func ids(t *testing.T, d *db.DB, c db.Caller) []int {
	t.Helper()
	var out []int
	err := d.Run(context.Background(), c, db.RunOpts{}, func(q db.Querier) error {
		rows, err := q.Query(context.Background(), "select id from notes order by id")
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[int])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScopeRLS(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	setupNotes(t, pool)
	d := db.New(pool, nil)
	cases := []struct {
		name   string
		caller db.Caller
		want   []int
	}{
		{"alice sees her note", user(claims{"sub": alice, "role": "authenticated"}), []int{1}},
		{"bob sees his notes", user(claims{"sub": bob}), []int{2, 3}},
		{"anon sees public only", anonCaller, []int{3}},
		{"service role bypasses RLS", serviceCaller, []int{1, 2, 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ids(t, d, tc.caller)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestTxWritesUnderRLS(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	setupNotes(t, pool)
	d := db.New(pool, nil)
	ctx := context.Background()
	a := user(claims{"sub": alice})

	// A write the policy allows commits.
	err := d.Run(ctx, a, db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "insert into notes (id, owner, body) values (10, auth.uid(), 'x')")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// A write for someone else is refused by the policy with 42501 → 403.
	err = d.Run(ctx, a, db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "insert into notes (id, owner, body) values (11, $1, 'x')", bob)
		return err
	})
	if st, _ := asProblem(rest.DBProblem(err)); st != 403 {
		t.Fatalf("status %d, want 403 (err %v)", st, err)
	}
	// An error from fn rolls back everything fn did.
	boom := errors.New("boom")
	err = d.Run(ctx, a, db.RunOpts{Tx: true}, func(q db.Querier) error {
		if _, err := q.Exec(ctx, "insert into notes (id, owner, body) values (12, auth.uid(), 'x')"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	// A panic rolls back too, and is re-raised.
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("panic was swallowed")
			}
		}()
		_ = d.Run(ctx, a, db.RunOpts{Tx: true}, func(q db.Querier) error {
			_, _ = q.Exec(ctx, "insert into notes (id, owner, body) values (13, auth.uid(), 'x')")
			panic("hook exploded")
		})
	}()
	var n int
	if err := pool.QueryRow(ctx, "select count(*) from notes where id in (10, 12, 13)").Scan(&n); err != nil || n != 1 {
		t.Fatalf("count %d, err %v: want only the committed row", n, err)
	}
	// Several statements share the transaction and the caller.
	err = d.Run(ctx, a, db.RunOpts{Tx: true}, func(q db.Querier) error {
		if _, err := q.Exec(ctx, "update notes set body = 'y' where id = 10"); err != nil {
			return err
		}
		var who string
		if err := q.QueryRow(ctx, "select auth.uid()::text").Scan(&who); err != nil {
			return err
		}
		if who != alice {
			t.Errorf("second statement ran as %q", who)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestNoLeakBetweenTransactions runs callers one after another on a pool
// of one connection: nothing of one caller survives into the next.
func TestNoLeakBetweenTransactions(t *testing.T) {
	t.Parallel()
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d := db.New(pool, nil)
	ctx := context.Background()
	a := user(claims{"sub": alice})
	if err := d.Run(ctx, a, db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select auth.uid()")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(ctx, a, db.RunOpts{}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "select auth.uid()")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Outside any caller scope the same connection is back to the admin
	// role with no claims.
	var role, claims string
	var uid *string
	if err := pool.QueryRow(ctx, "select current_user, coalesce(current_setting('request.jwt.claims', true), ''), auth.uid()::text").Scan(&role, &claims, &uid); err != nil {
		t.Fatal(err)
	}
	if role == "authenticated" || claims != "" || uid != nil {
		t.Fatalf("leaked: role %q claims %q uid %v", role, claims, uid)
	}
	// And the next caller, anon, sees no trace of alice.
	if err := d.Run(ctx, anonCaller, db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(ctx, "select current_user, auth.uid()::text").Scan(&role, &uid)
	}); err != nil {
		t.Fatal(err)
	}
	if role != "anon" || uid != nil {
		t.Fatalf("anon after alice: role %q uid %v", role, uid)
	}
}

func TestRoleClaimNeverEscalates(t *testing.T) {
	t.Parallel()
	pool := pgtest.DB(t)
	setupNotes(t, pool)
	d := db.New(pool, nil)
	ctx := context.Background()
	for _, role := range []any{"postgres", "service_role", "anon", "pg_read_all_data", 42, nil} {
		c := user(claims{"sub": alice, "role": role})
		var got string
		err := d.Run(ctx, c, db.RunOpts{}, func(q db.Querier) error {
			return q.QueryRow(ctx, "select current_user").Scan(&got)
		})
		if !errors.Is(err, db.ErrRoleNotAllowed) {
			t.Errorf("role %v: err %v, current_user %q; want refusal", role, err, got)
		}
		err = d.Run(ctx, c, db.RunOpts{Tx: true}, func(q db.Querier) error {
			return q.QueryRow(ctx, "select current_user").Scan(&got)
		})
		if !errors.Is(err, db.ErrRoleNotAllowed) {
			t.Errorf("tx role %v: err %v; want refusal", role, err)
		}
	}
	// A role on the configured list is honoured.
	d2 := db.New(pool, &db.Config{UserRoles: []string{"authenticated", "anon"}})
	var got string
	if err := d2.Run(ctx, user(claims{"sub": alice, "role": "anon"}), db.RunOpts{}, func(q db.Querier) error {
		return q.QueryRow(ctx, "select current_user").Scan(&got)
	}); err != nil || got != "anon" {
		t.Fatalf("configured role: %q %v", got, err)
	}
}

func TestReadIsOneRoundTrip(t *testing.T) {
	t.Parallel()
	u := pgtest.URL(t)
	setupNotes(t, pgtest.Pool(t, u))
	cfg, err := pgxpool.ParseConfig(u)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	tr := &pgtest.RoundTrips{}
	cfg.ConnConfig.Tracer = tr
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d := db.New(pool, nil)
	ctx := context.Background()
	get := func() string {
		var body string
		if err := d.Run(ctx, user(claims{"sub": alice}), db.RunOpts{}, func(q db.Querier) error {
			return q.QueryRow(ctx, "select body from notes where id = $1", 1).Scan(&body)
		}); err != nil {
			t.Fatal(err)
		}
		return body
	}
	get() // warm: statements get prepared and cached on the connection
	tr.Reset()
	if b := get(); b != "a" {
		t.Fatalf("body %q", b)
	}
	if n := tr.Total(); n != 1 {
		t.Fatalf("a caller-bound read took %d round trips, want 1", n)
	}
	// A transaction: BEGIN + settings + first statement together, then COMMIT.
	tr.Reset()
	if err := d.Run(ctx, user(claims{"sub": alice}), db.RunOpts{Tx: true}, func(q db.Querier) error {
		_, err := q.Exec(ctx, "update notes set body = 'a' where id = 1")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n := tr.Total(); n != 2 {
		t.Fatalf("a one-statement transaction took %d round trips, want 2", n)
	}
}
