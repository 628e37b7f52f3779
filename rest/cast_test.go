package rest

import (
	"strings"
	"testing"
)

// Regression: key and filter values were cast to the column's type WITH its
// typmod (varchar(5), numeric(5,1)); an explicit cast truncates or rounds,
// so GET /abcdefgh addressed row 'abcde', PATCH/DELETE hit it too, and
// eq.1.04 matched 1.0.
func TestKeyAndFilterCastKeepValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table vc (code varchar(5) primary key, n numeric(5,1), c char(3), bits bit(3));
	        grant all on vc to authenticated;
	        insert into vc values ('abcde', 1.0, 'ab', B'101')`)
	s := server(t, "vc", b.resource("vc", noRLS()))
	for _, path := range []string{"/api/vc/abcdefgh", "/api/vc/abcdeX"} {
		if r := do(t, s, "GET", path, alice, ""); r.status != 404 {
			t.Errorf("GET %s = %s, want 404", path, r)
		}
		if r := do(t, s, "PATCH", path, alice, `{"n":2}`); r.status != 404 {
			t.Errorf("PATCH %s = %s, want 404", path, r)
		}
		if r := do(t, s, "DELETE", path, alice, ""); r.status != 404 {
			t.Errorf("DELETE %s = %s, want 404", path, r)
		}
	}
	for _, q := range []string{"code=eq.abcdexyz", "n=eq.1.04", "code=in.(abcdexyz,zzz)", "n=gt.0.96&n=lt.0.99"} {
		p := getPage(t, s, "/api/vc?"+q, alice)
		if len(p.Items) != 0 {
			t.Errorf("%s matched %v, want nothing", q, p.Items)
		}
	}
	// Values that do fit still match, including a blank-padded char(n)
	// and a bit(n) compared as bits.
	for _, q := range []string{"code=eq.abcde", "n=eq.1.0", "c=eq.ab", "bits=eq.101", "code=in.(abcde)"} {
		p := getPage(t, s, "/api/vc?"+q, alice)
		if len(p.Items) != 1 {
			t.Errorf("%s matched %d rows, want 1", q, len(p.Items))
		}
	}
	if r := do(t, s, "GET", "/api/vc/abcde", alice, ""); r.status != 200 || !strings.Contains(r.body, `"abcde"`) {
		t.Errorf("GET /abcde = %s", r)
	}
	// A cursor walk over the typmod'd order column still works.
	b.exec(`insert into vc values ('b', 2.5, 'x', B'001'), ('c', 3.5, 'y', B'010')`)
	p := getPage(t, s, "/api/vc?order=n.desc&limit=1", alice)
	seen := 1
	for p.NextCursor != nil {
		p = getPage(t, s, "/api/vc?order=n.desc&limit=1&cursor="+*p.NextCursor, alice)
		seen += len(p.Items)
	}
	if seen != 3 {
		t.Errorf("cursor walk saw %d rows, want 3", seen)
	}
}

// Regression: is.true, is.false and is.unknown on a column that is not
// boolean reached Postgres ("argument of IS TRUE must be type boolean")
// and answered 500. They are the caller's mistake: 400.
func TestIsBooleanOnNonBooleanColumn(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name) values (1, 1, null, 'a')`)
	s := server(t, "items", b.resource("items", nil))
	for _, q := range []string{"score=is.true", "name=is.false", "grp=not.is.unknown", "id=is.TRUE"} {
		r := do(t, s, "GET", "/api/items?"+q, alice, "")
		if r.status != 400 || !strings.Contains(r.body, `"kind":"bad_request"`) {
			t.Errorf("%s: %s, want 400", q, r)
		}
	}
	if p := getPage(t, s, "/api/items?score=is.null", alice); len(p.Items) != 1 {
		t.Errorf("is.null on an int column: %v", p.Items)
	}
	b.exec(`create table flags (id int primary key, on_ boolean); grant select on flags to authenticated;
	        insert into flags values (1, true), (2, null)`)
	s2 := server(t, "flags", b.resource("flags", noRLS()))
	for q, want := range map[string]int{"on_=is.true": 1, "on_=is.unknown": 1, "on_=not.is.false": 2} {
		if p := getPage(t, s2, "/api/flags?"+q, alice); len(p.Items) != want {
			t.Errorf("%s: %d rows, want %d", q, len(p.Items), want)
		}
	}
}

// Regression: a key the key column's type cannot hold reached Postgres and
// answered 422 (22003 out of range, 22007 bad date) instead of the 400 the
// spec gives a malformed key.
func TestMalformedKeyIs400(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`create table days (d date primary key, n int); grant all on days to authenticated;
	        create table small (id int2 primary key, n int); grant all on small to authenticated;
	        create table mid (id int4 primary key, n int); grant all on mid to authenticated;
	        insert into days values ('2020-01-01', 1); insert into small values (1, 1); insert into mid values (1, 1)`)
	for table, keys := range map[string][]string{
		"days":  {"notadate", "2020-13-45"},
		"small": {"40000", "-40000"},
		"mid":   {"99999999999", "-2147483649"},
	} {
		s := server(t, table, b.resource(table, noRLS()))
		for _, k := range keys {
			for _, m := range []string{"GET", "DELETE"} {
				if r := do(t, s, m, "/api/"+table+"/"+k, alice, ""); r.status != 400 {
					t.Errorf("%s /%s/%s: %s, want 400", m, table, k, r)
				}
			}
			// PATCH without a fetch casts key and body in one statement, so
			// only integer keys (checked in Go) are told apart there.
			if r := do(t, s, "PATCH", "/api/"+table+"/"+k, alice, `{"n":2}`); table != "days" && r.status != 400 {
				t.Errorf("PATCH /%s/%s: %s, want 400", table, k, r)
			}
		}
	}
	s := server(t, "days", b.resource("days", noRLS()))
	if r := do(t, s, "GET", "/api/days/2020-01-01", alice, ""); r.status != 200 {
		t.Errorf("valid date key: %s", r)
	}
	if r := do(t, s, "GET", "/api/days/2020-01-02", alice, ""); r.status != 404 {
		t.Errorf("absent date key: %s", r)
	}
}
