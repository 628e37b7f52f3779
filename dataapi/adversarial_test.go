package dataapi

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

const attackSQL = `
create table secrets (id int primary key, owner_id uuid not null, v text);
alter table secrets enable row level security;
grant select, insert, update, delete on secrets to authenticated;
create policy secrets_own on secrets for all to authenticated using (owner_id = auth.uid()) with check (owner_id = auth.uid());
create table nogrant (id int primary key, v text);
alter table nogrant enable row level security;
create policy ng on nogrant for select using (true);
insert into nogrant values (1,'hidden');
create function private_fn() returns int language sql stable as 'select 42';
revoke execute on function private_fn() from public, anon, authenticated;
create table notes (id int primary key, todo_id bigint references todos(id), owner_id uuid not null, v text);
alter table notes enable row level security;
grant select on notes to authenticated;
create policy notes_own on notes for select to authenticated using (owner_id = auth.uid());
`

func attackBundle(t *testing.T) *bundle {
	b := newBundle(t)
	if _, err := b.pool.Exec(context.Background(), attackSQL); err != nil {
		t.Fatal(err)
	}
	if _, err := b.pool.Exec(context.Background(), `
insert into secrets values (1,'`+alice+`','a1'),(2,'`+bob+`','b1'),(3,'`+bob+`','b2');
insert into todos (id, owner_id, title, slug) values (100,'`+alice+`','alice todo','as'),(200,'`+bob+`','bob todo','bs');
insert into notes values (1,100,'`+alice+`','an'),(2,200,'`+bob+`','bn'),(3,100,'`+bob+`','bob note on alice todo');`); err != nil {
		t.Fatal(err)
	}
	return b.serve(&Config{AllowWithoutRLS: true, MaxRows: 50})
}

// bad flags a 5xx or an SQL-text leak.
func bad(r resp) string {
	if r.status >= 500 {
		return "5xx"
	}
	lb := strings.ToLower(r.body)
	for _, s := range []string{"set_config", "$1", "json_agg", "coalesce(", "from public.", "select _t", "select coalesce"} {
		if strings.Contains(lb, s) {
			return "sql text: " + s
		}
	}
	return ""
}

