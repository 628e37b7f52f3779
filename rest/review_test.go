package rest

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
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
	s := server(t, "vc", b.resource("vc", nil))
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

// decodeAll returns every base64url-decodable part of a cursor, as text.
func cursorPlaintext(cur string) string {
	var out strings.Builder
	for _, part := range strings.Split(cur, ".") {
		if b, err := base64.RawURLEncoding.DecodeString(part); err == nil {
			out.Write(b)
		}
	}
	return out.String()
}

// Regression: next_cursor carried the order values of the page's last row
// in clear (base64 JSON). With batch authorization that row may be one the
// authorizer denied, and the key is in the cursor even when not selected:
// the cursor must not reveal row values.
func TestCursorRevealsNoRowValues(t *testing.T) {
	t.Parallel()
	b := setup(t)
	az := &recordingAuthorizer{log: &hookLog{}}
	s := server(t, "todos", b.resource("todos", &Options{
		Select:      []string{"title", "priority"},
		Permissions: map[Operation]string{OpList: "todos.read"},
		Authorizer:  az,
	}))
	b.exec(`insert into todos (id, owner_id, title, priority) values
	        ('99999999-aaaa-bbbb-cccc-dddddddddddd', $1, 'deny TOPSECRET', 2),
	        (gen_random_uuid(), $1, 'ok 1', 1), (gen_random_uuid(), $1, 'ok 3', 3)`, alice)
	p := getPage(t, s, "/api/todos?order=title&limit=1", alice)
	if p.NextCursor == nil {
		t.Fatal("no next cursor")
	}
	for _, it := range p.Items {
		if strings.Contains(it["title"].(string), "TOPSECRET") {
			t.Fatal("denied row listed")
		}
	}
	plain := cursorPlaintext(*p.NextCursor)
	if strings.Contains(plain, "TOPSECRET") || strings.Contains(plain, "99999999-aaaa") {
		t.Fatalf("cursor reveals the denied row: %q", plain)
	}
	// The cursor still continues the walk.
	p2 := getPage(t, s, "/api/todos?order=title&limit=1&cursor="+url.QueryEscape(*p.NextCursor), alice)
	if len(p2.Items) != 1 || p2.Items[0]["title"] != "ok 1" || p2.NextCursor == nil {
		t.Fatalf("second page %+v", p2)
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
	s2 := server(t, "flags", b.resource("flags", nil))
	for q, want := range map[string]int{"on_=is.true": 1, "on_=is.unknown": 1, "on_=not.is.false": 2} {
		if p := getPage(t, s2, "/api/flags?"+q, alice); len(p.Items) != want {
			t.Errorf("%s: %d rows, want %d", q, len(p.Items), want)
		}
	}
}

// Regression: a panic in Options.Caller escaped ServeHTTP (net/http then
// drops the connection without a response). It must answer 500
// unexpected with a request id and nothing internal, like hook panics.
func TestCallerPanicIsUnexpected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var logs syncBuffer
	res := b.resource("items", &Options{
		Caller: func(*http.Request) (authctx.Auth, error) { panic("caller secret boom") },
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	s := server(t, "items", res)
	r := do(t, s, "GET", "/api/items", "", "")
	if r.status != 500 || !strings.Contains(r.body, `"request_id"`) || strings.Contains(r.body, "boom") {
		t.Fatalf("got %s", r)
	}
	if !strings.Contains(logs.String(), "caller secret boom") {
		t.Errorf("panic not logged: %s", logs.String())
	}
}

// Regression: a cancelled or timed-out request context surfaced as 500
// unexpected (logged as an error). It is 503 unavailable with
// Retry-After: the database did not fail, the request ran out of time.
func TestCancelledContextIsUnavailable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res := b.resource("items", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range []Operation{OpList, OpGet, OpDelete} {
		_, err := res.Do(ctx, &Call{Operation: op, Key: "1", Auth: user(alice)})
		p, ok := problem.As(err)
		if !ok || p.Status != 503 || p.Header.Get("Retry-After") == "" {
			t.Errorf("%s: %v (%+v), want 503 with Retry-After", op, err, p)
		}
	}
	dctx, dcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer dcancel()
	<-dctx.Done()
	if _, err := res.Do(dctx, &Call{Operation: OpList}); err == nil {
		t.Fatal("no error")
	} else if p, _ := problem.As(err); p.Status != 503 {
		t.Errorf("deadline: %v, want 503", err)
	}
}

// Regression: the handler read the query with URL.Query(), which drops
// pairs it cannot decode (and, past Go's parameter limit, all of them): a
// filter with a bad escape was silently ignored and the list answered
// every row. A query string that does not parse answers 400.
func TestUndecodableQueryIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name) values (1, 1, 1, 'a'), (2, 2, 2, 'b')`)
	s := server(t, "items", b.resource("items", nil))
	for _, q := range []string{"name=eq.%zz", "grp=eq.1&name=eq.%", "name=eq.a;grp=eq.2", "limit=1&" + strings.Repeat("grp=eq.1&", 10001)} {
		r := do(t, s, "GET", "/api/items?"+q, alice, "")
		if r.status != 400 {
			t.Errorf("%.40s…: %.200s, want 400", q, r)
		}
	}
	if p := getPage(t, s, "/api/items?name=eq.%61", alice); len(p.Items) != 1 {
		t.Errorf("escaped filter: %v", p.Items)
	}
}

// count=exact counts only the rows RLS lets the caller see (the count
// runs in the caller's statement), with and without filters and cursor.
func TestCountExactCountsOnlyVisibleRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.exec(`insert into items (id, grp, score, name) select i, 1, i, 'v' from generate_series(1, 5) i`)
	b.exec(`insert into items (id, grp, score, name) select i, 13, i, 'hidden' from generate_series(6, 9) i`)
	s := server(t, "items", b.resource("items", nil))
	for q, want := range map[string]int64{
		"count=exact":                       5,
		"count=exact&name=eq.hidden":        0,
		"count=exact&score=gte.3":           3,
		"count=exact&grp=eq.13":             0,
		"count=exact&name=not.eq.v&limit=1": 0,
		"count=exact&grp=in.(1,13)&limit=2": 5,
	} {
		p := getPage(t, s, "/api/items?"+q, alice)
		if p.Count == nil || *p.Count != want {
			t.Errorf("%s: count %v, want %d", q, p.Count, want)
		}
		for _, it := range p.Items {
			if it["name"] == "hidden" {
				t.Errorf("%s: hidden row listed", q)
			}
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
		s := server(t, table, b.resource(table, nil))
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
	s := server(t, "days", b.resource("days", nil))
	if r := do(t, s, "GET", "/api/days/2020-01-01", alice, ""); r.status != 200 {
		t.Errorf("valid date key: %s", r)
	}
	if r := do(t, s, "GET", "/api/days/2020-01-02", alice, ""); r.status != 404 {
		t.Errorf("absent date key: %s", r)
	}
}
