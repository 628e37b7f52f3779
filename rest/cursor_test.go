package rest

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/problem"
)

func TestCursorRoundTripAndTamper(t *testing.T) {
	t.Parallel()
	r := mustFake(t, &Config{CursorKey: []byte("k1")})
	q := url.Values{"order": {"score.desc"}, "title": {"eq.a"}}
	lq, err := r.parseList(q)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.signCursor(lq, []any{"7", nil, "42"}); err == nil {
		t.Fatal("wrong arity accepted")
	}
	cur, err := r.signCursor(lq, []any{nil, "42"})
	if err != nil {
		t.Fatal(err)
	}
	q.Set("cursor", cur)
	lq2, err := r.parseList(q)
	if err != nil {
		t.Fatal(err)
	}
	if len(lq2.After) != 2 || lq2.After[0] != nil || lq2.After[1] != "42" {
		t.Errorf("after = %#v", lq2.After)
	}
	// A different limit keeps the cursor valid.
	q.Set("limit", "5")
	if _, err := r.parseList(q); err != nil {
		t.Errorf("limit change: %v", err)
	}
	q.Del("limit")

	bad := func(name string, q url.Values, r *Resource) {
		t.Helper()
		_, err := r.parseList(q)
		if p, ok := problem.As(err); !ok || p.Status != 400 {
			t.Errorf("%s: err = %v, want 400", name, err)
		}
	}
	// Flip one payload byte.
	payload, mac, _ := strings.Cut(cur, ".")
	flipped := []byte(payload)
	flipped[0] ^= 1
	q2 := cloneValues(q)
	q2.Set("cursor", string(flipped)+"."+mac)
	bad("tampered payload", q2, r)
	// Forge a payload with a valid-looking shape but no key.
	forged, _ := json.Marshal([]any{"1 OR 1=1", "0"})
	q2.Set("cursor", b64(forged)+"."+mac)
	bad("forged payload", q2, r)
	// Same cursor, other filters or order.
	q3 := cloneValues(q)
	q3.Set("title", "eq.b")
	bad("other filter", q3, r)
	q4 := cloneValues(q)
	q4.Set("order", "score.asc")
	bad("other order", q4, r)
	// Another key (another instance without a shared key).
	r2 := mustFake(t, &Config{CursorKey: []byte("k2")})
	bad("other key", q, r2)
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func b64(b []byte) string {
	const enc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	_ = enc
	return strings.TrimRight(jsonBase64(b), "=")
}

func jsonBase64(b []byte) string {
	s, _ := json.Marshal(b) // std base64 in quotes
	r := strings.NewReplacer("+", "-", "/", "_", `"`, "")
	return r.Replace(string(s))
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
	s := server(t, "todos", b.resource("todos", &Config{
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

// TestCursorWalksEveryOrderType walks whole lists two rows a page, ordered
// by columns whose cursor text comes from their own selected field (uuid,
// text, int, bigint) and by ones selected again as ::text (a timestamptz,
// and the key when not selected, in TestCursorRevealsNoRowValues), NULLs
// and descending orders included: every row comes once, in the order
// Postgres sorts them.
func TestCursorWalksEveryOrderType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", &Config{Select: []string{"id", "title", "priority", "seq", "created_at"}}))
	b.exec(`insert into todos (owner_id, title, priority, created_at)
	        select $1, 'todo ' || (g % 4), case when g % 3 = 0 then null else g % 5 end, now() - (g % 6) * interval '1 hour'
	        from generate_series(1, 23) g`, alice)
	for _, order := range []string{"", "title", "title.desc,priority", "priority.desc.nullslast", "seq.desc", "created_at,title", "created_at.desc.nullsfirst,id.desc"} {
		var seen []string
		path := "/api/todos?limit=2"
		if order != "" {
			path += "&order=" + order
		}
		for pages := 0; ; pages++ {
			if pages > 20 {
				t.Fatalf("order %q: more than 20 pages", order)
			}
			p := getPage(t, s, path, alice)
			seen = append(seen, ids(p)...)
			if p.NextCursor == nil {
				break
			}
			path = "/api/todos?limit=2&cursor=" + url.QueryEscape(*p.NextCursor)
			if order != "" {
				path += "&order=" + order
			}
		}
		all := ids(getPage(t, s, "/api/todos?limit=100"+map[bool]string{true: "", false: "&order=" + order}[order == ""], alice))
		if strings.Join(seen, " ") != strings.Join(all, " ") {
			t.Errorf("order %q: the walk gave %d rows\n%v\nthe whole list %d\n%v", order, len(seen), seen, len(all), all)
		}
	}
}

// TestListSaysItsLength: a page over net/http's 2 KB buffer carries its
// Content-Length instead of going chunked.
func TestListSaysItsLength(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := server(t, "todos", b.resource("todos", nil))
	b.exec(`insert into todos (owner_id, title) select $1, 'a todo with a title long enough ' || g from generate_series(1, 60) g`, alice)
	r := do(t, s, "GET", "/api/todos?limit=50", alice, "")
	if r.status != 200 || len(r.body) <= 2048 {
		t.Fatalf("want a 200 page over 2 KB: %d, %d bytes", r.status, len(r.body))
	}
	if got := r.header.Get("Content-Length"); got != strconv.Itoa(len(r.body)) {
		t.Errorf("Content-Length %q for a %d-byte body", got, len(r.body))
	}
}
