package rest

import (
	"net/url"
	"strings"
	"testing"
)

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
