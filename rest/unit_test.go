package rest

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tablegate/tablegate/problem"
)

// fakeResource builds a resource over declared columns without a
// database: enough for the pure parts (query grammar, cursors, routes).
func fakeResource(t testing.TB, opts *Options) (*Resource, error) {
	t.Helper()
	mk := func(name, typ, typname string, notNull bool) *column {
		c := &column{Column: Column{Name: name, Type: typ, TypeName: typname, NotNull: notNull}}
		c.ident = `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		c.cast = "::text::" + typ
		c.expr = "t." + c.ident
		return c
	}
	cols := []*column{
		mk("id", "bigint", "int8", true),
		mk("title", "text", "text", true),
		mk("score", "integer", "int4", false),
		mk("secret", "text", "text", false),
	}
	r := &Resource{table: "items", schema: "public", cols: cols, byName: map[string]*column{}}
	for _, c := range cols {
		r.byName[c.Name] = c
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	r.opts = o
	if o.Select == nil {
		o.Select = []string{"id", "title", "score"}
	}
	return r, r.build(&o, []string{"id"}, `"public"."items"`)
}

func mustFake(t testing.TB, opts *Options) *Resource {
	t.Helper()
	r, err := fakeResource(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOperationID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		table string
		op    Operation
		want  string
	}{
		{"todos", OpList, "listTodos"},
		{"todos", OpGet, "getTodo"},
		{"todos", OpCreate, "createTodo"},
		{"todos", OpUpdate, "updateTodo"},
		{"todos", OpDelete, "deleteTodo"},
		{"todos", "complete", "completeTodos"},
		{"todo_items", OpGet, "getTodoItem"},
		{"public.addresses", OpList, "listAddresses"},
		{"address", OpGet, "getAddress"},
	}
	for _, c := range cases {
		if got := OperationID(c.table, c.op); got != c.want {
			t.Errorf("OperationID(%q, %q) = %q, want %q", c.table, c.op, got, c.want)
		}
	}
}

func TestParseListValid(t *testing.T) {
	t.Parallel()
	r := mustFake(t, &Options{MaxLimit: 100})
	lq, err := r.parseList(url.Values{
		"title": {"like.*a*", "not.eq.x"},
		"score": {"in.(1,2,\"3,4\")", "is.null"},
		"order": {"score.desc.nullslast,title"},
		"limit": {"10"},
		"count": {"exact"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if lq.Limit != 10 || !lq.Count {
		t.Errorf("limit/count = %d/%v", lq.Limit, lq.Count)
	}
	want := []OrderTerm{{Column: "score", Desc: true, Nulls: NullsLast}, {Column: "title"}, {Column: "id"}}
	if len(lq.Order) != 3 || lq.Order[0] != want[0] || lq.Order[1] != want[1] || lq.Order[2] != want[2] {
		t.Errorf("order = %+v", lq.Order)
	}
	if len(lq.Filters) != 4 {
		t.Fatalf("filters = %+v", lq.Filters)
	}
	// Sorted by column then raw value: score in, score is, title like, title not.eq.
	f := lq.Filters
	if f[0].Op != FilterIn || strings.Join(f[0].Values, "|") != "1|2|3,4" {
		t.Errorf("in filter = %+v", f[0])
	}
	if f[1].Op != FilterIs || f[1].Value != "null" {
		t.Errorf("is filter = %+v", f[1])
	}
	if f[2].Op != FilterLike || f[2].Value != "%a%" {
		t.Errorf("like filter = %+v", f[2])
	}
	if f[3].Op != FilterEq || !f[3].Not || f[3].Value != "x" {
		t.Errorf("not.eq filter = %+v", f[3])
	}
	// Default limit.
	lq, err = r.parseList(url.Values{})
	if err != nil || lq.Limit != DefaultLimit || len(lq.Order) != 1 || lq.Order[0].Column != "id" {
		t.Errorf("defaults: %+v %v", lq, err)
	}
}

func TestParseListErrors(t *testing.T) {
	t.Parallel()
	r := mustFake(t, &Options{MaxLimit: 100})
	cases := []struct {
		name  string
		q     url.Values
		param string
	}{
		{"unknown column", url.Values{"nope": {"eq.1"}}, "nope"},
		{"unselected column", url.Values{"secret": {"eq.1"}}, "secret"},
		{"unknown operator", url.Values{"title": {"regex.x"}}, "title"},
		{"no operator", url.Values{"title": {"x"}}, "title"},
		{"bad is", url.Values{"score": {"is.maybe"}}, "score"},
		{"bad in", url.Values{"score": {"in.1,2"}}, "score"},
		{"unterminated in quote", url.Values{"score": {`in.("1,2)`}}, "score"},
		{"limit zero", url.Values{"limit": {"0"}}, "limit"},
		{"limit text", url.Values{"limit": {"ten"}}, "limit"},
		{"limit above max", url.Values{"limit": {"101"}}, "limit"},
		{"limit twice", url.Values{"limit": {"1", "2"}}, "limit"},
		{"order unknown column", url.Values{"order": {"nope.asc"}}, "order"},
		{"order unselected", url.Values{"order": {"secret"}}, "order"},
		{"order bad modifier", url.Values{"order": {"title.up"}}, "order"},
		{"order twice same column", url.Values{"order": {"title,title.desc"}}, "order"},
		{"order empty", url.Values{"order": {""}}, "order"},
		{"count planned", url.Values{"count": {"planned"}}, "count"},
		{"cursor garbage", url.Values{"cursor": {"abc"}}, "cursor"},
		{"cursor injection", url.Values{"cursor": {"'; drop table items; --.x"}}, "cursor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := r.parseList(c.q)
			p, ok := problem.As(err)
			if !ok || p.Status != 400 {
				t.Fatalf("err = %v, want 400 problem", err)
			}
			if !strings.Contains(p.Detail, `"`+c.param+`"`) {
				t.Errorf("detail %q does not name %q", p.Detail, c.param)
			}
		})
	}
}