// TestAdversarialProbe sends hostile reads, writes, preferences and
// selects: none answers a 5xx or shows SQL text, and bob's rows stay as
// they were.
func TestAdversarialProbe(t *testing.T) {
	b := attackBundle(t)
	q := url.QueryEscape
	type p struct {
		m, path, user, body string
		h                   []string
	}
	probes := []p{
		{"GET", "/secrets", alice, "", nil},
		{"GET", "/secrets?owner_id=eq." + bob, alice, "", nil},
		{"GET", "/secrets?select=id", alice, "", []string{"Prefer: count=exact"}},
		{"HEAD", "/secrets", alice, "", []string{"Prefer: count=exact"}},
		{"GET", "/secrets?limit=1", alice, "", []string{"Prefer: count=planned"}},
		{"GET", "/secrets?limit=1", alice, "", []string{"Prefer: count=estimated"}},
		{"GET", "/todos?select=*,notes(*)", alice, "", nil},
		{"GET", "/notes?select=*,todos(*)", bob, "", nil},
		{"GET", "/todos?select=*,notes!inner(*)", alice, "", []string{"Prefer: count=exact"}},
		{"PATCH", "/secrets?id=eq.2", alice, `{"v":"pwn"}`, []string{"Prefer: return=representation"}},
		{"DELETE", "/secrets?id=eq.2", alice, "", []string{"Prefer: return=representation"}},
		{"POST", "/secrets?on_conflict=id", alice, `{"id":2,"owner_id":"` + alice + `","v":"x"}`, []string{"Prefer: resolution=merge-duplicates,return=representation"}},
		{"POST", "/secrets?on_conflict=id", alice, `{"id":2,"owner_id":"` + bob + `","v":"x"}`, []string{"Prefer: resolution=merge-duplicates,return=representation"}},
		{"POST", "/secrets", alice, `{"id":9,"owner_id":"` + bob + `","v":"x"}`, nil},
		{"POST", "/rpc/private_fn", alice, `{}`, nil},
		{"GET", "/rpc/private_fn", "", "", nil},
		{"GET", "/secrets", alice, "", []string{"Accept-Profile: tablegate"}},
		{"GET", "/users", alice, "", []string{"Accept-Profile: auth"}},
		{"GET", "/pg_authid", alice, "", []string{"Accept-Profile: pg_catalog"}},
		{"POST", "/x", alice, `{}`, []string{"Content-Profile: pg_catalog"}},
		{"GET", "/nogrant", alice, "", nil},
		{"GET", "/nogrant", "", "", nil},
		{"GET", "/todos?select=*,nogrant(*)", alice, "", nil},
		{"GET", "/secrets", "", "", nil},
		{"POST", "/todos", "", `{"title":"anon"}`, nil},
		{"DELETE", "/todos", "", "", nil},
		{"PATCH", "/todos", alice, `{"done":true}`, nil},
		{"DELETE", "/todos", alice, "", nil},
		{"GET", "/things?select=" + q(`id";drop table things;--`), "", "", nil},
		{"GET", "/things?select=" + q(`"id""x"`), "", "", nil},
		{"GET", "/things?select=" + q(`id)--`), "", "", nil},
		{"GET", "/things?select=" + q(`id::text);drop table things;--`), "", "", nil},
		{"GET", "/things?select=" + q(`id::regclass`), "", "", nil},
		{"GET", "/things?select=" + q(`data->'a');--`), "", "", nil},
		{"GET", "/things?select=" + q(`data->>'x'' or 1=1--`), "", "", nil},
		{"GET", "/things?select=" + q(`data->0->>1`), "", "", nil},
		{"GET", "/things?order=" + q(`id;drop table things`), "", "", nil},
		{"GET", "/things?order=" + q(`(select 1)`), "", "", nil},
		{"GET", "/things?order=" + q(`"id"";--".desc`), "", "", nil},
		{"GET", "/things?" + q(`id";--`) + "=eq.1", "", "", nil},
		{"GET", "/things?name=eq." + q(`'; drop table things;--`), "", "", nil},
		{"GET", "/things?name=in.(" + q(`"a\"b",'c',"d)"`) + ")", "", "", nil},
		{"GET", "/things?name=in.(" + q(`"unterminated`) + ")", "", "", nil},
		{"GET", "/things?id=eq.notanint", "", "", nil},
		{"GET", "/things?id=gt.1e999", "", "", nil},
		{"GET", "/things?data->>a::regclass=eq.x", "", "", nil},
		{"GET", "/things?id::text=eq.1", "", "", nil},
		{"GET", "/things?name=match." + q(`(`), "", "", nil},
		{"GET", "/things?name=fts(" + q(`english');drop`) + ").x", "", "", nil},
		{"GET", "/things?name=fts(nosuchlang).x", "", "", nil},
		{"GET", "/things?name=is.banana", "", "", nil},
		{"GET", "/things?tags=cs." + q(`{a,`), "", "", nil},
		{"GET", "/things?span=adj." + q(`[1,`), "", "", nil},
		{"GET", "/things?limit=-1", "", "", nil},
		{"GET", "/things?offset=-1", "", "", nil},
		{"GET", "/things?limit=99999999999999999999", "", "", nil},
		{"GET", "/things?offset=9223372036854775807", "", "", nil},
		{"GET", "/things?limit=9223372036854775807&offset=9223372036854775807", "", "", nil},
		{"GET", "/things", "", "", []string{"Range: 0-999999999"}},
		{"GET", "/things", "", "", []string{"Range: 5-2"}},
		{"GET", "/things", "", "", []string{"Range: -5"}},
		{"GET", "/things", "", "", []string{"Range: 9223372036854775807-"}},
		{"GET", "/rpc/numbers?n=100000", "", "", nil},
		{"GET", "/rpc/numbers?n=100000&limit=99999999", "", "", nil},
		{"GET", "/rpc/add?a=1&b=x", "", "", nil},
		{"GET", "/rpc/add?a=1&b=2&" + q(`a";--`) + "=1", "", "", nil},
		{"POST", "/rpc/echo", "", `not json`, nil},
		{"POST", "/rpc/fail_with", "", `{"msg":"boom select * from x"}`, nil},
		{"POST", "/todos", alice, `not json`, nil},
		{"POST", "/todos", alice, `[{"title":"a"},{"slug":"b"}]`, nil},
		{"POST", "/todos", alice, `[{"title":"a"},1]`, nil},
		{"POST", "/todos", alice, `{"title":"a","nosuch":1}`, nil},
		{"POST", "/todos", alice, `{"title":"a",";drop":1}`, nil},
		{"POST", "/todos?columns=" + q(`title,"x";--`), alice, `{"title":"a"}`, nil},
		{"POST", "/todos?on_conflict=" + q(`slug);drop table todos;--`), alice, `{"title":"a"}`, []string{"Prefer: resolution=merge-duplicates"}},
		{"POST", "/todos?on_conflict=title", alice, `{"title":"a"}`, []string{"Prefer: resolution=merge-duplicates"}},
		{"POST", "/todos", alice, `{"title":"a"}`, []string{"Content-Type: text/xml"}},
		{"POST", "/todos", alice, `title=a`, []string{"Content-Type: application/x-www-form-urlencoded"}},
		{"POST", "/todos", alice, "title\na", []string{"Content-Type: text/csv"}},
		{"POST", "/todos", alice, `{"title":null}`, nil},
		{"POST", "/todos", alice, `{"id":"x","title":"a"}`, nil},
		{"POST", "/todos", alice, `{"title":{"a":1}}`, nil},
		{"PATCH", "/todos?id=eq.100", alice, `[]`, nil},
		{"PATCH", "/todos?id=eq.100", alice, `{}`, nil},
		{"GET", "/things?select=id,things(*)", "", "", nil},
		{"GET", "/things?select=count()", "", "", nil},
		{"GET", "/things?select=id.sum()", "", "", nil},
		{"GET", "/nosuch", "", "", nil},
		{"GET", "/things?select=nosuch", "", "", nil},
		{"GET", "/things", "invalid", "", nil},
		{"GET", "/things", "not-a-uuid", "", nil},
		{"GET", "/todos", "not-a-uuid", "", nil},
		{"GET", "/things?and=(id.eq.1", "", "", nil},
		{"GET", "/things?or=(id.eq.1,or(id.eq.2,and(id.eq.3)))", "", "", nil},
		{"GET", "/things?order=id.sideways", "", "", nil},
		{"GET", "/things", "", "", []string{"Accept: application/xml"}},
		{"GET", "/things", "", "", []string{"Prefer: count=bogus"}},
		{"GET", "/things", "", "", []string{"Accept: application/vnd.pgrst.object+json"}},
		{"GET", "/things?select=" + q(`*,x:things!fk(*)`), "", "", nil},
		{"GET", "/things?select=" + strings.Repeat("id,", 5000) + "id", "", "", nil},
	}
	for i, pr := range probes {
		r := b.do(pr.m, pr.path, pr.user, pr.body, pr.h...)
		body := r.body
		if len(body) > 300 {
			body = body[:300]
		}
		flag := bad(r)
		if flag != "" {
			t.Errorf("%d %s %s: %d %s (%s)", i, pr.m, pr.path[:min(len(pr.path), 120)], r.status, body, flag)
		}
		t.Logf("%d %s %s [%s] -> %d %s %s", i, pr.m, pr.path[:min(len(pr.path), 120)], pr.user[:min(4, len(pr.user))], r.status, body, flag)
	}
	// Nothing of bob's was read, changed or removed by alice or anon.
	var s string
	b.pool.QueryRow(context.Background(), "select string_agg(id||':'||v, ' ' order by id) from secrets").Scan(&s)
	if s != "1:a1 2:b1 3:b2" {
		t.Errorf("secrets changed: %s", s)
	}
	b.pool.QueryRow(context.Background(), "select title||':'||done from todos where id = 200").Scan(&s)
	if s != "bob todo:false" {
		t.Errorf("bob's todo changed: %s", s)
	}
}

