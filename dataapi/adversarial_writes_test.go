package dataapi

import (
	"context"
	"strings"
	"testing"
)

// TestAdversarialWrites: upserts, PUT and PATCH cannot take or move
// another user's rows; rpc reaches only exposed, executable functions;
// odd methods, paths and preferences answer 4xx.
func TestAdversarialWrites(t *testing.T) {
	b := attackBundle(t)
	type p struct {
		m, path, user, body string
		h                   []string
	}
	cols := strings.Repeat("title,", 3000) + "title"
	many := "{" + strings.Repeat(`"title":"x",`, 3000) + `"title":"y"}`
	probes := []p{
		{"POST", "/rpc/pg_sleep", "", `{"seconds":1}`, nil},
		{"GET", "/rpc/pg_read_file?filename=/etc/passwd", alice, "", nil},
		{"POST", "/rpc/private_fn", alice, `{}`, []string{"Content-Profile: pg_catalog"}},
		{"GET", "/things?order=random()", "", "", nil},
		{"GET", "/things?select=id::pg_catalog.text", "", "", nil},
		{"GET", "/things?select=x:id::regproc", "", "", nil},
		{"POST", "/todos?columns=" + cols, alice, `{"title":"a"}`, nil},
		{"POST", "/todos", alice, many, nil},
		{"POST", "/todos?on_conflict=" + cols, alice, `{"title":"a"}`, []string{"Prefer: resolution=merge-duplicates"}},
		{"POST", "/todos?select=id,notes(*)", alice, `{"title":"emb"}`, []string{"Prefer: return=representation"}},
		{"PATCH", "/notes?id=eq.3", alice, `{"v":"x"}`, nil},
		{"POST", "/todos", alice, `{"title":"a"}`, []string{"Prefer: tx=rollback", "Prefer: return=representation"}},
		{"POST", "/todos", alice, `{"title":"a"}`, []string{"Prefer: tx=commit,handling=strict,bogus=1"}},
		{"POST", "/todos", alice, `[{"title":"a"},{"slug":"q"}]`, []string{"Prefer: missing=default"}},
		{"POST", "/todos?on_conflict=slug", alice, `{"slug":"bs","title":"steal"}`, []string{"Prefer: resolution=ignore-duplicates,return=representation"}},
		{"POST", "/todos?on_conflict=slug", alice, `{"slug":"bs","title":"steal"}`, []string{"Prefer: resolution=merge-duplicates,return=representation"}},
		{"POST", "/todos?on_conflict=id", alice, `{"id":200,"title":"steal","owner_id":"` + alice + `"}`, []string{"Prefer: resolution=merge-duplicates,return=representation"}},
		{"PUT", "/todos?id=eq.200", alice, `{"id":200,"title":"steal","owner_id":"` + alice + `"}`, nil},
		{"PATCH", "/todos?id=eq.200", bob, `{"owner_id":"` + alice + `"}`, nil},
		{"PATCH", "/todos?id=eq.100", alice, `{"owner_id":"` + bob + `"}`, nil},
		{"DELETE", "/todos?limit=1&order=id", alice, "", nil},
		{"PATCH", "/todos?limit=1", alice, `{"done":true}`, []string{"Prefer: max-affected=0", "Prefer: handling=strict"}},
		{"POST", "/rpc/add", "", `{"a":1,"b":2,"c":3}`, nil},
		{"POST", "/rpc/add", "", `{"a":1,"b":2}`, []string{"Prefer: params=single-object"}},
		{"POST", "/rpc/add", "", `[{"a":1,"b":2}]`, nil},
		{"POST", "/rpc/echo", "", `{"x":1}`, []string{"Prefer: params=single-object"}},
		{"POST", "/rpc/add", "", `{"a":1,"b":2}`, []string{"Content-Type: text/plain"}},
		{"POST", "/rpc/add", "", `{"a":1,"b":2}`, []string{"Content-Type: application/octet-stream"}},
		{"GET", "/rpc/numbers?n=5&select=" + strings.Repeat("a(", 100) + ")", "", "", nil},
		{"GET", "/rpc/things_over?min=0&order=id;drop", "", "", nil},
		{"GET", "/rpc/things_over?min=0&select=id,things(*)", "", "", nil},
		{"GET", "/rpc/numbers?n=1000000000", "", "", nil},
		{"GET", "/things", "", "", []string{"Accept: text/csv"}},
		{"GET", "/things?select=" + "\"a,b\":id", "", "", []string{"Accept: text/csv"}},
		{"GET", "/things?select=%0a:id", "", "", []string{"Accept: text/csv"}},
		{"GET", "/things?select=\"=cmd|x\":id", "", "", []string{"Accept: text/csv"}},
		{"GET", "/things", "", "", []string{"Prefer: count=exact", "Range: 0-0", "Range-Unit: bytes"}},
		{"OPTIONS", "/things", "", "", nil},
		{"TRACE", "/things", "", "", nil},
		{"GET", "/", "", "", nil},
		{"GET", "/things/1", "", "", nil},
		{"GET", "/../tablegate/x", "", "", nil},
		{"GET", "/%2e%2e/x", "", "", nil},
		{"GET", "/pg_catalog.pg_authid", "", "", nil},
		{"GET", "/tablegate.sessions", alice, "", nil},
		{"GET", "/%22secrets%22", alice, "", nil},
	}
	for i, pr := range probes {
		r := b.do(pr.m, pr.path, pr.user, pr.body, pr.h...)
		body := r.body
		if len(body) > 300 {
			body = body[:300]
		}
		if f := bad(r); f != "" {
			t.Errorf("%d %s %.100s: %d %s (%s)", i, pr.m, pr.path, r.status, body, f)
		}
		t.Logf("%d %s %.100s [%.4s] -> %d %s", i, pr.m, pr.path, pr.user, r.status, body)
	}
	var s string
	b.pool.QueryRow(context.Background(), "select owner_id||':'||title||':'||done||':'||slug from todos where id = 200").Scan(&s)
	if s != bob+":bob todo:false:bs" {
		t.Errorf("bob's todo changed: %s", s)
	}
	b.pool.QueryRow(context.Background(), "select owner_id||':'||title from todos where id = 100").Scan(&s)
	if s != alice+":alice todo" {
		t.Errorf("alice's todo moved: %s", s)
	}
	b.pool.QueryRow(context.Background(), "select string_agg(id||':'||v, ' ' order by id) from notes").Scan(&s)
	if s != "1:an 2:bn 3:bob note on alice todo" {
		t.Errorf("notes changed: %s", s)
	}
	// Prefer: tx=rollback left nothing behind; the rpc stayed in public.
	var n int
	b.pool.QueryRow(context.Background(), "select count(*) from todos where title = 'a' and id = 4").Scan(&n)
	if n != 0 {
		t.Errorf("tx=rollback committed")
	}
}
