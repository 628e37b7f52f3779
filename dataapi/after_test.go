package dataapi

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tablegate/tablegate/authctx"
	"github.com/tablegate/tablegate/problem"
	"github.com/tablegate/tablegate/rest"
)

// TestDeclaredAfterHooks: a declared table's After hooks run through the
// data API as on the native routes — AfterCreateFunc and AfterUpdateFunc
// on every written row (its declared columns) inside the write's
// transaction, their outputs answered as the rows; AfterListFunc on the
// page read; an error from any rolls the whole write back, events
// included; the caller's row-level security bounds the rows they see.
func TestDeclaredAfterHooks(t *testing.T) {
	b := newBundle(t)
	b.exec(`select tablegate.enable_events('public.todos')`)
	var created, updated []rest.Row
	seenInTx := 0
	res, err := rest.NewResource(context.Background(), b.db, "todos", &rest.Config{
		Select:     []string{"id", "title", "done", "priority"},
		Operations: rest.CRUD(),
		Caller:     testCaller,
		Hooks: rest.Hooks{
			AfterCreateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				created = append(created, row)
				var n int
				if err := c.DB.QueryRow(c, "select count(*) from todos where id = $1", row["id"]).Scan(&n); err != nil {
					return nil, err
				}
				seenInTx += n
				if row["title"] == "reject" {
					return nil, problem.New(problem.KindUnprocessable, "rejected after the insert")
				}
				return map[string]any{"id": row["id"], "title": row["title"], "via": "after-create"}, nil
			},
			AfterUpdateFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
				updated = append(updated, row)
				if row["title"] == "stop" {
					return nil, problem.New(problem.KindConflict, "stopped after the update")
				}
				return map[string]any{"id": row["id"], "done": row["done"], "via": "after-update"}, nil
			},
			AfterListFunc: func(c *rest.Ctx, page *rest.Page) (any, error) {
				kept := page.Items[:0]
				for _, it := range page.Items {
					if it["title"] == "hidden" {
						continue
					}
					delete(it, "priority")
					kept = append(kept, it)
				}
				page.Items = kept
				return page, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"todos": {Resource: res, Allow: []authctx.Allow{authctx.AllowUser}}}})
	events := func() int { return b.count("select count(*) from tablegate.events") }

	// Insert: the hook runs per row, in the transaction (it sees the row),
	// with the declared columns only; its outputs are the representation.
	r := b.do("POST", "/todos?select=title", alice, `[{"title":"one"},{"title":"two"}]`, "Prefer: return=representation")
	if r.status != 201 || !sameJSON(t, r.body, `[{"id":1,"title":"one","via":"after-create"},{"id":2,"title":"two","via":"after-create"}]`) {
		t.Errorf("insert: %d %s", r.status, r.body)
	}
	if len(created) != 2 || seenInTx != 2 || created[0]["owner_id"] != nil || created[0]["priority"] == nil {
		t.Errorf("AfterCreateFunc saw %v (rows visible in its transaction: %d)", created, seenInTx)
	}
	if n := events(); n != 2 {
		t.Errorf("events after two inserts: %d", n)
	}
	// An error from the hook on any row rolls back every row and event.
	r = b.do("POST", "/todos", alice, `[{"title":"fine"},{"title":"reject"}]`)
	if r.status != 422 || !strings.Contains(r.body, "rejected after the insert") || b.count("select count(*) from todos where title = 'fine'") != 0 || events() != 2 {
		t.Errorf("hook refusal: %d %s", r.status, r.body)
	}
	// return=minimal still runs the hook; tx=rollback runs it and keeps nothing.
	created = nil
	r = b.do("POST", "/todos", alice, `{"title":"three"}`)
	if r.status != 201 || r.body != "" || len(created) != 1 {
		t.Errorf("minimal: %d %s (hook ran %d)", r.status, r.body, len(created))
	}
	r = b.do("POST", "/todos", alice, `{"title":"gone"}`, "Prefer: return=representation, tx=rollback")
	if r.status != 201 || !strings.Contains(r.body, `"via":"after-create"`) || b.count("select count(*) from todos where title = 'gone'") != 0 {
		t.Errorf("tx=rollback: %d %s", r.status, r.body)
	}
	// headers-only takes Location from the row written, not the output.
	r = b.do("POST", "/todos", alice, `{"title":"four"}`, "Prefer: return=headers-only")
	if r.status != 201 || !strings.HasPrefix(r.header.Get("Location"), "/todos?id=eq.") {
		t.Errorf("headers-only: %d %v", r.status, r.header)
	}
	// .single() answers the one output.
	r = b.do("POST", "/todos", alice, `{"title":"five"}`, "Prefer: return=representation", "Accept: application/vnd.pgrst.object+json")
	if m, _ := r.json(t).(map[string]any); r.status != 201 || m["title"] != "five" || m["via"] != "after-create" {
		t.Errorf("single insert: %d %s", r.status, r.body)
	}
	// Upsert is a create: the hook runs.
	r = b.do("POST", "/todos?on_conflict=id", alice, `{"id":1,"title":"one!"}`, "Prefer: resolution=merge-duplicates, return=representation")
	if r.status != 201 || !sameJSON(t, r.body, `[{"id":1,"title":"one!","via":"after-create"}]`) {
		t.Errorf("upsert: %d %s", r.status, r.body)
	}
	// bob's rows exist; alice's filterless PATCH reaches only hers.
	if r := b.do("POST", "/todos", bob, `[{"title":"bob1"},{"title":"hidden"}]`); r.status != 201 {
		t.Fatalf("bob's insert: %d %s", r.status, r.body)
	}
	aliceRows := b.count("select count(*) from todos where owner_id = '" + alice + "'")
	updated = nil
	r = b.do("PATCH", "/todos", alice, `{"done":true}`, "Prefer: return=representation")
	var outs []map[string]any
	if err := json.Unmarshal([]byte(r.body), &outs); r.status != 200 || err != nil || len(outs) != aliceRows || len(updated) != aliceRows {
		t.Fatalf("update: %d %s (hook ran %d, alice has %d rows)", r.status, r.body, len(updated), aliceRows)
	}
	for _, o := range outs {
		if o["via"] != "after-update" || o["done"] != true {
			t.Errorf("update output %v", o)
		}
	}
	if n := b.count("select count(*) from todos where done and owner_id = '" + bob + "'"); n != 0 {
		t.Errorf("alice's update reached %d of bob's rows", n)
	}
	// An error from the update hook rolls the update back.
	r = b.do("PATCH", "/todos?title=eq.three", alice, `{"title":"stop","done":false}`)
	if r.status != 409 || !strings.Contains(r.body, "stopped after the update") || b.count("select count(*) from todos where title = 'three' and done") != 1 {
		t.Errorf("update hook refusal: %d %s", r.status, r.body)
	}
	// The list hook shapes what is read: priority dropped, "hidden" rows
	// left out (bob's), the caller's RLS first.
	r = b.do("GET", "/todos?select=title,priority&order=title", bob, "")
	if r.status != 200 || !sameJSON(t, r.body, `[{"title":"bob1"}]`) || r.header.Get("Content-Range") != "0-0/*" {
		t.Errorf("list through AfterListFunc: %d %s %v", r.status, r.body, r.header.Get("Content-Range"))
	}
	r = b.do("GET", "/todos?select=title&title=eq.hidden", bob, "", "Accept: application/vnd.pgrst.object+json")
	if r.status != 406 || errCode(t, r) != "PGRST116" {
		t.Errorf("single of a row the hook hides: %d %s", r.status, r.body)
	}
	// Anonymous and invalid callers stay outside the guard.
	if r := b.do("GET", "/todos", "", ""); r.status != 401 {
		t.Errorf("anon: %d %s", r.status, r.body)
	}
	if r := b.do("POST", "/todos", "invalid", `{"title":"x"}`); r.status != 401 {
		t.Errorf("invalid token: %d %s", r.status, r.body)
	}
	// An anonymous sign-in is not a user to this guard.
	anonymous := "anonymous:33333333-3333-3333-3333-333333333333"
	for _, m := range []string{"GET", "POST", "PATCH"} {
		if r := b.do(m, "/todos", anonymous, `{"title":"x"}`); (r.status != 401 && r.status != 403) || errCode(t, r) != "PGRST302" {
			t.Errorf("%s by an anonymous sign-in: %d %s", m, r.status, r.body)
		}
	}
}