// TestAdversarialRLS: another user's rows stay out of reads, counts and
// embeds.
func TestAdversarialRLS(t *testing.T) {
	b := attackBundle(t)
	if r := b.do("GET", "/secrets?select=id", alice, "", "Prefer: count=exact"); r.body != `[{"id":1}]` || r.header.Get("Content-Range") != "0-0/1" {
		t.Errorf("alice count: %s %q", r.body, r.header.Get("Content-Range"))
	}
	if r := b.do("HEAD", "/secrets", alice, "", "Prefer: count=exact"); r.header.Get("Content-Range") != "0-0/1" {
		t.Errorf("alice HEAD count: %q", r.header.Get("Content-Range"))
	}
	if r := b.do("GET", "/secrets?owner_id=eq."+bob, alice, "", "Prefer: count=exact"); r.body != `[]` || r.header.Get("Content-Range") != "*/0" {
		t.Errorf("filter on bob: %s %q", r.body, r.header.Get("Content-Range"))
	}
	// bob's note on alice's todo: the to-one embed is null, !inner drops it.
	if r := b.do("GET", "/notes?select=id,todos(id,title)&id=eq.3", bob, ""); r.body != `[{"id":3,"todos":null}]` {
		t.Errorf("embed of alice's todo: %s", r.body)
	}
	if r := b.do("GET", "/notes?select=id,todos!inner(id)", bob, "", "Prefer: count=exact"); r.body != `[{"id":2,"todos":{"id":200}}]` || r.header.Get("Content-Range") != "0-0/1" {
		t.Errorf("inner embed count: %s %q", r.body, r.header.Get("Content-Range"))
	}
	if r := b.do("GET", "/todos?select=id,notes(id)", alice, ""); r.body != `[{"id":100,"notes":[{"id":1}]}]` {
		t.Errorf("to-many embed shows bob's note: %s", r.body)
	}
	for _, h := range []string{"tablegate", "auth", "pg_catalog", "information_schema"} {
		if r := b.do("GET", "/secrets", alice, "", "Accept-Profile: "+h); r.status != 406 {
			t.Errorf("Accept-Profile %s: %d", h, r.status)
		}
		if r := b.do("POST", "/secrets", alice, `{}`, "Content-Profile: "+h); r.status != 406 {
			t.Errorf("Content-Profile %s: %d", h, r.status)
		}
	}
}