func TestInList(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"()":                {},
		"(a)":               {"a"},
		"(a,b)":             {"a", "b"},
		`("a,b",c)`:         {"a,b", "c"},
		`("a\"b",c)`:        {`a"b`, "c"},
		`("(x)")`:           {"(x)"},
		"(,)":               {"", ""},
		`(a"b)`:             {`a"b`},
		`("it's",'x')`:      {"it's", "'x'"},
		`("1);drop table")`: {"1);drop table"},
	}
	for in, want := range cases {
		got, ok := parseInList(in)
		if !ok || strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
			t.Errorf("parseInList(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a", "(a", `("a)`, `("a"b)`} {
		if _, ok := parseInList(bad); ok {
			t.Errorf("parseInList(%q) accepted", bad)
		}
	}
}

func TestCursorRoundTripAndTamper(t *testing.T) {
	t.Parallel()
	r := mustFake(t, &Options{CursorKey: []byte("k1")})
	q := url.Values{"order": {"score.desc"}, "title": {"eq.a"}}
	lq, err := r.parseList(q)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := r.signCursor(lq, []any{"7", nil, "42"})
	if err == nil {
		t.Fatal("wrong arity accepted")
	}
	cur, err = r.signCursor(lq, []any{nil, "42"})
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
	r2 := mustFake(t, &Options{CursorKey: []byte("k2")})
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

func TestKeysetSQL(t *testing.T) {
	t.Parallel()
	r := mustFake(t, nil)
	tr := r.repo.(*tableRepository)
	render := func(order string, after []any) (string, []any) {
		q := url.Values{}
		if order != "" {
			q.Set("order", order)
		}
		lq, err := r.parseList(q)
		if err != nil {
			t.Fatal(err)
		}
		lq.After = after
		var b strings.Builder
		a := &sqlArgs{}
		if err := tr.where(&b, a, lq, true); err != nil {
			t.Fatal(err)
		}
		return b.String(), a.vals
	}
	sql, args := render("", []any{"5"})
	if sql != ` WHERE ("t"."id") > ($1::text::bigint)` && sql != ` WHERE (t."id") > ($1::text::bigint)` {
		t.Errorf("key only: %s", sql)
	}
	if len(args) != 1 || args[0] != "5" {
		t.Errorf("args = %v", args)
	}
	sql, _ = render("title.desc", []any{"b", "5"})
	if !strings.Contains(sql, `(t."title",t."id") < ($1::text::text,$2::text::bigint)`) {
		t.Errorf("same direction not null: %s", sql)
	}
	sql, args = render("score", []any{nil, "5"})
	// NULLs last ascending: after a NULL score only later ids with NULL score.
	if sql != ` WHERE ((t."score" IS NULL AND t."id" > $1::text::bigint))` {
		t.Errorf("null cursor value: %s %v", sql, args)
	}
	sql, _ = render("score.desc", []any{"3", "5"})
	if sql != ` WHERE ((t."score" < $1::text::integer) OR (t."score" = $1::text::integer AND t."id" < $2::text::bigint))` {
		t.Errorf("desc nullable: %s", sql)
	}
	sql, _ = render("score.asc", []any{"3", "5"})
	if sql != ` WHERE (((t."score" > $1::text::integer OR t."score" IS NULL)) OR (t."score" = $1::text::integer AND t."id" > $2::text::bigint))` {
		t.Errorf("asc nullable: %s", sql)
	}
}

func TestValidatorNamesPathsNotValues(t *testing.T) {
	t.Parallel()
	type in struct {
		Title string `json:"title" jsonschema:"the title"`
		Tags  []struct {
			Name string `json:"name"`
		} `json:"tags,omitempty"`
	}
	s := SchemaFor[in]()
	s.Properties["title"].MinLength = jsonschema.Ptr(3)
	s.Properties["title"].Pattern = "^[a-z]+$"
	v, err := newValidator(s)
	if err != nil {
		t.Fatal(err)
	}
	inst, _ := decodeJSON([]byte(`{"title":"SECRETVALUE","extra":1,"tags":[{"name":"ok"},{"name":7}]}`))
	errs := v.check(inst)
	got := map[string]string{}
	for _, e := range errs {
		got[e.Path] = e.Message
		if strings.Contains(e.Message, "SECRET") || strings.Contains(e.Message, "7") {
			t.Errorf("message leaks a value: %q", e.Message)
		}
	}
	for _, p := range []string{"/title", "/extra", "/tags/1/name"} {
		if _, ok := got[p]; !ok {
			t.Errorf("no error at %s; got %v", p, got)
		}
	}
	if got["/title"] != "fails pattern" {
		t.Errorf("/title: %q", got["/title"])
	}
	inst, _ = decodeJSON([]byte(`{}`))
	errs = v.check(inst)
	if len(errs) != 1 || errs[0].Path != "/title" || errs[0].Message != "is required" {
		t.Errorf("missing title: %+v", errs)
	}
	inst, _ = decodeJSON([]byte(`{"title":"abc"}`))
	if errs := v.check(inst); errs != nil {
		t.Errorf("valid: %+v", errs)
	}
}