// TestDeclaredAfterGet: a table serving get (not list) runs AfterGetFunc
// on each row a read answers.
func TestDeclaredAfterGet(t *testing.T) {
	b := newBundle(t)
	res, err := rest.NewResource(context.Background(), b.db, "things", &rest.Config{
		Select:     []string{"id", "name", "score"},
		Operations: []rest.Operation{rest.OpGet},
		Caller:     testCaller,
		Hooks: rest.Hooks{AfterGetFunc: func(c *rest.Ctx, row rest.Row) (any, error) {
			if row["name"] == "date" {
				return nil, problem.New(problem.KindForbidden, "not this one")
			}
			return map[string]any{"name": strings.ToUpper(row["name"].(string))}, nil
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.serve(&Config{Tables: map[string]*Table{"things": {Resource: res, Allow: []authctx.Allow{authctx.AllowAnon, authctx.AllowUser}}}})
	r := b.do("GET", "/things?select=name&id=eq.2", "", "", "Accept: application/vnd.pgrst.object+json")
	if r.status != 200 || r.body != `{"name":"BANANA"}` {
		t.Errorf("get: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/things?select=name&id=lt.3&order=id", alice, "")
	if r.status != 200 || !sameJSON(t, r.body, `[{"name":"APPLE"},{"name":"BANANA"}]`) {
		t.Errorf("rows: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/things?select=name", alice, "")
	if r.status != 403 || !strings.Contains(r.body, "not this one") {
		t.Errorf("hook refusal on a read: %d %s", r.status, r.body)
	}
}

func TestPageItems(t *testing.T) {
	rows := []rest.Row{{"a": 1}}
	for _, tc := range []struct {
		in   any
		want string
	}{
		{&rest.Page{Items: rows}, `[{"a":1}]`},
		{rest.Page{Items: rows}, `[{"a":1}]`},
		{[]map[string]int{{"b": 2}}, `[{"b":2}]`},
		{map[string]any{"items": []int{3}, "next": "x"}, `[3]`},
		{"text", ``},
		{map[string]any{"rows": []int{3}}, ``},
	} {
		got, err := pageItems(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("pageItems(%v) = %v, want an error", tc.in, got)
			}
			continue
		}
		raw, _ := json.Marshal(got)
		var x, y any
		_ = json.Unmarshal(raw, &x)
		_ = json.Unmarshal([]byte(tc.want), &y)
		if err != nil || !reflect.DeepEqual(x, y) {
			t.Errorf("pageItems(%v) = %s, %v; want %s", tc.in, raw, err, tc.want)
		}
	}
}