// TestAdversarialBounds: nesting, JSON paths and select width are refused
// with a 400 before Postgres sees them (they were a 500 from 54001/54011,
// and or=() nesting was quadratic parse work).
func TestAdversarialBounds(t *testing.T) {
	b := attackBundle(t)
	deep := strings.Repeat("or(", 50000) + "id.eq.1" + strings.Repeat(")", 50000)
	cases := []string{
		"/things?select=id&or=(" + deep + ")",
		"/things?select=id&and=(" + strings.Repeat("not.and(", 40) + "id.eq.1" + strings.Repeat(")", 40) + ")",
		"/things?select=" + strings.Repeat("a(", 50000) + "id" + strings.Repeat(")", 50000),
		"/things?select=data" + strings.Repeat("->a", 20000),
		"/things?data" + strings.Repeat("->a", 20000) + "=eq.1",
		"/things?order=data" + strings.Repeat("->a", 20000),
		"/things?select=" + strings.Repeat("id,", 5000) + "id",
	}
	for _, c := range cases {
		st := time.Now()
		r := b.do("GET", c, "", "")
		if r.status != 400 || !strings.Contains(r.body, "PGRST100") {
			t.Errorf("%.60s: %d %.200s", c, r.status, r.body)
		}
		if d := time.Since(st); d > 2*time.Second {
			t.Errorf("%.60s took %v", c, d)
		}
	}
	// Nesting within the bound still works.
	ok := strings.Repeat("or(", 20) + "id.eq.1" + strings.Repeat(")", 20)
	if r := b.do("GET", "/things?select=id&or=("+ok+")", "", ""); r.body != `[{"id":1}]` {
		t.Errorf("depth 20: %d %s", r.status, r.body)
	}
}

// TestAdversarialBurst: many concurrent requests of one caller all answer
// (queued in the caller's share, never a 5xx).
func TestAdversarialBurst(t *testing.T) {
	b := attackBundle(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := b.do("GET", "/secrets?select=id", alice, "")
			mu.Lock()
			counts[r.status]++
			if r.status == 200 && r.body != `[{"id":1}]` {
				t.Errorf("burst body %s", r.body)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for st := range counts {
		if st != 200 && st != 429 && st != 503 {
			t.Errorf("burst statuses %v", counts)
		}
	}
}
